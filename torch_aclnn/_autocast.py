"""Autocast policy of the forward operators: the same as aten's op of the same name.

Under ``torch.autocast``, aten runs smooth_l1_loss (CPU and CUDA) and
max_unpool3d (CPU) in float32: float16/bfloat16 inputs are cast up, and the
result is float32. upsample_nearest3d / _upsample_nearest_exact3d and elu have
no autocast rule (they run in the input's dtype); neither do the torch_aclnn
operators then. Registering the same rules here keeps ``torch_aclnn.patch()``
and the torch_aclnn.nn modules drop-in under autocast (tests/test_patch.py
compares the dtypes and values with torch's).
"""
from __future__ import annotations

import torch

# (operator, device type) -> cast floating inputs (but float64) to float32.
FP32_RULES = (
    ("smooth_l1_loss", "cpu"),
    ("smooth_l1_loss", "cuda"),
    ("max_unpool3d", "cpu"),
)


def register() -> None:
    if not hasattr(torch.library, "register_autocast"):  # torch < 2.5: no rule, inputs keep their dtype
        return
    for op, device in FP32_RULES:
        if not hasattr(torch.ops.torch_aclnn, op):
            continue
        if not torch._C._is_autocast_available(device):
            continue
        torch.library.register_autocast(f"torch_aclnn::{op}", device, torch.float32)
