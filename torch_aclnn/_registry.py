"""The operator families: the one list the Python side is driven by.

A family is one stem shared by every layer: csrc/contracts/<stem>.h,
csrc/{cpu,cuda,autograd}/<stem>.* (kernels, backward formulas),
torch_aclnn/ops/<stem>.py (Python API, forward-mode AD and vmap),
torch_aclnn/npu/<stem>.py (NPU glue), torch_aclnn/testing/<stem>.py (OpInfos)
and tests/test_<stem>.py. Its entry here names its operators and
the autocast rule of their aten counterparts; the package imports the
family modules (ops, npu, testing) from this list, registers the autocast
rules, probes the build and lists the benchmarked operators from it.
Adding a family: docs/adding-an-op.md.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Dict, Tuple


@dataclass(frozen=True)
class Family:
    stem: str
    # The functional overloads of torch.ops.torch_aclnn this family defines
    # (each backward has a .grad_input out= overload too).
    operators: Tuple[str, ...]
    # Operator -> the aten operator whose autocast rule it follows.
    aten: Dict[str, str] = field(default_factory=dict)
    # (operator, device type) pairs that aten runs in float32 under autocast
    # (floating inputs but float64 are cast up); the rest keep the input's dtype.
    autocast_fp32: Tuple[Tuple[str, str], ...] = ()


FAMILIES = (
    Family("upsample",
           ("upsample_nearest3d", "upsample_nearest3d_backward",
            "upsample_nearest_exact3d", "upsample_nearest_exact3d_backward"),
           aten={"upsample_nearest3d": "aten::upsample_nearest3d",
                 "upsample_nearest_exact3d": "aten::_upsample_nearest_exact3d"},
           autocast_fp32=(("upsample_nearest3d", "cuda"), ("upsample_nearest_exact3d", "cuda"))),
    Family("elu", ("elu", "elu_backward"), aten={"elu": "aten::elu"}),
    Family("smooth_l1", ("smooth_l1_loss", "smooth_l1_loss_backward"),
           aten={"smooth_l1_loss": "aten::smooth_l1_loss"},
           autocast_fp32=(("smooth_l1_loss", "cpu"), ("smooth_l1_loss", "cuda"))),
    Family("max_unpool", ("max_unpool3d", "max_unpool3d_backward"),
           aten={"max_unpool3d": "aten::max_unpool3d"},
           autocast_fp32=(("max_unpool3d", "cpu"),)),
    Family("max_pool", ("max_pool3d_with_indices", "max_pool3d_with_indices_backward"),
           aten={"max_pool3d_with_indices": "aten::max_pool3d_with_indices"}),
    Family("upsample_trilinear", ("upsample_trilinear3d", "upsample_trilinear3d_backward"),
           aten={"upsample_trilinear3d": "aten::upsample_trilinear3d"},
           autocast_fp32=(("upsample_trilinear3d", "cuda"),)),
    Family("leaky_relu", ("leaky_relu", "leaky_relu_backward"), aten={"leaky_relu": "aten::leaky_relu"}),
    Family("avg_pool", ("avg_pool3d", "avg_pool3d_backward"), aten={"avg_pool3d": "aten::avg_pool3d"},
           autocast_fp32=(("avg_pool3d", "cpu"),)),
    Family("adaptive_avg_pool", ("adaptive_avg_pool3d", "adaptive_avg_pool3d_backward"),
           aten={"adaptive_avg_pool3d": "aten::adaptive_avg_pool3d"},
           autocast_fp32=(("adaptive_avg_pool3d", "cpu"),)),
)

OPERATORS = tuple(op for f in FAMILIES for op in f.operators)


def import_families(package: str) -> list:
    """Imports ``<package>.<stem>`` for every family (ops, npu or testing), in order."""
    return [importlib.import_module(f"{package}.{f.stem}") for f in FAMILIES]


if __name__ == "__main__":
    # `python torch_aclnn/_registry.py`: every family's test file, one a line, for the
    # shell scripts' per-family steps (.ci/gpu-check, .ci/compat). Run as a file, this
    # imports nothing but the standard library (no torch, no build needed).
    print("\n".join(f"tests/test_{f.stem}.py" for f in FAMILIES))
