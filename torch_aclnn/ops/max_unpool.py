"""The MaxUnpool3d family (docs/spec.md §5): max_unpool3d and max_unpool3d_backward,
4-D (N, D, H, W) or 5-D (N, C, D, H, W).

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/max_unpool.h, csrc/cpu/max_unpool.cpp, csrc/cuda/max_unpool.cu, torch_aclnn/npu/max_unpool.py,
torch_aclnn/testing/max_unpool.py, and csrc/autograd/max_unpool.cpp (the backward formulas).
Its forward-mode formulas and vmap rules are below.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import torch

from ._args import INT64_MAX, int_array, int_list, plain_ints
from ._autograd import register_autograd
from ._calls import Operator, compiling, planned
from ._errors import invalid, require, tensors, write_out
from ._vmap import plane_vmap, register_vmap

__all__ = ["max_unpool3d", "max_unpool3d_backward"]

_ops = torch.ops.torch_aclnn
# Called as op[+compiling()](...): the direct call in eager code, the OpOverload when compiled (_calls.Operator).
_MAX_UNPOOL = Operator.of("max_unpool3d")
_MAX_UNPOOL_BACKWARD = Operator.of("max_unpool3d_backward")

Size3 = Union[int, Sequence[int]]


def _unpool_output_size(op: str, input: torch.Tensor, kernel_size: list, stride: list, padding: list,
                        output_size) -> list:
    """F.max_unpool3d's output size: (in - 1) * stride + kernel_size - 2 * padding
    per axis, or ``output_size`` ((D, H, W), or 5 elements whose last three
    are used) when it lies strictly within ``stride`` of that default."""
    spatial = input.shape[-3:]
    default = [(spatial[d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(3)]
    if output_size is None:
        _check_default_size(op, input, default, kernel_size, stride, padding)
        return default
    output_size = int_list(op, "output_size", output_size, lengths=(3, 5), scalar=False,
                           what="3 (D, H, W) or 5 elements")
    if len(output_size) == 5:
        output_size = output_size[2:]
    for d in range(3):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not (lo < output_size[d] < hi):
            raise invalid(op, f"output_size[{d}] must be strictly between {lo} and {hi} (the default size "
                          f"{default[d]} -/+ stride[{d}]), got output_size {output_size}")
    return output_size


def _check_default_size(op: str, input: torch.Tensor, default: list, kernel_size: list, stride: list,
                        padding: list) -> None:
    """The default output size is computed from the user's kernel_size,
    stride and padding, so its errors name them (where it is concrete)."""
    if not all(isinstance(v, int) for v in default):
        return
    given = f"from kernel_size {kernel_size}, stride {stride}, padding {padding} and input shape {list(input.shape)}"
    if any(v <= 0 for v in default):
        raise invalid(op, f"the output size (in - 1) * stride + kernel_size - 2 * padding must be > 0 on every "
                      f"axis, got {default} {given} (padding too large for kernel_size and stride)")
    if math.prod(default) > INT64_MAX:
        raise invalid(op, f"the output size (in - 1) * stride + kernel_size - 2 * padding has a volume that "
                      f"overflows int64, got {default} {given}")
    spatial = list(input.shape[-3:])
    if all(isinstance(v, int) for v in spatial) and math.prod(default) < math.prod(spatial):
        raise invalid(op, f"the output size (in - 1) * stride + kernel_size - 2 * padding must have at least "
                      f"as many elements as the input's D*H*W ({math.prod(spatial)}), got {default} {given}")


def max_unpool3d(input: torch.Tensor, indices: torch.Tensor, kernel_size: Size3,
                 stride: Optional[Size3] = None, padding: Size3 = 0,
                 output_size: Optional[Sequence[int]] = None) -> torch.Tensor:
    """``F.max_unpool3d``: the partial inverse of ``F.max_pool3d``.

    Scatters ``input`` into a zero-filled (..., oD, oH, oW) tensor at the
    flat positions ``indices`` (as returned by ``max_pool3d(...,
    return_indices=True)``). Deterministic on every backend: where indices
    repeat, the element with the largest flat input position wins. An index
    outside [0, oD*oH*oW) raises IndexError.

    ``stride`` defaults to ``kernel_size``; the output size defaults to
    ``(in - 1) * stride + kernel_size - 2 * padding`` per axis, as in
    ``F.max_unpool3d``. Works on 4-D (N, D, H, W) and 5-D (N, C, D, H, W)
    input of any dtype but bool and complex (int64 included).

    ``kernel_size``, ``stride`` and ``padding`` are an int or 3 ints
    (``kernel_size`` and ``stride`` > 0); ``output_size`` is 3 or 5 ints.
    Anything else raises the contract's TypeError / ValueError naming the
    argument.
    """
    op = "max_unpool3d"
    if not (isinstance(input, torch.Tensor) and isinstance(indices, torch.Tensor)):
        require(op, input=input, indices=indices)
        tensors(op, input=input, indices=indices)
    plan = planned(_checked_plan, op, input, kernel_size, stride, padding, output_size)
    return _MAX_UNPOOL[+compiling()](input, indices, *plan)


def _checked_plan(op: str, input: torch.Tensor, kernel_size, stride, padding, output_size) -> tuple:
    """:func:`plan` for max_unpool3d's own API (a plan, :func:`planned`):
    the arguments it needs given, the input 4-D or 5-D."""
    require(op, kernel_size=kernel_size, padding=padding)
    if input.dim() not in (4, 5):
        raise invalid(op, f"input must be 4-D (N, D, H, W) or 5-D (N, C, D, H, W), got {input.dim()}-D "
                      f"with shape {list(input.shape)}")
    return plan(op, input, kernel_size, stride, padding, output_size)


def plan(op: str, input: torch.Tensor, kernel_size: Size3, stride: Optional[Size3], padding: Size3,
         output_size) -> tuple:
    """F.max_unpool3d's arguments as the operator's (output_size, stride,
    padding), checked: contract errors naming the argument."""
    kernel_size = int_list(op, "kernel_size", kernel_size, minimum=1)
    stride = kernel_size if stride is None else int_list(op, "stride", stride, minimum=1)
    padding = int_list(op, "padding", padding)
    return _unpool_output_size(op, input, kernel_size, stride, padding, output_size), stride, padding


def max_unpool3d_backward(grad_output: torch.Tensor, self: torch.Tensor, indices: torch.Tensor,
                          output_size: Sequence[int], stride: Sequence[int], padding: Sequence[int], *,
                          out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnMaxUnpool3dBackward: the gradient of :func:`max_unpool3d` w.r.t. its input.

    A gather over the flattened (oD, oH, oW) axis:
    ``out[n][c][i] = grad_output[n][c][indices[n][c][i]]`` (4-D: without c), so
    ``out`` has ``self``'s shape (``self`` gives shape and dtype only). Every
    index is checked: one outside [0, oD*oH*oW) raises IndexError naming it.
    ``stride`` and ``padding`` are validated (3 elements, stride > 0) but not
    used. ``out=`` must be contiguous, of ``self``'s shape and dtype.
    """
    op = "max_unpool3d_backward"
    if not compiling() and out is None and isinstance(grad_output, torch.Tensor) \
            and isinstance(self, torch.Tensor) and isinstance(indices, torch.Tensor) \
            and plain_ints(output_size, stride, padding):  # (as in upsample.py)
        try:
            return _MAX_UNPOOL_BACKWARD.direct(grad_output, self, indices, output_size, stride, padding)
        except RuntimeError as e:  # (an element beyond int64: the checks name it; plain_ints)
            refused = e
        _int_arrays(op, output_size, stride, padding)
        raise refused
    require(op, grad_output=grad_output, self=self, indices=indices, output_size=output_size, stride=stride,
            padding=padding)
    tensors(op, grad_output=grad_output, self=self, indices=indices)
    output_size, stride, padding = _int_arrays(op, output_size, stride, padding)
    if out is not None:
        return write_out(op, out, grad_output, self, indices, output_size, stride, padding)
    return _MAX_UNPOOL_BACKWARD[+compiling()](grad_output, self, indices, output_size, stride, padding)


