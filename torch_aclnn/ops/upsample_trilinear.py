"""The upsample-trilinear family (docs/spec.md §10): trilinear interpolation of 5-D input.

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/upsample_trilinear.h, csrc/cpu/upsample_trilinear.cpp, csrc/cuda/upsample_trilinear.cu,
torch_aclnn/npu/upsample_trilinear.py, torch_aclnn/testing/upsample_trilinear.py, and
csrc/autograd/upsample_trilinear.cpp (the backward formulas). The size / scale_factor rules of the
Python function are those of the nearest family (torch_aclnn/ops/upsample.py, one place). Its
forward-mode formulas and vmap rules are below.
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch

from ._args import bool_arg, int_array, optional_floats, optional_real, plain_ints
from ._autograd import register_autograd
from ._calls import Operator, compiling, planned
from ._errors import require, tensors
from ._vmap import register_vmap, vmap_loop
from .upsample import Scale3, Size3, resolve_size

__all__ = ["upsample_trilinear3d", "upsample_trilinear3d_backward"]

_ops = torch.ops.torch_aclnn
_FORWARD = Operator.of("upsample_trilinear3d")
_BACKWARD = Operator.of("upsample_trilinear3d_backward")


def upsample_trilinear3d(input: torch.Tensor, size: Optional[Size3] = None, scale_factor: Optional[Scale3] = None,
                         align_corners: bool = False,
                         recompute_scale_factor: Optional[bool] = None) -> torch.Tensor:
    """``F.interpolate(input, size, scale_factor, mode="trilinear", align_corners=...)`` for 5-D input.

    Per axis (docs/spec.md §10): ``src = max(0, (x + 0.5) / scale - 0.5)`` (``scale`` the given
    scale factor, else out/in), or ``x * (in - 1) / (out - 1)`` with ``align_corners``; the two
    neighbours of ``src`` weighted linearly.
    """
    op = "upsample_trilinear3d"
    if type(align_corners) is not bool:
        align_corners = bool_arg(op, "align_corners", align_corners)
    output_size, scales = planned(resolve_size, op, input, size, scale_factor, recompute_scale_factor)
    return _FORWARD[+compiling()](input, output_size, align_corners, *scales)


def _backward_args(op: str, output_size, input_size, align_corners, scales_d, scales_h, scales_w):
    """The arguments as given, their element types checked (the contract
    checks lengths and values, naming the same arguments)."""
    return (int_array(op, "output_size", output_size), int_array(op, "input_size", input_size),
            bool_arg(op, "align_corners", align_corners), optional_real(op, "scales_d", scales_d),
            optional_real(op, "scales_h", scales_h), optional_real(op, "scales_w", scales_w))


def upsample_trilinear3d_backward(grad_output: torch.Tensor, output_size: Sequence[int], input_size: Sequence[int],
                                  align_corners: bool, scales_d: Optional[float] = None,
                                  scales_h: Optional[float] = None, scales_w: Optional[float] = None, *,
                                  out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnUpsampleTrilinear3dBackward: the exact adjoint of :func:`upsample_trilinear3d`
    (docs/spec.md §10), a deterministic gather."""
    op = "upsample_trilinear3d_backward"
    # (the common call, as in upsample.py: the checks only where the arguments are not already the schema's types)
    if not compiling() and out is None and isinstance(grad_output, torch.Tensor) and type(align_corners) is bool \
            and plain_ints(output_size, input_size) and optional_floats(scales_d, scales_h, scales_w):
        try:
            return _BACKWARD.direct(grad_output, output_size, input_size, align_corners, scales_d, scales_h,
                                    scales_w)
        except RuntimeError as e:  # (an element beyond int64: the checks name it; plain_ints)
            refused = e
        _backward_args(op, output_size, input_size, align_corners, scales_d, scales_h, scales_w)
        raise refused
    require(op, grad_output=grad_output, output_size=output_size, input_size=input_size,
            align_corners=align_corners)
    tensors(op, grad_output=grad_output)
    args = _backward_args(op, output_size, input_size, align_corners, scales_d, scales_h, scales_w)
    if out is not None:
        _ops.upsample_trilinear3d_backward.grad_input(grad_output, *args, grad_input=out)
        return out
    return _BACKWARD[+compiling()](grad_output, *args)


# ---------------------------------------------------------------------------
# Forward-mode AD and vmap (the backward formulas: csrc/autograd/upsample_trilinear.cpp).
# Both operators are linear in their tensor input, so the tangent is the same
# operator applied to the tangent. vmap folds the batch dimension into N (each
# of the N * C planes is interpolated alone).

_fwd_op = _ops.upsample_trilinear3d.default
_bwd_op = _ops.upsample_trilinear3d_backward.default


def _forward_jvp(args, dtype, t, *_):
    return _fwd_op(t, *args[1:])


def _backward_jvp(args, dtype, t, *_):
    return _bwd_op(t, *args[1:])


def _forward_vmap(info, in_dims, self, output_size, align_corners, sd=None, sh=None, sw=None):
    x = self.movedim(in_dims[0], 0)
    if x.dim() != 6:  # not 5-D unbatched: the contract's error
        return vmap_loop(_fwd_op, info.batch_size, in_dims, self, output_size, align_corners, sd, sh, sw)
    out = _fwd_op(x.flatten(0, 1), output_size, align_corners, sd, sh, sw)
    return out.unflatten(0, x.shape[:2]), 0


def _backward_vmap(info, in_dims, grad_output, output_size, input_size, align_corners, sd=None, sh=None, sw=None):
    g = grad_output.movedim(in_dims[0], 0)
    if g.dim() != 6 or len(input_size) != 5 or input_size[0] != g.shape[1]:  # the contract's error
        return vmap_loop(_bwd_op, info.batch_size, in_dims, grad_output, output_size, input_size, align_corners,
                         sd, sh, sw)
    folded = [g.shape[0] * g.shape[1], *input_size[1:]]
    out = _bwd_op(g.flatten(0, 1), output_size, folded, align_corners, sd, sh, sw)
    return out.unflatten(0, g.shape[:2]), 0


register_autograd("torch_aclnn::upsample_trilinear3d", _forward_jvp)
register_autograd("torch_aclnn::upsample_trilinear3d_backward", _backward_jvp)
register_vmap("torch_aclnn::upsample_trilinear3d", _forward_vmap)
register_vmap("torch_aclnn::upsample_trilinear3d_backward", _backward_vmap)
