"""The AvgPool3d family (docs/spec.md §12): avg_pool3d (aclnnAvgPool3d) and its
gradient avg_pool3d_backward (aclnnAvgPool3dBackward), 4-D or 5-D (N, C, D, H, W).

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/avg_pool.h, csrc/cpu/avg_pool.cpp, csrc/cuda/avg_pool.cu, torch_aclnn/npu/avg_pool.py,
torch_aclnn/testing/avg_pool.py, and csrc/autograd/avg_pool.cpp (the backward formulas).
Its forward-mode formulas and vmap rules are below.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import torch

from . import max_pool as _max_pool
from ._args import bool_arg, int_arg
from ._autograd import register_autograd
from ._calls import Operator, compiling, planned
from ._errors import invalid, require, tensors
from ._vmap import plane_vmap, register_vmap

__all__ = ["avg_pool3d", "avg_pool3d_backward"]

_ops = torch.ops.torch_aclnn
# Called as op[+compiling()](...): the direct call in eager code, the OpOverload when compiled (_calls.Operator).
_AVG_POOL = Operator.of("avg_pool3d")
_AVG_POOL_BACKWARD = Operator.of("avg_pool3d_backward")

Size3 = Union[int, Sequence[int]]


def _divisor(op: str, divisor_override) -> Optional[int]:
    """None or an int (its value's rule, != 0, is the contract's)."""
    return None if divisor_override is None else int_arg(op, "divisor_override", divisor_override)


def _window(op: str, kernel_size: Size3, stride: Optional[Size3], padding: Size3, ceil_mode: bool,
            count_include_pad: bool, divisor_override: Optional[int]) -> tuple:
    """The pooling's arguments as the operators take them (the lengths and
    values are the contract's rules)."""
    as_list = _max_pool._as_list
    return (as_list(op, "kernel_size", kernel_size), [] if stride is None else as_list(op, "stride", stride),
            as_list(op, "padding", padding), bool_arg(op, "ceil_mode", ceil_mode),
            bool_arg(op, "count_include_pad", count_include_pad), _divisor(op, divisor_override))


def _window_plan(op: str, _input: None, kernel_size, stride, padding, ceil_mode, count_include_pad,
                 divisor_override) -> tuple:
    """:func:`_window` as a plan (:func:`planned`, the same for every input),
    the arguments it needs given."""
    require(op, kernel_size=kernel_size, padding=padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    return _window(op, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def plan(op: str, input: torch.Tensor, kernel_size: Size3, stride: Optional[Size3], padding: Size3,
         ceil_mode: bool, count_include_pad: bool, divisor_override) -> tuple:
    """F.avg_pool3d's arguments as the operators' (kernel_size, stride,
    padding, ceil_mode, count_include_pad, divisor_override), checked by the
    contract's rules on them (rows 5-9: max_pool's rows without dilation,
    :func:`torch_aclnn.ops.max_pool.plan`, and kernel_size <= the input's size), raising its ValueError or
    TypeError: what the drop-in decision needs before it routes a call."""
    k, s, p, _, ceil_mode = _max_pool.plan(op, input, kernel_size, stride, padding, 1, ceil_mode)
    k3 = _max_pool.triples(k, s, p, [1])[0]
    for i, n in enumerate(input.shape[-3:]):  # (symbolic sizes: the comparisons become guards)
        if n < k3[i]:
            raise invalid(op, f"kernel_size must be <= self's size on every axis, got kernel_size {k}")
    divisor = _divisor(op, divisor_override)
    if divisor == 0:
        raise invalid(op, "divisor_override must be None or nonzero, got 0")
    return k, s, p, ceil_mode, bool_arg(op, "count_include_pad", count_include_pad), divisor


def avg_pool3d(input: torch.Tensor, kernel_size: Size3, stride: Optional[Size3] = None, padding: Size3 = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> torch.Tensor:
    """aclnnAvgPool3d: ``F.avg_pool3d``.

    The average of every pooling window: its taps inside ``input`` summed in
    increasing (d, h, w), divided by ``divisor_override`` when given, else by
    the window's size (with ``count_include_pad``: padding counted, the part
    beyond the padding that ``ceil_mode`` adds not) or its taps inside
    ``input``. ``kernel_size`` and ``padding`` are an int or 1 or 3 ints,
    ``stride`` also None (= ``kernel_size``); ``padding`` is at most half the
    kernel size. float32, float64, float16 or bfloat16 (computed in float32),
    any strides; the result keeps a channels_last_3d layout. Its gradient is
    :func:`avg_pool3d_backward`, deterministic on every device.
    """
    op = "avg_pool3d"
    if not isinstance(input, torch.Tensor):
        require(op, input=input)
        tensors(op, input=input)
    window = planned(_window_plan, op, None, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)
    return _AVG_POOL[+compiling()](input, *window)


def avg_pool3d_backward(grad_output: torch.Tensor, self: torch.Tensor, kernel_size: Size3,
                        stride: Optional[Size3] = None, padding: Size3 = 0, ceil_mode: bool = False,
                        count_include_pad: bool = True, divisor_override: Optional[int] = None, *,
                        out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnAvgPool3dBackward: the gradient of ``F.avg_pool3d(self,
    kernel_size, stride, padding, ceil_mode, count_include_pad,
    divisor_override)`` with respect to ``self``.

    A gather on every backend: each element of the result sums
    ``grad_output[o] / divisor(o)`` over the pooled positions ``o`` whose
    windows cover it, in increasing ``o``, so CPU and CUDA give the same bits
    at any thread count. ``self`` gives shape, dtype and layout only.
    ``out=`` has ``self``'s shape and dtype, any layout.
    """
    op = "avg_pool3d_backward"
    if not (isinstance(grad_output, torch.Tensor) and isinstance(self, torch.Tensor)):
        require(op, grad_output=grad_output, self=self)
        tensors(op, grad_output=grad_output, self=self)
    window = planned(_window_plan, op, None, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)
    if out is not None:
        _ops.avg_pool3d_backward.grad_input(grad_output, self, *window, grad_input=out)
        return out
    return _AVG_POOL_BACKWARD[+compiling()](grad_output, self, *window)


# ---------------------------------------------------------------------------
# Forward-mode AD and vmap (the backward formulas: csrc/autograd/avg_pool.cpp).
# Both operators are linear in their first tensor: the tangent is the
# operator applied to it (self lends the backward only its shape and dtype).
# vmap folds the batch dimension into N (the (n, c) planes are independent).

def _forward_jvp(args, dtype, t_self, *_):
    return _ops.avg_pool3d(t_self, *args[1:7])


def _backward_jvp(args, dtype, t_grad_output, *_):
    _, self_like, *rest = args
    if t_grad_output is None:  # only self has a tangent, and it lends only its shape
        return torch.zeros(self_like.shape, dtype=self_like.dtype, device=self_like.device)
    return _ops.avg_pool3d_backward(t_grad_output, self_like, *rest[:6])


register_autograd("torch_aclnn::avg_pool3d", _forward_jvp)
register_autograd("torch_aclnn::avg_pool3d_backward", _backward_jvp)
register_vmap("torch_aclnn::avg_pool3d", plane_vmap(_ops.avg_pool3d.default, 1))
register_vmap("torch_aclnn::avg_pool3d_backward",  # (self lends only its shape and dtype)
              plane_vmap(_ops.avg_pool3d_backward.default, 2, shape_only=(1,)))
