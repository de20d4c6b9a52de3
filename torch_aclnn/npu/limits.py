"""Device limits of the Ascend kernels: the one table the NPU glue consults.

A *device limit* (docs/spec.md, Conventions: "Device limit") is a
constraint of the NPU kernel, not of the operator: CPU and CUDA have no such
limit, so the NPU path must still return the spec's answer. Each row says how
the glue handles an input beyond it:

  split  a per-call limit that grows with N*C (the number of independent
         (n, c) planes): the call is split along N*C into calls that fit.
  cpu    beyond what splitting can fix: the call is computed by
         torch_aclnn's own CPU kernel on CPU copies and copied back, with a
         one-time DeviceLimitWarning naming the row.

For ``split`` rows ``measure`` is the quantity for ONE (n, c) plane and the
limit holds for a call of k planes when ``k * measure <= max``; for ``cpu``
rows ``measure`` is the quantity of the whole call and must be ``<= max``.
``measure`` receives the call's Geometry (see the family glue modules).

Not in the table because it is handled the same way everywhere: the aclnn
kernels do not support empty tensors (docs of every operator below; the
upsample forwards even reject C == 0 with 161002), so an empty input returns
its (empty or all-zero) result without any device call.

Tests lower ``max`` with ``monkeypatch.setattr(limits.row(op, key), "max", n)``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import torch

SPLIT, CPU = "split", "cpu"

# Sources, cited by the rows (public Ascend repositories).
_UPSAMPLE_BWD_DOC = ("ops-cv image/upsample_nearest3d_grad/docs/aclnnUpsampleNearest3dBackward_en.md "
                     "'Constraints' (docs/spec.md §1 device limits)")
_UPSAMPLE_FWD_DOC = "ops-cv image/upsample_nearest3d/docs/aclnnUpsampleNearest3d_en.md, parameter table"
_EXACT_BWD_SRC = "ops-cv image/upsample_nearest_exact3d_grad/op_host/op_api/aclnn_upsample_nearest_exact3d_backward.cpp"
_EXACT_FWD_SRC = "ops-cv image/upsample_nearest_exact3d/op_host/op_api/aclnn_upsample_nearest_exact3d.cpp"
_ELU_SRC = "ops-nn activation/elu/op_api/aclnn_elu.cpp"
_ELU_BWD_SRC = "ops-nn activation/elu_grad_v2/op_api/aclnn_elu_backward.cpp"
_LEAKY_SRC = "ops-nn activation/leaky_relu/op_api/aclnn_leaky_relu.cpp"
_LEAKY_BWD_DOC = "ops-nn activation/leaky_relu_grad/docs/aclnnLeakyReluBackward.md"
_SL1_BWD_SRC = "ops-nn loss/smooth_l1_loss_grad_v2/op_api/aclnn_smooth_l1_loss_backward.cpp"
_SL1_SRC = "ops-nn loss/smooth_l1_loss_v2/op_api/aclnn_smooth_l1_loss.cpp"
_UNPOOL_DOC = "ops-nn index/scatter_elements/docs/aclnnMaxUnpool3d.md"
_POOL_FWD_DOC = "ops-nn pooling/max_pool3d_with_argmax/docs/aclnnMaxPool3dWithArgmax.md"
_POOL_BWD_DOC = "ops-nn pooling/max_pool3d_grad_with_argmax/docs/aclnnMaxPool3dWithArgmaxBackward.md"
_TRILINEAR_FWD_DOC = ("ops-cv image/resize_upsample_trilinear/docs/aclnnUpsampleTrilinear3d_en.md "
                      "'Constraints' (docs/spec.md §10 device limits)")
_AVG_FWD_DOC = "ops-nn pooling/avg_pool3_d/docs/aclnnAvgPool3d_en.md"
_AVG_BWD_DOC = "ops-nn pooling/avg_pool3_d_grad/docs/aclnnAvgPool3dBackward_en.md"
_ADAPTIVE_FWD_DOC = "ops-nn pooling/adaptive_avg_pool3d/docs/aclnnAdaptiveAvgPool3d.md"
_ADAPTIVE_BWD_DOC = "ops-nn pooling/adaptive_avg_pool3d_grad/docs/aclnnAdaptiveAvgPool3dBackward.md"

GIB = 1 << 30

_UPSAMPLE_BWD = ("upsample_nearest3d_backward", "upsample_nearest_exact3d_backward")
_UPSAMPLE_FWD = ("upsample_nearest3d", "upsample_nearest_exact3d")
_SL1 = ("smooth_l1_loss", "smooth_l1_loss_backward")


@dataclasses.dataclass
class Limit:
    ops: tuple            # operators the row applies to (torch.ops.torch_aclnn names)
    key: str              # short name, unique per operator
    text: str             # the limit as the warning states it
    handling: str         # SPLIT or CPU
    max: Any              # the largest allowed value of measure(...)
    measure: Callable     # Geometry -> number (per (n, c) plane for SPLIT rows)
    source: str           # where the limit is documented or implemented


def _not(dtypes):
    return lambda g: g.dtype in dtypes


LIMITS = (
    # ---- §1/§2 upsample backward (aclnnUpsampleNearest[Exact]3dBackward) -------------------
    Limit(_UPSAMPLE_BWD, "nc_od_oh", "N*C*oD*oH < 2^31", SPLIT, (1 << 31) - 1,
          lambda g: g.out[0] * g.out[1], _UPSAMPLE_BWD_DOC),
    Limit(_UPSAMPLE_BWD, "workspace",
          "N*C*(oD*oH*oW + iD*iH*iW + oD*oH*iW + oD*iH*iW)*4 bytes < 60 GiB", SPLIT, 60 * GIB - 1,
          lambda g: 4 * (g.out[0] * g.out[1] * g.out[2] + g.inp[0] * g.inp[1] * g.inp[2]
                         + g.out[0] * g.out[1] * g.inp[2] + g.out[0] * g.inp[1] * g.inp[2]),
          _UPSAMPLE_BWD_DOC),
    # "every axis of grad_output and grad_input <= 2^20": N and C by splitting
    # (a call takes at most `max` (n, c) planes, so at most `max` of either),
    # D, H, W on the CPU.
    Limit(_UPSAMPLE_BWD, "axis_nc", "every axis <= 2^20 (N, C)", SPLIT, 1 << 20,
          lambda g: 1, _UPSAMPLE_BWD_DOC),
    Limit(_UPSAMPLE_BWD, "axis_dhw", "every axis of grad_output and grad_input <= 2^20 (D, H, W)", CPU, 1 << 20,
          lambda g: max(*g.out, *g.inp), _UPSAMPLE_BWD_DOC),
    Limit(_UPSAMPLE_BWD, "ih_iw", "iW*iH < 2^31", CPU, (1 << 31) - 1,
          lambda g: g.inp[1] * g.inp[2], _UPSAMPLE_BWD_DOC),
    # The exact backward rejects an up-scale factor above 50 with 161002
    # (MAX_SUPPORT_SCALE). The nearest backward needs no row: its l0 op
    # (upsample_nearest_3d_grad.cpp, CheckNearest3dGradScales) moves such
    # calls to its AI CPU kernel itself.
    Limit(("upsample_nearest_exact3d_backward",), "scale", "scale (output/input size, or the given scale) <= 50",
          CPU, 50.0, lambda g: max(g.factors), f"{_EXACT_BWD_SRC} (MAX_SUPPORT_SCALE); docs/spec.md §2"),
    Limit(("upsample_nearest_exact3d_backward",), "dtype", "no float64 kernel (FLOAT, FLOAT16, BFLOAT16 only)",
          CPU, False, _not({torch.float64}), f"{_EXACT_BWD_SRC} (DTYPE_SUPPORT_LIST); docs/spec.md §2 dtypes"),
    # ---- upsample forwards (aclnnUpsampleNearest3d, aclnnUpsampleNearestExact3d) -----------
    Limit(_UPSAMPLE_FWD, "axis_nc", "every axis of self and out <= 2^31 - 1 (N, C)", SPLIT, (1 << 31) - 1,
          lambda g: 1, _UPSAMPLE_FWD_DOC),
    Limit(_UPSAMPLE_FWD, "axis_dhw", "every axis of self and out <= 2^31 - 1 (D, H, W)", CPU, (1 << 31) - 1,
          lambda g: max(*g.out, *g.inp), _UPSAMPLE_FWD_DOC),
    Limit(("upsample_nearest_exact3d",), "dtype", "no float64 kernel (FLOAT, FLOAT16, BFLOAT16 only)",
          CPU, False, _not({torch.float64}), f"{_EXACT_FWD_SRC} (DTYPE_SUPPORT_LIST)"),
    # ---- §3 elu ------------------------------------------------------------------------------
    # aclnnElu lists DOUBLE but takes alpha, scale and input_scale as float32
    # (aclScalar::ToFloat), which is not float64 accuracy.
    Limit(("elu",), "dtype", "float64 computed with float32 parameters (alpha, scale, input_scale)", CPU, False,
          _not({torch.float64}), f"{_ELU_SRC} (ToFloat)"),
    Limit(("elu_backward",), "dtype", "no float64 kernel (FLOAT, FLOAT16, BFLOAT16 only)", CPU, False,
          _not({torch.float64}), f"{_ELU_BWD_SRC} (DTYPE_SUPPORT_LIST); docs/spec.md §3 dtypes"),
    # ---- §4 smooth_l1_loss ---------------------------------------------------------------------
    Limit(_SL1, "dtype", "no float64 kernel (FLOAT, FLOAT16, BFLOAT16 only)", CPU, False, _not({torch.float64}),
          f"{_SL1_BWD_SRC}, {_SL1_SRC} (DTYPE_SUPPORT_LIST); docs/spec.md §4 dtypes"),
    Limit(_SL1, "ndim", "at most 8 dims", CPU, 8, lambda g: g.ndim,
          f"{_SL1_BWD_SRC}, {_SL1_SRC} (MAX_SUPPORT_DIMS_NUMS = 8)"),
    # ---- §5 max_unpool3d -----------------------------------------------------------------------
    # The backward is a gather (aten.gather), which has no such gap.
    Limit(("max_unpool3d",), "dtype", "no bfloat16 kernel", CPU, False, _not({torch.bfloat16}),
          f"{_UNPOOL_DOC} (dtype list); docs/spec.md §5 dtypes"),
    # ---- §9 max_pool3d_with_indices_backward -----------------------------------------------------
    Limit(("max_pool3d_with_indices", "max_pool3d_with_indices_backward"), "dtype",
          "no float64 kernel (FLOAT32, FLOAT16, BFLOAT16 only)", CPU, False, _not({torch.float64}),
          f"{_POOL_FWD_DOC}, {_POOL_BWD_DOC} (parameter tables); docs/spec.md §9 dtypes"),
    # ---- §10 upsample_trilinear3d (aclnnUpsampleTrilinear3d; its backward's document lists none) --
    Limit(("upsample_trilinear3d",), "axis_nc", "every axis of self and out <= 2^20 (N, C)", SPLIT, 1 << 20,
          lambda g: 1, _TRILINEAR_FWD_DOC),
    Limit(("upsample_trilinear3d",), "axis_dhw", "every axis of self and out <= 2^20 (D, H, W)", CPU, 1 << 20,
          lambda g: max(*g.out, *g.inp), _TRILINEAR_FWD_DOC),
    Limit(("upsample_trilinear3d",), "workspace",
          "N*C*(iD*iH*iW + oD*oH*oW + iD*iH*oW + iD*oH*oW)*4 bytes < 60 GiB", SPLIT, 60 * GIB - 1,
          lambda g: 4 * (g.inp[0] * g.inp[1] * g.inp[2] + g.out[0] * g.out[1] * g.out[2]
                         + g.inp[0] * g.inp[1] * g.out[2] + g.inp[0] * g.out[1] * g.out[2]),
          _TRILINEAR_FWD_DOC),
    Limit(("upsample_trilinear3d",), "nc_id_ih", "N*C*iD*iH < 2^31", SPLIT, (1 << 31) - 1,
          lambda g: g.inp[0] * g.inp[1], _TRILINEAR_FWD_DOC),
    Limit(("upsample_trilinear3d",), "ow_oh", "oW*oH < 2^31", CPU, (1 << 31) - 1,
          lambda g: g.out[1] * g.out[2], _TRILINEAR_FWD_DOC),
    Limit(("upsample_trilinear3d",), "downscale", "down-scale factor (input / output size) <= 50", CPU, 50.0,
          lambda g: max(g.down), _TRILINEAR_FWD_DOC),
    # ---- §11 leaky_relu --------------------------------------------------------------------------
    # aclnnLeakyRelu takes negative_slope as float32 (aclScalar::ToFloat); the backward's document
    # lists DOUBLE but not how the slope reaches its kernel, so float64 stays on the CPU for both.
    Limit(("leaky_relu", "leaky_relu_backward"), "dtype", "float64 computed with a float32 negative_slope",
          CPU, False, _not({torch.float64}),
          f"{_LEAKY_SRC} (ToFloat), {_LEAKY_BWD_DOC}; docs/spec.md §11 device limits"),
    # ---- §12 avg_pool3d_backward ---------------------------------------------------------------
    Limit(("avg_pool3d", "avg_pool3d_backward"), "dtype", "no float64 kernel (FLOAT32, FLOAT16, BFLOAT16 only)",
          CPU, False, _not({torch.float64}), f"{_AVG_FWD_DOC}, {_AVG_BWD_DOC} (parameter tables); docs/spec.md §12"),
    # ---- §13 adaptive_avg_pool3d_backward -------------------------------------------------------
    Limit(("adaptive_avg_pool3d", "adaptive_avg_pool3d_backward"), "dtype",
          "no float64 kernel (FLOAT32, FLOAT16, BFLOAT16 only)", CPU, False, _not({torch.float64}),
          f"{_ADAPTIVE_FWD_DOC}, {_ADAPTIVE_BWD_DOC} (parameter tables); docs/spec.md §13 device limits"),
)


def rows(op: str, handling: Optional[str] = None):
    """The rows that apply to ``op`` (optionally only SPLIT or CPU ones)."""
    return [r for r in LIMITS if op in r.ops and (handling is None or r.handling == handling)]


def row(op: str, key: str) -> Limit:
    for r in LIMITS:
        if op in r.ops and r.key == key:
            return r
    raise KeyError(f"no device limit {key!r} for {op}")


def beyond_split(op: str, g) -> Optional[Limit]:
    """The first row that splitting along N*C cannot satisfy for this call
    (a CPU row violated, or a SPLIT row that even one (n, c) plane breaks)."""
    for r in rows(op):
        if r.measure(g) > r.max:
            return r
    return None


def planes_per_call(op: str, g) -> int:
    """How many (n, c) planes one device call may take under the SPLIT rows
    (call beyond_split first: every plane fits on its own)."""
    k = None
    for r in rows(op, SPLIT):
        m = r.measure(g)
        fit = r.max // m if m > 0 else r.max
        k = fit if k is None else min(k, fit)
    return max(1, int(k)) if k is not None else 1 << 62
