"""The SmoothL1 family (docs/spec.md §4): smooth_l1_loss and its backward,
aclnnSmoothL1LossBackward.

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/smooth_l1.h, csrc/cpu/smooth_l1.cpp, csrc/cuda/smooth_l1.cu, torch_aclnn/npu/smooth_l1.py,
torch_aclnn/testing/smooth_l1.py. Its autograd formulas are below.

Semantics that differ from aten's raw ``smooth_l1_loss_backward`` (by design,
docs/spec.md §4): with ``beta == 0`` the gradient is ``sign(d)`` with ``sign(0) = 0``
(aten's kernel gives -1 at d == 0; ``F.smooth_l1_loss`` avoids that by using
l1_loss), and 'mean' divides by ``numel(broadcast(self, target))`` (aten uses
``self.numel()``).
"""
from __future__ import annotations

import math
from typing import Optional, Union

import torch

from ._common import batch_first, invalid, real_arg, register_autograd, register_vmap, require, vmap_loop

__all__ = ["smooth_l1_loss", "smooth_l1_loss_backward", "huber_loss"]

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


def huber_loss(input: torch.Tensor, target: torch.Tensor, reduction: Reduction = "mean",
               delta: float = 1.0) -> torch.Tensor:
    """``F.huber_loss(input, target, reduction, delta)`` for ``delta > 0``,
    computed as ``delta * smooth_l1_loss(input, target, reduction, beta=delta)``
    (``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``):
    the same aclnn operators forward and backward, so it is differentiable
    twice. The product rounds once more than aten's huber_loss (within an ulp
    or two)."""
    op = "huber_loss"
    require(op, input=input, target=target, reduction=reduction, delta=delta)
    delta = real_arg(op, "delta", delta)
    if not (delta > 0 and delta < math.inf):
        raise invalid(op, f"delta must be finite and > 0, got {delta!r}")
    return _ops.smooth_l1_loss(input, target, _reduction(op, reduction), delta) * delta


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
# Autograd, forward-mode AD and vmap. With d = self - target (broadcast),
# l'(d) = d / beta inside |d| < beta, else sign(d), and B(g) =
# smooth_l1_loss_backward(g, self, target, ...) = norm * l'(d) * g:
#
#   smooth_l1_loss:          backward: d/dself = sum_to(B(grad), self.shape),
#                                      d/dtarget = -sum_to(B(grad), target.shape)
#                            jvp:      reduce(B_none(t_self - t_target)): 'none' as is,
#                                      'mean' its mean, 'sum' its sum (aten's formula)
#   smooth_l1_loss_backward: linear in grad_output: B(gg) (backward: reduced to
#                            grad_output's shape; jvp: B(t_grad_output));
#                            w.r.t. self and target (_second): l''(d) = norm / beta
#                            inside |d| < beta, 0 outside (and everywhere for
#                            beta == 0), times grad_output and v, v the incoming
#                            gradient (backward: reduced to self's shape, negated
#                            for target) or t_self - t_target (jvp).
#   vmap:                    elementwise where that is exact (reduction 'none', and
#                            the backward's 'sum', whose norm is 1; all tensors of
#                            one dtype, so that the batch dimension cannot change
#                            the type promotion of 0-dim tensors): the batched
#                            tensors aligned, batch dimension first. 'mean' and
#                            'sum' losses (reduced per batch element in float64)
#                            and the backward's 'mean' (norm per batch element):
#                            the operator once per batch element.

