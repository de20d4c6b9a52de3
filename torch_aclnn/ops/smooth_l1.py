"""The SmoothL1 family (docs/spec.md §4): smooth_l1_loss and its backward,
aclnnSmoothL1LossBackward.

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/smooth_l1.h, csrc/cpu/smooth_l1.cpp, csrc/cuda/smooth_l1.cu, torch_aclnn/npu/smooth_l1.py,
torch_aclnn/testing/smooth_l1.py, and csrc/autograd/smooth_l1.cpp (the backward formulas).
Its forward-mode formulas and vmap rules are below.

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

from ._args import int_arg, real_arg
from ._autograd import register_autograd, reverse
from ._calls import Operator, call_as, compiling
from ._errors import invalid, require, tensors, write_out
from ._vmap import batch_first, register_vmap, vmap_loop

__all__ = ["smooth_l1_loss", "smooth_l1_loss_backward", "huber_loss"]

_ops = torch.ops.torch_aclnn
# Called as op[+compiling()](...): the direct call in eager code, the OpOverload when compiled (_calls.Operator).
_SMOOTH_L1 = Operator.of("smooth_l1_loss")
_SMOOTH_L1_BACKWARD = Operator.of("smooth_l1_loss_backward")
_Tensor = torch.Tensor

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}

Reduction = Union[str, int]


def _reduction(op: str, reduction: Reduction) -> int:
    """'none' | 'mean' | 'sum' (as F.smooth_l1_loss) or the ints 0 | 1 | 2."""
    if isinstance(reduction, str):
        if reduction in _REDUCTIONS:
            return _REDUCTIONS[reduction]
    elif isinstance(reduction, int) and not isinstance(reduction, bool):
        return int_arg(op, "reduction", reduction)  # (int64's range; the rest is the contract's, on every backend)
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
    # The common call first: arguments of the schema's own types go straight to the operator (its
    # contract checks the values); any other call takes the checks below, which name the argument.
    if type(beta) is float and type(reduction) is str and reduction in _REDUCTIONS and isinstance(input, _Tensor) \
            and isinstance(target, _Tensor):
        return _SMOOTH_L1[+compiling()](input, target, _REDUCTIONS[reduction], beta)
    op = "smooth_l1_loss"
    require(op, input=input, target=target, reduction=reduction, beta=beta)
    tensors(op, input=input, target=target)
    beta = real_arg(op, "beta", beta, tensor=True)
    return _SMOOTH_L1[+compiling()](input, target, _reduction(op, reduction), beta)


def huber_loss(input: torch.Tensor, target: torch.Tensor, reduction: Reduction = "mean",
               delta: float = 1.0, weight: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``F.huber_loss(input, target, reduction, delta, weight)`` for ``delta > 0``,
    computed as ``delta * smooth_l1_loss(input, target, reduction, beta=delta)``
    (``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``):
    the same aclnn operators forward and backward, so it is differentiable
    twice. The product rounds once more than aten's huber_loss (within an ulp
    or two). With ``weight`` (input's shape, as torch requires) the elementwise
    loss is multiplied by it and then summed or averaged, as F.huber_loss does."""
    op = "huber_loss"
    require(op, input=input, target=target, reduction=reduction, delta=delta)
    tensors(op, input=input, target=target)
    delta = real_arg(op, "delta", delta, tensor=True)
    if not (delta > 0 and delta < math.inf):
        raise invalid(op, f"delta must be finite and > 0, got {delta!r}")
    reduction = _reduction(op, reduction)
    if weight is None:
        return call_as(op, _SMOOTH_L1[+compiling()], input, target, reduction, delta) * delta
    tensors(op, weight=weight)
    if weight.shape != input.shape:
        raise invalid(op, f"weight must have input's shape {list(input.shape)}, got {list(weight.shape)}")
    if reduction not in (0, 1, 2):  # (the contract's rule and words, before any work)
        raise invalid(op, f"reduction must be 0 ('none'), 1 ('mean') or 2 ('sum'), got {reduction}")
    weighted = call_as(op, _SMOOTH_L1[+compiling()], input, target, 0, delta) * delta * weight
    return weighted if reduction == 0 else weighted.sum() if reduction == 2 else weighted.mean()


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
    if type(beta) is float and type(reduction) is str and reduction in _REDUCTIONS and out is None \
            and isinstance(grad_output, _Tensor) and isinstance(input, _Tensor) and isinstance(target, _Tensor):
        # (as in smooth_l1_loss)
        return _SMOOTH_L1_BACKWARD[+compiling()](grad_output, input, target, _REDUCTIONS[reduction], beta)
    op = "smooth_l1_loss_backward"
    require(op, grad_output=grad_output, input=input, target=target, reduction=reduction, beta=beta)
    tensors(op, grad_output=grad_output, input=input, target=target)
    r = _reduction(op, reduction)
    beta = real_arg(op, "beta", beta)
    if out is not None:
        return write_out(op, out, grad_output, input, target, r, beta)
    return _SMOOTH_L1_BACKWARD[+compiling()](grad_output, input, target, r, beta)