def _int_arrays(op: str, output_size, stride, padding) -> tuple:
    return int_array(op, "output_size", output_size), int_array(op, "stride", stride), int_array(op, "padding", padding)


# ---------------------------------------------------------------------------
# Forward-mode AD and vmap (the backward formulas: csrc/autograd/max_unpool.cpp).
# Both operators are linear in their floating tensor input, so the tangent is
# the same operator applied to the tangent (exact for any indices: the
# scatter keeps the same element for the tangent as for the value);
# max_unpool3d_backward's self lends only its shape and dtype. vmap folds the
# batch dimension into N (indices index within their own (n, c) plane).

def _forward_jvp(args, dtype, t_self, *_):
    return _ops.max_unpool3d(t_self, *args[1:])


def _backward_jvp(args, dtype, t_grad_output, *_):
    _, self_like, indices, output_size, stride, padding = args
    if t_grad_output is None:  # only self has a tangent, and it lends only its shape
        return torch.zeros(self_like.shape, dtype=self_like.dtype, device=self_like.device)
    return _ops.max_unpool3d_backward(t_grad_output, self_like, indices, output_size, stride, padding)


register_autograd("torch_aclnn::max_unpool3d", _forward_jvp)
register_autograd("torch_aclnn::max_unpool3d_backward", _backward_jvp)
register_vmap("torch_aclnn::max_unpool3d", plane_vmap(_ops.max_unpool3d.default, 2))
register_vmap("torch_aclnn::max_unpool3d_backward",  # (self lends only its shape and dtype)
              plane_vmap(_ops.max_unpool3d_backward.default, 3, shape_only=(1,)))