def _sum_to(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``x`` summed over the broadcast dimensions of ``like``, in its dtype."""
    return x.sum_to_size(like.shape).to(like.dtype)


def _difference(t_self, t_target):
    """t_self - t_target, either of them None (no tangent)."""
    if t_target is None:
        return t_self
    return -t_target if t_self is None else t_self - t_target


def _second(v: torch.Tensor, grad_output: torch.Tensor, self: torch.Tensor, target: torch.Tensor,
            reduction: int, beta: float) -> torch.Tensor:
    """d/dself of smooth_l1_loss_backward applied to v: norm / beta * [|d| < beta] * v * grad_output,
    in the broadcast shape. |d| is compared in the kernels' opmath; the mask is piecewise
    constant in self and target."""
    s, t = self.detach(), target.detach()
    d = s - t
    if d.dtype in (torch.float16, torch.bfloat16):
        d = s.float() - t.float()
    numel = math.prod(torch.broadcast_shapes(self.shape, target.shape))
    norm = 1.0 / numel if reduction == 1 and numel > 0 else 1.0
    h = torch.where(d.abs() < beta, v * grad_output, 0.0)  # all 0 for beta == 0
    return h * (norm / beta) if beta > 0 else h


def _forward_setup(ctx, inputs, output):
    self, target, reduction, beta = inputs
    ctx.save_for_backward(self, target)
    ctx.save_for_forward(self, target)
    ctx.reduction, ctx.beta = reduction, beta
    ctx.dtype = output.dtype


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


def _forward_jvp(ctx, t_self, t_target, *_):
    self, target = ctx.saved_tensors
    t = _ops.smooth_l1_loss_backward(_difference(t_self, t_target), self, target, 0, ctx.beta)
    if ctx.reduction == 1:
        t = t.mean()
    elif ctx.reduction == 2:
        t = t.sum()
    return t.to(ctx.dtype)


def _backward_setup(ctx, inputs, output):
    grad_output, self, target, reduction, beta = inputs
    ctx.save_for_backward(grad_output, self, target)
    ctx.save_for_forward(grad_output, self, target)
    ctx.reduction, ctx.beta = reduction, beta
    ctx.dtype = output.dtype


def _backward_backward(ctx, gg):
    grad_output, self, target = ctx.saved_tensors
    need_go, need_self, need_target = ctx.needs_input_grad[:3]
    reduction, beta = ctx.reduction, ctx.beta
    grad_go = grad_self = grad_target = None
    if need_go:
        grad_go = _sum_to(_ops.smooth_l1_loss_backward(gg, self, target, reduction, beta), grad_output)
    if need_self or need_target:
        h = _second(gg, grad_output, self, target, reduction, beta)
        if need_self:
            grad_self = _sum_to(h, self)
        if need_target:
            grad_target = -_sum_to(h, target)
    return grad_go, grad_self, grad_target, None, None


def _backward_jvp(ctx, t_grad_output, t_self, t_target, *_):
    grad_output, self, target = ctx.saved_tensors
    result = None
    if t_grad_output is not None:
        result = _ops.smooth_l1_loss_backward(t_grad_output, self, target, ctx.reduction, ctx.beta)
    t = _difference(t_self, t_target)
    if t is not None:
        h = _second(t, grad_output, self, target, ctx.reduction, ctx.beta)
        result = h if result is None else result + h
    return result.to(ctx.dtype)


def _aligned(tensors, in_dims, batch_size):
    """The batched tensors with the batch dimension first and unsqueezed to the
    largest logical rank (so that they broadcast as their unbatched selves
    do); the unbatched ones as they are."""
    rank = max(t.dim() - (d is not None) for t, d in zip(tensors, in_dims))
    out = []
    for t, d in zip(tensors, in_dims):
        if d is None:
            out.append(t)
        else:
            t = batch_first(t, d, batch_size)
            out.append(t[(slice(None),) + (None,) * (rank + 1 - t.dim())])
    return out


def _forward_vmap(info, in_dims, self, target, reduction=1, beta=1.0):
    if reduction != 0 or self.dtype != target.dtype:
        return vmap_loop(_ops.smooth_l1_loss.default, info.batch_size, in_dims, self, target, reduction, beta)
    s, t = _aligned((self, target), in_dims[:2], info.batch_size)
    return _ops.smooth_l1_loss.default(s, t, reduction, beta), 0


def _backward_vmap(info, in_dims, grad_output, self, target, reduction, beta):
    if reduction not in (0, 2) or not grad_output.dtype == self.dtype == target.dtype:
        return vmap_loop(_ops.smooth_l1_loss_backward.default, info.batch_size, in_dims, grad_output, self, target,
                         reduction, beta)
    g, s, t = _aligned((grad_output, self, target), in_dims[:3], info.batch_size)
    return _ops.smooth_l1_loss_backward.default(g, s, t, reduction, beta), 0


register_autograd("torch_aclnn::smooth_l1_loss", _forward_backward, setup_context=_forward_setup, jvp=_forward_jvp)
register_autograd("torch_aclnn::smooth_l1_loss_backward", _backward_backward, setup_context=_backward_setup,
                  jvp=_backward_jvp)
register_vmap("torch_aclnn::smooth_l1_loss", _forward_vmap)
register_vmap("torch_aclnn::smooth_l1_loss_backward", _backward_vmap)