# ---------------------------------------------------------------------------
# Forward-mode AD and vmap (the backward formulas: csrc/autograd/smooth_l1.cpp).
# With d = self - target (broadcast) and B(g) = smooth_l1_loss_backward(g, self,
# target, ...) = norm * l'(d) * g:
#
#   smooth_l1_loss:          jvp: reduce(B_none(t_self - t_target)): 'none' as is,
#                            'mean' its mean, 'sum' its sum (aten's formula)
#   smooth_l1_loss_backward: jvp: B(t_grad_output), plus the second derivative
#                            (csrc/autograd/smooth_l1.cpp's second(), elementwise in
#                            the broadcast shape) applied to t_self - t_target: the
#                            backward formula w.r.t. self, where self has the
#                            broadcast shape already, which is when its tangent
#                            needs no summing; 'mean' divides by numel(broadcast(self,
#                            target)) of the call, not of the widened self
#   vmap:                    elementwise where that is exact (reduction 'none', and
#                            the backward's 'sum', whose norm is 1; all tensors of
#                            one dtype, so that the batch dimension cannot change
#                            the type promotion of 0-dim tensors): the batched
#                            tensors aligned, batch dimension first. 'mean' and
#                            'sum' losses (reduced per batch element in float64)
#                            and the backward's 'mean' (norm per batch element):
#                            the operator once per batch element.

def _difference(t_self, t_target):
    """t_self - t_target, either of them None (no tangent)."""
    if t_target is None:
        return t_self
    return -t_target if t_self is None else t_self - t_target


def _forward_jvp(args, dtype, t_self, t_target, *_):
    self, target, reduction, beta = args
    t = _ops.smooth_l1_loss_backward(_difference(t_self, t_target), self, target, 0, beta)
    if reduction == 1:
        t = t.mean()
    elif reduction == 2:
        t = t.sum()
    return t.to(dtype)


def _backward_jvp(args, dtype, t_grad_output, t_self, t_target, *_):
    grad_output, self, target, reduction, beta = args
    result = None
    if t_grad_output is not None:
        result = _ops.smooth_l1_loss_backward(t_grad_output, self, target, reduction, beta)
    t = _difference(t_self, t_target)
    if t is not None:
        shape = torch.broadcast_shapes(grad_output.shape, self.shape, target.shape)
        # (self widened to the broadcast shape and the result's dtype, so that the formula
        # neither sums nor rounds: the same d = self - target, compared in the same opmath.
        # The widened self would change the 'mean' norm the formula reads from the shapes
        # of self and target, so it runs as 'sum' and the norm of this call's own
        # broadcast(self, target) is applied here)
        wide = [grad_output, self.expand(shape).to(dtype), target, 2 if reduction == 1 else reduction, beta]
        h = reverse("torch_aclnn::smooth_l1_loss_backward", wide, 1, t.expand(shape))
        if reduction == 1:
            h = h / math.prod(torch.broadcast_shapes(self.shape, target.shape))
        result = h if result is None else result + h
    return result.to(dtype)


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


register_autograd("torch_aclnn::smooth_l1_loss", _forward_jvp)
register_autograd("torch_aclnn::smooth_l1_loss_backward", _backward_jvp)
register_vmap("torch_aclnn::smooth_l1_loss", _forward_vmap)
register_vmap("torch_aclnn::smooth_l1_loss_backward", _backward_vmap)
