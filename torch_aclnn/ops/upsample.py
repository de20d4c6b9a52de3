"""The upsample-nearest family (docs/spec.md §1, §2): nearest and nearest-exact, 5-D.

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/upsample.h, csrc/cpu/upsample.cpp, csrc/cuda/upsample.cu, torch_aclnn/npu/upsample.py,
torch_aclnn/testing/upsample.py, and csrc/autograd/upsample.cpp (the backward formulas).
Its forward-mode formulas and vmap rules are below.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import torch

from ._args import int_arg, int_array, optional_floats, optional_real, plain_ints, positive_scale, scaled_size
from ._autograd import register_autograd
from ._calls import Operator, compiling, planned
from ._errors import invalid, require, tensors, write_out
from ._vmap import register_vmap, vmap_loop

__all__ = [
    "upsample_nearest3d",
    "upsample_nearest3d_backward",
    "upsample_nearest_exact3d",
    "upsample_nearest_exact3d_backward",
]

_ops = torch.ops.torch_aclnn
# Called as op[+compiling()](...): the direct call in eager code, the OpOverload when compiled (_calls.Operator).
_OPS = {name: Operator.of(name) for name in __all__}

Size3 = Union[int, Sequence[int]]
Scale3 = Union[float, Sequence[float]]


def _triple(op: str, name: str, value, element):
    """``value`` (one element, or 3 as a list / tuple / torch.Size) as 3
    elements, each checked by ``element(op, name, v, shown=value)``."""
    if isinstance(value, (list, tuple, torch.Size)):
        if len(value) != 3:
            raise invalid(op, f"{name} must have 3 elements (D, H, W) for 5-D input, got {list(value)}")
        return [element(op, name, v, shown=value) for v in value]
    return [element(op, name, value)] * 3


def _size_element(op: str, name: str, value, shown=None):
    return int_arg(op, name, value, minimum=1, shown=shown)


def resolve_size(op: str, input: torch.Tensor, size, scale_factor, recompute_scale_factor):
    """F.interpolate's size / scale_factor rules for a 5-D input: the output
    size and the scales to pass (every 5-D upsample family's, the trilinear's
    too)."""
    require(op, input=input)
    tensors(op, input=input)
    if input.dim() != 5:
        raise invalid(op, f"input must be 5-D (N, C, D, H, W), got {input.dim()}-D with shape {list(input.shape)}")
    if (size is None) == (scale_factor is None):
        raise invalid(op, "exactly one of size and scale_factor must be given, got "
                      f"size={size!r}, scale_factor={scale_factor!r}")
    if size is not None:
        if recompute_scale_factor:
            raise invalid(op, "recompute_scale_factor=True needs scale_factor, got size")
        return _triple(op, "size", size, _size_element), (None, None, None)
    factors = _triple(op, "scale_factor", scale_factor, positive_scale)
    for i in range(2, 5):  # an empty input axis is named as such, not blamed on the scale factor
        if input.shape[i] == 0:
            raise invalid(op, f"input.shape[{i}] ({'DHW'[i - 2]}) must be > 0, got {list(input.shape)}")
    output_size = [scaled_size(op, "scale_factor", input.shape[2 + i], factors[i], "DHW"[i], scale_factor)
                   for i in range(3)]
    if recompute_scale_factor:
        return output_size, (None, None, None)
    return output_size, tuple(factors)


def upsample_nearest3d(input: torch.Tensor, size: Optional[Size3] = None,
                       scale_factor: Optional[Scale3] = None,
                       recompute_scale_factor: Optional[bool] = None) -> torch.Tensor:
    """``F.interpolate(input, size, scale_factor, mode="nearest")`` for 5-D input.

    Index rule (docs/spec.md §1): ``src = min(floor(dst * s), in - 1)`` in float32 with
    ``s = 1/scale`` when all three scales are given, else ``in/out``.
    """
    output_size, scales = planned(resolve_size, "upsample_nearest3d", input, size, scale_factor, recompute_scale_factor)
    return _OPS["upsample_nearest3d"][+compiling()](input, output_size, *scales)


def upsample_nearest_exact3d(input: torch.Tensor, size: Optional[Size3] = None,
                             scale_factor: Optional[Scale3] = None,
                             recompute_scale_factor: Optional[bool] = None) -> torch.Tensor:
    """``F.interpolate(input, size, scale_factor, mode="nearest-exact")`` for 5-D input.

    Index rule (docs/spec.md §2): ``src = min(floor((dst + 0.5) * s), in - 1)``.
    """
    output_size, scales = planned(resolve_size, "upsample_nearest_exact3d", input, size, scale_factor,
                                  recompute_scale_factor)
    return _OPS["upsample_nearest_exact3d"][+compiling()](input, output_size, *scales)


def _backward_args(op: str, output_size, input_size, scales_d, scales_h, scales_w):
    """The backward operators' arguments as given, their element types
    checked (the contract checks lengths and values, naming the same
    arguments)."""
    return (int_array(op, "output_size", output_size), int_array(op, "input_size", input_size),
            optional_real(op, "scales_d", scales_d), optional_real(op, "scales_h", scales_h),
            optional_real(op, "scales_w", scales_w))


def _backward(op: str, grad_output, output_size, input_size, scales_d, scales_h, scales_w, out):
    # (the common call, as in elu.py; compiled: the checks, traced once; compiling() first, so that
    # dynamo never traces plain_ints, which torch 2.8's cannot)
    if not compiling() and out is None and isinstance(grad_output, torch.Tensor) \
            and plain_ints(output_size, input_size) and optional_floats(scales_d, scales_h, scales_w):
        try:
            return _OPS[op].direct(grad_output, output_size, input_size, scales_d, scales_h, scales_w)
        except RuntimeError as e:  # (an element beyond int64: the checks name it; plain_ints)
            refused = e
        _backward_args(op, output_size, input_size, scales_d, scales_h, scales_w)
        raise refused
    require(op, grad_output=grad_output, output_size=output_size, input_size=input_size)
    tensors(op, grad_output=grad_output)
    args = _backward_args(op, output_size, input_size, scales_d, scales_h, scales_w)
    if out is not None:
        return write_out(op, out, grad_output, *args)
    return _OPS[op][+compiling()](grad_output, *args)


def upsample_nearest3d_backward(grad_output: torch.Tensor, output_size: Sequence[int], input_size: Sequence[int],
                                scales_d: Optional[float] = None, scales_h: Optional[float] = None,
                                scales_w: Optional[float] = None, *,
                                out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnUpsampleNearest3dBackward: the exact adjoint of :func:`upsample_nearest3d`."""
    return _backward("upsample_nearest3d_backward", grad_output, output_size, input_size, scales_d, scales_h,
                     scales_w, out)


