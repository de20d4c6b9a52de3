"""The ELU family (docs/spec.md §3): elu and elu_backward (aclnnEluBackward).

ELU, SELU and CELU are all the one operator
``elu(x) = scale * x if x >= 0 else alpha * scale * expm1(input_scale * x)``
with different parameters (x == +-0 gives +-0 * scale, as aten's CPU kernel);
the backward's negative branch takes x == 0, as aten's.

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/elu.h, csrc/cpu/elu.cpp, csrc/cuda/elu.cu, torch_aclnn/npu/elu.py,
torch_aclnn/testing/elu.py, and csrc/autograd/elu.cpp (the backward formulas).
Its forward-mode formulas and vmap rules are below.
"""
from __future__ import annotations

import math
import sys
from typing import Optional

import torch

from ._args import bool_arg, real_arg
from ._autograd import register_autograd, reverse
from ._calls import Operator, call_as, compiling
from ._errors import invalid, require, tensors, write_out
from ._vmap import batch_first, register_vmap, vmap_loop

__all__ = ["elu", "selu", "celu", "elu_backward"]

_ops = torch.ops.torch_aclnn
# Called as op[+compiling()](...): the direct call in eager code, the OpOverload when compiled (_calls.Operator).
_ELU = Operator.of("elu")
_ELU_BACKWARD = Operator.of("elu_backward")
_Tensor = torch.Tensor

# torch.nn.functional.selu's constants (aten's SELU_ALPHA / SELU_SCALE).
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


class _EluInplace(torch.autograd.Function):
    """``input.copy_(elu(input))``, differentiated from the saved result as
    aten's ``elu_`` is (elu_backward with ``is_result=True``, so no copy of
    the input is kept for autograd)."""

    @staticmethod
    def forward(ctx, input, alpha, scale, input_scale):
        # (through .data: mark_dirty bumps the version counter once, as aten's elu_ does)
        input.data.copy_(_ELU[+compiling()](input, alpha, scale, input_scale))
        ctx.mark_dirty(input)
        ctx.save_for_backward(input)
        ctx.params = (alpha, scale, input_scale)
        return input

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return _ops.elu_backward(grad, *ctx.params, True, result), None, None, None


def _elu(input: torch.Tensor, alpha, scale, input_scale, inplace: bool) -> torch.Tensor:
    """The operator, or with ``inplace=True`` its in-place form: the input is
    overwritten with the result and returned, with torch's in-place rules
    (version counter, leaf check; the backward of a call with alpha < 0 is an
    error, as the result does not determine the input). The kernel itself is
    out-of-place, so the call briefly needs one temporary of the input's size."""
    if not inplace:
        return _ELU[+compiling()](input, alpha, scale, input_scale)
    if torch.is_grad_enabled() and input.requires_grad:
        return _EluInplace.apply(input, alpha, scale, input_scale)
    return input.copy_(_ELU[+compiling()](input, alpha, scale, input_scale))


def _params(op: str, **params) -> list:
    """alpha, scale, input_scale: real numbers (the contract then checks that
    they fit the compute type, naming the same arguments)."""
    return [real_arg(op, name, value, tensor=True) for name, value in params.items()]


def elu(input: torch.Tensor, alpha: float = 1.0, inplace: bool = False, *, scale: float = 1.0,
        input_scale: float = 1.0) -> torch.Tensor:
    """``F.elu(input, alpha)``; ``scale`` and ``input_scale`` expose the full
    operator: ``scale * x`` for x >= 0, ``alpha * scale * expm1(input_scale * x)``
    for x < 0.

    float32, float64, float16, bfloat16 (half/bfloat16 computed in float32);
    0 to 8 dims; any strides. Differentiable (the gradient is
    :func:`elu_backward` with ``is_result=False``).
    """
    # The common call first: arguments of the schema's own types go straight to the operator (its
    # contract checks the values); any other call takes the checks below, which name the argument.
    if type(alpha) is float and type(scale) is float and type(input_scale) is float and inplace is False \
            and isinstance(input, _Tensor):
        return _ELU[+compiling()](input, alpha, scale, input_scale)
    require("elu", input=input, alpha=alpha, scale=scale, input_scale=input_scale)
    tensors("elu", input=input)
    alpha, scale, input_scale = _params("elu", alpha=alpha, scale=scale, input_scale=input_scale)
    return _elu(input, alpha, scale, input_scale, bool(inplace))


