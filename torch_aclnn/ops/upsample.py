"""The upsample-nearest family (spec §1, §2): nearest and nearest-exact, 5-D.

Where things live:
  schema            csrc/torch_aclnn.cpp
  contract          csrc/contracts/upsample.h (all backends, incl. Meta/fake)
  CPU kernels       csrc/cpu/upsample.cpp
  fake kernels      csrc/meta/upsample.cpp (C++ Meta, shares the contract)
  CUDA kernels      csrc/cuda/upsample.cu (per-element code: csrc/cuda/upsample.cuh)
  autograd          this file (register_autograd below; the Autograd kernel
                    that calls it: csrc/autograd.cpp)
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import torch

from ._common import invalid, register_autograd, require

__all__ = [
    "upsample_nearest3d",
    "upsample_nearest3d_backward",
    "upsample_nearest_exact3d",
    "upsample_nearest_exact3d_backward",
]

_ops = torch.ops.torch_aclnn

Size3 = Union[int, Sequence[int]]
Scale3 = Union[float, Sequence[float]]


def _triple(op: str, name: str, value, kind):
    if isinstance(value, (list, tuple, torch.Size)):
        if len(value) != 3:
            raise invalid(op, f"{name} must have 3 elements (D, H, W) for 5-D input, got {list(value)}")
        return [kind(v) if not isinstance(v, torch.SymInt) else v for v in value]
    return [value] * 3


def _resolve(op: str, input: torch.Tensor, size, scale_factor, recompute_scale_factor):
    """F.interpolate's size / scale_factor rules for a 5-D input."""
    require(op, input=input)
    if input.dim() != 5:
        raise invalid(op, f"input must be 5-D (N, C, D, H, W), got {input.dim()}-D with shape {list(input.shape)}")
    if (size is None) == (scale_factor is None):
        raise invalid(op, "exactly one of size and scale_factor must be given, got "
                      f"size={size!r}, scale_factor={scale_factor!r}")
    if size is not None:
        if recompute_scale_factor:
            raise invalid(op, "recompute_scale_factor=True needs scale_factor, got size")
        return _triple(op, "size", size, int), (None, None, None)
    factors = _triple(op, "scale_factor", scale_factor, float)
    output_size = [math.floor(torch.sym_float(input.shape[2 + i]) * factors[i]) for i in range(3)]
    if recompute_scale_factor:
        return output_size, (None, None, None)
    return output_size, tuple(factors)


def upsample_nearest3d(input: torch.Tensor, size: Optional[Size3] = None,
                       scale_factor: Optional[Scale3] = None,
                       recompute_scale_factor: Optional[bool] = None) -> torch.Tensor:
    """``F.interpolate(input, size, scale_factor, mode="nearest")`` for 5-D input.

    Index rule (spec §1): ``src = min(floor(dst * s), in - 1)`` in float32 with
    ``s = 1/scale`` when all three scales are given, else ``in/out``.
    """
    output_size, scales = _resolve("upsample_nearest3d", input, size, scale_factor, recompute_scale_factor)
    return _ops.upsample_nearest3d(input, output_size, *scales)


def upsample_nearest_exact3d(input: torch.Tensor, size: Optional[Size3] = None,
                             scale_factor: Optional[Scale3] = None,
                             recompute_scale_factor: Optional[bool] = None) -> torch.Tensor:
    """``F.interpolate(input, size, scale_factor, mode="nearest-exact")`` for 5-D input.

    Index rule (spec §2): ``src = min(floor((dst + 0.5) * s), in - 1)``.
    """
    output_size, scales = _resolve("upsample_nearest_exact3d", input, size, scale_factor, recompute_scale_factor)
    return _ops.upsample_nearest_exact3d(input, output_size, *scales)


def upsample_nearest3d_backward(grad_output: torch.Tensor, output_size: Sequence[int], input_size: Sequence[int],
                                scales_d: Optional[float] = None, scales_h: Optional[float] = None,
                                scales_w: Optional[float] = None, *,
                                out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnUpsampleNearest3dBackward: the exact adjoint of :func:`upsample_nearest3d`."""
    require("upsample_nearest3d_backward", grad_output=grad_output, output_size=output_size, input_size=input_size)
    if out is not None:
        _ops.upsample_nearest3d_backward.grad_input(
            grad_output, output_size, input_size, scales_d, scales_h, scales_w, grad_input=out)
        return out
    return _ops.upsample_nearest3d_backward(grad_output, output_size, input_size, scales_d, scales_h, scales_w)


def upsample_nearest_exact3d_backward(grad_output: torch.Tensor, output_size: Sequence[int],
                                      input_size: Sequence[int], scales_d: Optional[float] = None,
                                      scales_h: Optional[float] = None, scales_w: Optional[float] = None, *,
                                      out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnUpsampleNearestExact3dBackward: the exact adjoint of :func:`upsample_nearest_exact3d`."""
    require("upsample_nearest_exact3d_backward", grad_output=grad_output, output_size=output_size,
            input_size=input_size)
    if out is not None:
        _ops.upsample_nearest_exact3d_backward.grad_input(
            grad_output, output_size, input_size, scales_d, scales_h, scales_w, grad_input=out)
        return out
    return _ops.upsample_nearest_exact3d_backward(grad_output, output_size, input_size, scales_d, scales_h,
                                                  scales_w)


# ---------------------------------------------------------------------------
# Autograd. forward -> backward op; backward op -> forward op (it is linear in
# grad_output and the exact adjoint of the forward with the same mapping).

def _register(forward: str, backward: str) -> None:
    fwd_op = getattr(_ops, forward).default
    bwd_op = getattr(_ops, backward).default

    def forward_setup(ctx, inputs, output):
        self, output_size, sd, sh, sw = inputs
        ctx.input_size = list(self.shape)
        ctx.output_size = list(output_size)
        ctx.scales = (sd, sh, sw)

    def forward_grad(ctx, grad):
        return bwd_op(grad, ctx.output_size, ctx.input_size, *ctx.scales), None, None, None, None

    def backward_setup(ctx, inputs, output):
        _, output_size, _, sd, sh, sw = inputs
        ctx.output_size = list(output_size)
        ctx.scales = (sd, sh, sw)

    def backward_grad(ctx, grad):
        return fwd_op(grad, ctx.output_size, *ctx.scales), None, None, None, None, None

    register_autograd(f"torch_aclnn::{forward}", forward_grad, setup_context=forward_setup)
    register_autograd(f"torch_aclnn::{backward}", backward_grad, setup_context=backward_setup)


_register("upsample_nearest3d", "upsample_nearest3d_backward")
_register("upsample_nearest_exact3d", "upsample_nearest_exact3d_backward")
