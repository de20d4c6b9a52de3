"""The SmoothL1 family (spec §4): smooth_l1_loss and its backward,
aclnnSmoothL1LossBackward.

Where things live:
  schema            csrc/torch_aclnn.cpp
  contract          csrc/contracts/smooth_l1.h (all backends, incl. Meta/fake)
  CPU kernels       csrc/cpu/smooth_l1.cpp
  fake kernels      csrc/meta/smooth_l1.cpp (C++ Meta, shares the contract)
  CUDA kernels      csrc/cuda/smooth_l1.cu (per-element code: csrc/cuda/smooth_l1.cuh)
  autograd          this file (register_autograd below; the Autograd kernel
                    that calls it: csrc/autograd.cpp)

Semantics that differ from aten's raw ``smooth_l1_loss_backward`` (by design,
spec §4): with ``beta == 0`` the gradient is ``sign(d)`` with ``sign(0) = 0``
(aten's kernel gives -1 at d == 0; ``F.smooth_l1_loss`` avoids that by using
l1_loss), and 'mean' divides by ``numel(broadcast(self, target))`` (aten uses
``self.numel()``).
"""
from __future__ import annotations

import math
from typing import Optional, Union

import torch

from ._common import invalid, real_arg, register_autograd, require

__all__ = ["smooth_l1_loss", "smooth_l1_loss_backward"]

_ops = torch.ops.torch_aclnn

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}

Reduction = Union[str, int]


def _reduction(op: str, reduction: Reduction) -> int:
    """'none' | 'mean' | 'sum' (as F.smooth_l1_loss) or the ints 0 | 1 | 2."""
    if isinstance(reduction, str):
        if reduction in _REDUCTIONS:
            return _REDUCTIONS[reduction]
    elif isinstance(reduction, int) and not isinstance(reduction, bool):
        return reduction  # the range is the contract's to check, on every backend
    raise invalid(op, f"reduction must be 'none', 'mean' or 'sum' (or 0, 1, 2), got {reduction!r}")


def smooth_l1_loss(input: torch.Tensor, target: torch.Tensor, reduction: Reduction = "mean",
                   beta: float = 1.0) -> torch.Tensor:
    """``F.smooth_l1_loss(input, target, reduction=reduction, beta=beta)``.

    ``loss = 0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta``,
    with ``d = input - target`` broadcast (no warning when the shapes differ);
    ``beta == 0`` is plain L1. The result has the promoted dtype of input and
    target; 'mean' and 'sum' are 0-dim ('mean' of no elements is NaN) and are
    reduced deterministically in float64 on CPU.
    """
    op = "smooth_l1_loss"
    require(op, input=input, target=target, reduction=reduction, beta=beta)
    return _ops.smooth_l1_loss(input, target, _reduction(op, reduction), real_arg(op, "beta", beta))


def smooth_l1_loss_backward(grad_output: torch.Tensor, input: torch.Tensor, target: torch.Tensor,
                            reduction: Reduction, beta: float, *,
                            out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnSmoothL1LossBackward: ``norm * dloss/dinput * grad_output``.

    ``dloss/dinput = d / beta`` where ``|d| < beta``, else ``sign(d)``
    (``sign(0) = 0``, so ``beta == 0`` gives the L1 gradient 0 at d == 0);
    ``norm = 1 / numel(broadcast(input, target))`` for 'mean', else 1. The
    result has the broadcast shape of grad_output, input and target and their
    promoted dtype; ``out`` must already have exactly that shape and dtype.
    """
    op = "smooth_l1_loss_backward"
    require(op, grad_output=grad_output, input=input, target=target, reduction=reduction, beta=beta)
    r = _reduction(op, reduction)
    beta = real_arg(op, "beta", beta)
    if out is not None:
        _ops.smooth_l1_loss_backward.grad_input(grad_output, input, target, r, beta, grad_input=out)
        return out
    return _ops.smooth_l1_loss_backward(grad_output, input, target, r, beta)


# ---------------------------------------------------------------------------
# Autograd.
#
#   smooth_l1_loss:          d/dself = sum_to(B, self.shape), d/dtarget = -sum_to(B, target.shape)
#                            with B = smooth_l1_loss_backward(grad, self, target, ...)
#   smooth_l1_loss_backward: linear in grad_output: d/dgrad_output = sum_to(B(gg), grad_output.shape);
#                            d/dself = norm / beta * [|d| < beta] * gg * grad_output (0 for beta == 0),
#                            d/dtarget its negation, each reduced to its input's shape.

def _sum_to(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``x`` summed over the broadcast dimensions of ``like``, in its dtype."""
    return x.sum_to_size(like.shape).to(like.dtype)


def _forward_setup(ctx, inputs, output):
    self, target, reduction, beta = inputs
    ctx.save_for_backward(self, target)
    ctx.reduction, ctx.beta = reduction, beta


def _forward_backward(ctx, grad):
    self, target = ctx.saved_tensors
    need_self, need_target = ctx.needs_input_grad[:2]
    grad_self = grad_target = None
    if need_self or need_target:
        g = _ops.smooth_l1_loss_backward(grad, self, target, ctx.reduction, ctx.beta)
        if need_self:
            grad_self = _sum_to(g, self)
        if need_target:
            grad_target = -_sum_to(g, target)
    return grad_self, grad_target, None, None


def _backward_setup(ctx, inputs, output):
    grad_output, self, target, reduction, beta = inputs
    ctx.save_for_backward(grad_output, self, target)
    ctx.reduction, ctx.beta = reduction, beta


def _backward_backward(ctx, gg):
    grad_output, self, target = ctx.saved_tensors
    need_go, need_self, need_target = ctx.needs_input_grad[:3]
    reduction, beta = ctx.reduction, ctx.beta
    grad_go = grad_self = grad_target = None
    if need_go:
        grad_go = _sum_to(_ops.smooth_l1_loss_backward(gg, self, target, reduction, beta), grad_output)
    if need_self or need_target:
        # Second derivative: norm / beta inside |d| < beta, 0 outside (and
        # everywhere for beta == 0). |d| is compared in the kernels' opmath.
        s, t = self.detach(), target.detach()  # the mask is piecewise constant in them
        d = s - t
        if d.dtype in (torch.float16, torch.bfloat16):
            d = s.float() - t.float()
        numel = math.prod(torch.broadcast_shapes(self.shape, target.shape))
        norm = 1.0 / numel if reduction == 1 and numel > 0 else 1.0
        if beta > 0:
            h = torch.where(d.abs() < beta, gg * grad_output, 0.0) * (norm / beta)
        else:
            h = torch.zeros_like(gg)
        if need_self:
            grad_self = _sum_to(h, self)
        if need_target:
            grad_target = -_sum_to(h, target)
    return grad_go, grad_self, grad_target, None, None


register_autograd("torch_aclnn::smooth_l1_loss", _forward_backward, setup_context=_forward_setup)
register_autograd("torch_aclnn::smooth_l1_loss_backward", _backward_backward,
                                setup_context=_backward_setup)