def selu(input: torch.Tensor, inplace: bool = False) -> torch.Tensor:
    """``F.selu(input)``: :func:`elu` with alpha = 1.6732632423543772 and
    scale = 1.0507009873554805."""
    if inplace is False and isinstance(input, _Tensor):  # (as in elu)
        return call_as("selu", _ELU[+compiling()], input, SELU_ALPHA, SELU_SCALE, 1.0)
    require("selu", input=input)
    tensors("selu", input=input)
    return call_as("selu", _elu, input, SELU_ALPHA, SELU_SCALE, 1.0, bool(inplace))


_FLOAT32_MAX = float(torch.finfo(torch.float32).max)


def celu_params(input: torch.Tensor, alpha) -> tuple:
    """CELU's (alpha, input_scale = 1 / alpha), checked as celu's own
    arguments. alpha is any real number but 0 (NaN and +-inf included, as in
    F.celu) such that alpha and 1 / alpha are representable in the compute
    type: float64 for float64 tensors, float32 otherwise. So a tiny alpha
    whose reciprocal overflows (|alpha| < 1 / 3.4e38 for float32 input,
    about 5.6e-309 for float64) is a contract error naming alpha."""
    op = "celu"
    alpha = real_arg(op, "alpha", alpha, tensor=True)
    if isinstance(alpha, (torch.SymInt, torch.SymFloat)):
        return alpha, 1.0 / alpha
    if alpha == 0:
        raise invalid(op, "alpha must not be 0 (input_scale = 1 / alpha), got 0")
    dtype = getattr(input, "dtype", None)
    wide = dtype == torch.float64
    inv = 1.0 / alpha
    if abs(alpha) < math.inf:  # (a comparison, not math.isfinite: traceable on a symbolic alpha)
        limit, compute = (sys.float_info.max, "float64") if wide else (_FLOAT32_MAX, "float32")
        if not abs(alpha) <= limit:
            raise invalid(op, f"alpha must fit in {compute} (the compute type of {dtype} tensors), got {alpha!r}")
        if not abs(inv) <= limit:
            raise invalid(op, f"1 / alpha (celu's input_scale) must fit in {compute} (the compute type of {dtype} "
                          f"tensors), so |alpha| must be at least about {1 / limit:.3g}, got alpha={alpha!r}")
    return alpha, inv


def celu(input: torch.Tensor, alpha: float = 1.0, inplace: bool = False) -> torch.Tensor:
    """``F.celu(input, alpha)``: :func:`elu` with scale = 1 and
    input_scale = 1 / alpha. alpha must not be 0, and 1 / alpha must be
    finite in the compute type (float32 but for float64 tensors), see
    :func:`celu_params`."""
    require("celu", input=input, alpha=alpha)
    tensors("celu", input=input)
    alpha, input_scale = celu_params(input, alpha)
    return call_as("celu", _elu, input, alpha, 1.0, input_scale, bool(inplace))