def upsample_nearest_exact3d_backward(grad_output: torch.Tensor, output_size: Sequence[int],
                                      input_size: Sequence[int], scales_d: Optional[float] = None,
                                      scales_h: Optional[float] = None, scales_w: Optional[float] = None, *,
                                      out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnUpsampleNearestExact3dBackward: the exact adjoint of :func:`upsample_nearest_exact3d`."""
    return _backward("upsample_nearest_exact3d_backward", grad_output, output_size, input_size, scales_d, scales_h,
                     scales_w, out)


# ---------------------------------------------------------------------------
# Forward-mode AD and vmap (the backward formulas: csrc/autograd/upsample.cpp).
# Both operators are linear in their tensor input, so the tangent is the same
# operator applied to the tangent. vmap folds the batch dimension into N (each
# of the N * C planes is mapped alone).

def _register(forward: str, backward: str) -> None:
    fwd_op = getattr(_ops, forward).default
    bwd_op = getattr(_ops, backward).default

    def forward_jvp(args, dtype, t, *_):
        return fwd_op(t, *args[1:])

    def backward_jvp(args, dtype, t, *_):
        return bwd_op(t, *args[1:])

    def forward_vmap(info, in_dims, self, output_size, sd=None, sh=None, sw=None):
        x = self.movedim(in_dims[0], 0)
        if x.dim() != 6:  # not 5-D unbatched: the contract's error
            return vmap_loop(fwd_op, info.batch_size, in_dims, self, output_size, sd, sh, sw)
        out = fwd_op(x.flatten(0, 1), output_size, sd, sh, sw)
        return out.unflatten(0, x.shape[:2]), 0

    def backward_vmap(info, in_dims, grad_output, output_size, input_size, sd=None, sh=None, sw=None):
        g = grad_output.movedim(in_dims[0], 0)
        if g.dim() != 6 or len(input_size) != 5 or input_size[0] != g.shape[1]:  # the contract's error
            return vmap_loop(bwd_op, info.batch_size, in_dims, grad_output, output_size, input_size, sd, sh, sw)
        folded = [g.shape[0] * g.shape[1], *input_size[1:]]
        out = bwd_op(g.flatten(0, 1), output_size, folded, sd, sh, sw)
        return out.unflatten(0, g.shape[:2]), 0

    register_autograd(f"torch_aclnn::{forward}", forward_jvp)
    register_autograd(f"torch_aclnn::{backward}", backward_jvp)
    register_vmap(f"torch_aclnn::{forward}", forward_vmap)
    register_vmap(f"torch_aclnn::{backward}", backward_vmap)


_register("upsample_nearest3d", "upsample_nearest3d_backward")
_register("upsample_nearest_exact3d", "upsample_nearest_exact3d_backward")
