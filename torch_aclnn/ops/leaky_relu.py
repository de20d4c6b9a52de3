"""The LeakyReLU family (docs/spec.md §11): leaky_relu and leaky_relu_backward
(aclnnLeakyRelu / aclnnLeakyReluBackward).

``leaky_relu(x) = x if x > 0 else negative_slope * x``; x == 0 takes the
negative_slope branch. The gradient is ``grad * (1 if x > 0 else negative_slope)``,
where x is the forward's input, or its output when ``self_is_result``
(negative_slope >= 0: the output is > 0 exactly where the input is).

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/leaky_relu.h, csrc/cpu/leaky_relu.cpp, csrc/cuda/leaky_relu.cu,
torch_aclnn/npu/leaky_relu.py, torch_aclnn/testing/leaky_relu.py, and
csrc/autograd/leaky_relu.cpp (the backward formulas). Its forward-mode
formulas and vmap rules are below.
"""
from __future__ import annotations

from typing import Optional

import torch

from ._args import bool_arg, real_arg
from ._autograd import register_autograd
from ._calls import Operator, compiling
from ._errors import require, tensors
from ._vmap import batch_first, register_vmap, vmap_loop

__all__ = ["leaky_relu", "leaky_relu_", "leaky_relu_backward"]

_ops = torch.ops.torch_aclnn
# Called as op[+compiling()](...): the direct call in eager code, the OpOverload when compiled (_calls.Operator).
_LEAKY_RELU = Operator.of("leaky_relu")
_LEAKY_RELU_BACKWARD = Operator.of("leaky_relu_backward")
_Tensor = torch.Tensor


class _LeakyReluInplace(torch.autograd.Function):
    """``input.copy_(leaky_relu(input))``, differentiated from the saved result
    as aten's ``leaky_relu_`` is (leaky_relu_backward with
    ``self_is_result=True``, so no copy of the input is kept for autograd)."""

    @staticmethod
    def forward(ctx, input, negative_slope):
        # (through .data: mark_dirty bumps the version counter once, as aten's leaky_relu_ does)
        input.data.copy_(_LEAKY_RELU[+compiling()](input, negative_slope))
        ctx.mark_dirty(input)
        ctx.save_for_backward(input)
        ctx.negative_slope = negative_slope
        return input

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return _ops.leaky_relu_backward(grad, result, ctx.negative_slope, True), None


def _leaky_relu(input: torch.Tensor, negative_slope, inplace: bool) -> torch.Tensor:
    """The operator, or with ``inplace=True`` its in-place form: the input is
    overwritten with the result and returned, with torch's in-place rules
    (version counter, leaf check; the backward of a call with
    negative_slope < 0 is an error, as the result does not tell the branch).
    The kernel itself is out-of-place, so the call briefly needs one
    temporary of the input's size."""
    if not inplace:
        return _LEAKY_RELU[+compiling()](input, negative_slope)
    if torch.is_grad_enabled() and input.requires_grad:
        return _LeakyReluInplace.apply(input, negative_slope)
    return input.copy_(_LEAKY_RELU[+compiling()](input, negative_slope))


def leaky_relu(input: torch.Tensor, negative_slope: float = 0.01, inplace: bool = False) -> torch.Tensor:
    """``F.leaky_relu(input, negative_slope, inplace)``: ``x`` for x > 0,
    ``negative_slope * x`` for x <= 0.

    float32, float64, float16, bfloat16 (half/bfloat16 computed in float32);
    0 to 8 dims; any strides; negative_slope a real number (int or float).
    Differentiable (the gradient is :func:`leaky_relu_backward` with
    ``self_is_result=False``; with ``inplace=True`` from the result, as
    torch's in-place form).
    """
    # The common call first: arguments of the schema's own types go straight to the operator (its
    # contract checks the values); any other call takes the checks below, which name the argument.
    if type(negative_slope) is float and inplace is False and isinstance(input, _Tensor):
        return _LEAKY_RELU[+compiling()](input, negative_slope)
    require("leaky_relu", input=input, negative_slope=negative_slope)
    tensors("leaky_relu", input=input)
    negative_slope = real_arg("leaky_relu", "negative_slope", negative_slope, tensor=True)
    return _leaky_relu(input, negative_slope, bool(inplace))


def leaky_relu_(input: torch.Tensor, negative_slope: float = 0.01) -> torch.Tensor:
    """``F.leaky_relu_(input, negative_slope)``: :func:`leaky_relu` with
    ``inplace=True``."""
    return leaky_relu(input, negative_slope, True)