def elu_backward(grad_output: torch.Tensor, alpha: float, scale: float, input_scale: float, is_result: bool,
                 self_or_result: torch.Tensor, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnEluBackward: the gradient of :func:`elu` (``torch.ops.aten.elu_backward``).

    ``is_result=False``: ``self_or_result`` is the forward input x and
    ``grad_input = grad_output * (scale if x > 0 else input_scale * alpha * scale * exp(input_scale * x))``.
    ``is_result=True``: ``self_or_result`` is the forward output y (needs alpha >= 0) and
    ``grad_input = grad_output * (scale if y > 0 else input_scale * (y + alpha * scale))``.

    ``out``: grad_output's shape, and grad_output's dtype or a wider float
    dtype (values are rounded in grad_output's dtype, then widened exactly).
    """
    if type(alpha) is float and type(scale) is float and type(input_scale) is float and type(is_result) is bool \
            and out is None and isinstance(grad_output, _Tensor) and isinstance(self_or_result, _Tensor):  # (as in elu)
        return _ELU_BACKWARD[+compiling()](grad_output, alpha, scale, input_scale, is_result, self_or_result)
    require("elu_backward", grad_output=grad_output, alpha=alpha, scale=scale, input_scale=input_scale,
            is_result=is_result, self_or_result=self_or_result)
    tensors("elu_backward", grad_output=grad_output, self_or_result=self_or_result)
    alpha, scale, input_scale = _params("elu_backward", alpha=alpha, scale=scale, input_scale=input_scale)
    is_result = bool_arg("elu_backward", "is_result", is_result)
    if out is not None:
        return write_out("elu_backward", out, grad_output, alpha, scale, input_scale, is_result, self_or_result)
    return _ELU_BACKWARD[+compiling()](grad_output, alpha, scale, input_scale, is_result, self_or_result)


# ---------------------------------------------------------------------------
# Forward-mode AD and vmap (the backward formulas: csrc/autograd/elu.cpp).
#   elu          jvp: elu_backward(t, ..., is_result=False, x)
#   elu_backward linear in grad_output: elu_backward(t_grad_output, ...);
#                w.r.t. self_or_result the derivative is elementwise, so the
#                tangent is the backward formula applied to t_self_or_result
#   vmap         elementwise: the operator on the batched tensors, flattened
#                to the contract's rank limit where the batch dimension adds one.

_MAX_DIMS = 8  # csrc/contracts/elu.h


def _elu_jvp(args, dtype, t, *_):
    self, alpha, scale, input_scale = args
    return _ops.elu_backward(t, alpha, scale, input_scale, False, self)


def _elu_backward_jvp(args, dtype, t_grad_output, _alpha, _scale, _input_scale, _is_result, t_x):
    result = None
    if t_grad_output is not None:
        result = _ops.elu_backward(t_grad_output, *args[1:])
    if t_x is not None:
        d = reverse("torch_aclnn::elu_backward", args, 5, t_x)
        result = d if result is None else result + d
    return result


def _elu_vmap(info, in_dims, self, alpha=1, scale=1, input_scale=1):
    bdim = in_dims[0]
    if self.dim() <= _MAX_DIMS:
        return _ops.elu.default(self, alpha, scale, input_scale), bdim
    if self.dim() > _MAX_DIMS + 1:  # beyond the contract unbatched too: its error
        return vmap_loop(_ops.elu.default, info.batch_size, in_dims, self, alpha, scale, input_scale)
    out = _ops.elu.default(self.flatten(0, 1), alpha, scale, input_scale)
    return out.unflatten(0, self.shape[:2]), bdim


def _elu_backward_vmap(info, in_dims, grad_output, alpha, scale, input_scale, is_result, self_or_result):
    args = (grad_output, alpha, scale, input_scale, is_result, self_or_result)
    g = batch_first(grad_output, in_dims[0], info.batch_size)
    x = batch_first(self_or_result, in_dims[5], info.batch_size)
    if g.shape != x.shape or g.dim() > _MAX_DIMS + 1:  # the contract's error, unbatched
        return vmap_loop(_ops.elu_backward.default, info.batch_size, in_dims, *args)
    if g.dim() <= _MAX_DIMS:
        return _ops.elu_backward.default(g, alpha, scale, input_scale, is_result, x), 0
    out = _ops.elu_backward.default(g.flatten(0, 1), alpha, scale, input_scale, is_result, x.flatten(0, 1))
    return out.unflatten(0, g.shape[:2]), 0


register_autograd("torch_aclnn::elu", _elu_jvp)
register_autograd("torch_aclnn::elu_backward", _elu_backward_jvp)
register_vmap("torch_aclnn::elu", _elu_vmap)
register_vmap("torch_aclnn::elu_backward", _elu_backward_vmap)
