"""Autocast policy of the forward operators: the same as aten's op of the same name.

Under ``torch.autocast``, aten runs smooth_l1_loss (CPU and CUDA),
max_unpool3d and adaptive_avg_pool3d (CPU) and upsample_nearest3d /
_upsample_nearest_exact3d (CUDA) in float32: float16/bfloat16 inputs are cast up, and the result is float32.
elu, and the others on the other device, have no autocast rule (they run in
the input's dtype); neither do the torch_aclnn operators then. The rules are
each family's entry in torch_aclnn/_registry.py; tests/test_nn.py checks
that they name exactly the (operator, device) pairs whose aten counterpart
has an autocast kernel. Registering the same rules here keeps ``torch_aclnn.patch()``
and the torch_aclnn.nn modules drop-in under autocast (tests/test_patch.py
compares the dtypes and values with torch's).
"""
from __future__ import annotations

import torch

from ._registry import FAMILIES
from ._torch_api import autocast_available

# (operator, device type) -> cast floating inputs (but float64) to float32.
FP32_RULES = tuple(rule for f in FAMILIES for rule in f.autocast_fp32)

# Our operator -> the aten operator whose autocast rule it follows.
ATEN_COUNTERPART = {op: aten for f in FAMILIES for op, aten in f.aten.items()}


def register() -> None:
    if not hasattr(torch.library, "register_autocast"):  # torch < 2.5: no rule, inputs keep their dtype
        return
    for op, device in FP32_RULES:
        if not hasattr(torch.ops.torch_aclnn, op):
            continue
        if not autocast_available(device):
            continue
        torch.library.register_autocast(f"torch_aclnn::{op}", device, torch.float32)