def leaky_relu_backward(grad_output: torch.Tensor, self: torch.Tensor, negative_slope: float, self_is_result: bool,
                        *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnLeakyReluBackward: the gradient of :func:`leaky_relu`
    (``torch.ops.aten.leaky_relu_backward``):
    ``grad_input = grad_output * (1 if x > 0 else negative_slope)``, where x
    is ``self``: the forward's input, or with ``self_is_result=True`` its
    output (then negative_slope must be >= 0).

    ``out``: grad_output's shape, and grad_output's dtype or a wider float
    dtype (values are rounded in grad_output's dtype, then widened exactly).
    """
    if type(negative_slope) is float and type(self_is_result) is bool and out is None \
            and isinstance(grad_output, _Tensor) and isinstance(self, _Tensor):  # (as in leaky_relu)
        return _LEAKY_RELU_BACKWARD[+compiling()](grad_output, self, negative_slope, self_is_result)
    op = "leaky_relu_backward"
    require(op, grad_output=grad_output, self=self, negative_slope=negative_slope, self_is_result=self_is_result)
    tensors(op, grad_output=grad_output, self=self)
    negative_slope = real_arg(op, "negative_slope", negative_slope)
    self_is_result = bool_arg(op, "self_is_result", self_is_result)
    if out is not None:
        _ops.leaky_relu_backward.grad_input(grad_output, self, negative_slope, self_is_result, grad_input=out)
        return out
    return _LEAKY_RELU_BACKWARD[+compiling()](grad_output, self, negative_slope, self_is_result)


# ---------------------------------------------------------------------------
# Forward-mode AD and vmap (the backward formulas: csrc/autograd/leaky_relu.cpp).
#   leaky_relu           jvp: leaky_relu_backward(t, x, negative_slope, False)
#   leaky_relu_backward  linear in grad_output: leaky_relu_backward(t_grad_output, ...);
#                        piecewise constant in self: no tangent from t_self
#   vmap                 elementwise: the operator on the batched tensors, flattened
#                        to the contract's rank limit where the batch dimension adds one.

_MAX_DIMS = 8  # csrc/contracts/elu.h (shared by leaky_relu.h)


def _leaky_relu_jvp(args, dtype, t, *_):
    self, negative_slope = args
    return _ops.leaky_relu_backward(t, self, negative_slope, False)


def _leaky_relu_backward_jvp(args, dtype, t_grad_output, t_self, *_):
    if t_grad_output is not None:
        return _ops.leaky_relu_backward(t_grad_output, *args[1:])
    return torch.zeros_like(t_self, dtype=dtype)


def _leaky_relu_vmap(info, in_dims, self, negative_slope=0.01):
    bdim = in_dims[0]
    if self.dim() <= _MAX_DIMS:
        return _ops.leaky_relu.default(self, negative_slope), bdim
    if self.dim() > _MAX_DIMS + 1:  # beyond the contract unbatched too: its error
        return vmap_loop(_ops.leaky_relu.default, info.batch_size, in_dims, self, negative_slope)
    out = _ops.leaky_relu.default(self.flatten(0, 1), negative_slope)
    return out.unflatten(0, self.shape[:2]), bdim


def _leaky_relu_backward_vmap(info, in_dims, grad_output, self, negative_slope, self_is_result):
    args = (grad_output, self, negative_slope, self_is_result)
    g = batch_first(grad_output, in_dims[0], info.batch_size)
    x = batch_first(self, in_dims[1], info.batch_size)
    if g.shape != x.shape or g.dim() > _MAX_DIMS + 1:  # the contract's error, unbatched
        return vmap_loop(_ops.leaky_relu_backward.default, info.batch_size, in_dims, *args)
    if g.dim() <= _MAX_DIMS:
        return _ops.leaky_relu_backward.default(g, x, negative_slope, self_is_result), 0
    out = _ops.leaky_relu_backward.default(g.flatten(0, 1), x.flatten(0, 1), negative_slope, self_is_result)
    return out.unflatten(0, g.shape[:2]), 0


register_autograd("torch_aclnn::leaky_relu", _leaky_relu_jvp)
register_autograd("torch_aclnn::leaky_relu_backward", _leaky_relu_backward_jvp)
register_vmap("torch_aclnn::leaky_relu", _leaky_relu_vmap)
register_vmap("torch_aclnn::leaky_relu_backward", _leaky_relu_backward_vmap)
