"""The MaxPool3d family (docs/spec.md §9): max_pool3d_with_indices (aclnnMaxPool3dWithArgmax)
and its gradient max_pool3d_with_indices_backward (aclnnMaxPool3dWithArgmaxBackward),
4-D (N, D, H, W) or 5-D (N, C, D, H, W).

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/max_pool.h, csrc/cpu/max_pool.cpp, csrc/cuda/max_pool.cu, torch_aclnn/npu/max_pool.py,
torch_aclnn/testing/max_pool.py, and csrc/autograd/max_pool.cpp (the backward formula).
Its forward-mode formulas and vmap rules are below.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import torch

from ._args import bool_arg, int_array
from ._autograd import register_autograd
from ._calls import Operator, call_as, compiling, planned
from ._errors import invalid, require, tensors, write_out
from ._vmap import plane_vmap, register_vmap

__all__ = ["max_pool3d", "max_pool3d_with_indices", "max_pool3d_with_indices_backward"]

_ops = torch.ops.torch_aclnn
# Called as op[+compiling()](...): the direct call in eager code, the OpOverload when compiled (_calls.Operator).
_MAX_POOL = Operator.of("max_pool3d_with_indices")
_MAX_POOL_BACKWARD = Operator.of("max_pool3d_with_indices_backward")

Size3 = Union[int, Sequence[int]]


def _as_list(op: str, name: str, value: Size3) -> list:
    """An int or a list of ints as the list the schema takes (its length is the contract's rule)."""
    value = int_array(op, name, value, scalar=True)
    return value if isinstance(value, list) else [value]


def _window(op: str, kernel_size: Size3, stride: Optional[Size3], padding: Size3, dilation: Size3,
            ceil_mode: bool) -> tuple:
    """The pooling's arguments as the operators take them (the lengths and
    values are the contract's rules)."""
    return (_as_list(op, "kernel_size", kernel_size), [] if stride is None else _as_list(op, "stride", stride),
            _as_list(op, "padding", padding), _as_list(op, "dilation", dilation), bool_arg(op, "ceil_mode", ceil_mode))


def _window_plan(op: str, _input: None, kernel_size, stride, padding, dilation, ceil_mode) -> tuple:
    """:func:`_window` as a plan (:func:`planned`, the same for every input),
    the arguments it needs given."""
    require(op, kernel_size=kernel_size, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    return _window(op, kernel_size, stride, padding, dilation, ceil_mode)


def triples(kernel_size: list, stride: list, padding: list, dilation: list) -> tuple:
    """The operators' lists (1 or 3 elements; stride also 0: kernel_size's)
    as 3 ints each, (D, H, W), as the contract expands them."""
    def three(v, default=None):
        v = [int(e) for e in v]
        return default if not v else v * 3 if len(v) == 1 else v
    k = three(kernel_size)
    return k, three(stride, k), three(padding), three(dilation)


def plan(op: str, input: torch.Tensor, kernel_size: Size3, stride: Optional[Size3], padding: Size3,
         dilation: Size3, ceil_mode: bool) -> tuple:
    """F.max_pool3d's arguments as the operators' lists (kernel_size,
    stride, padding, dilation, ceil_mode), checked by the contract's rules on
    them (rows 5-9), raising its ValueError or TypeError: what the drop-in
    decision (torch_aclnn/_dropin.py) needs to know before it routes a call,
    as plain Python (the contract itself is csrc/contracts/max_pool.h)."""
    k, s, p, d, ceil_mode = _window(op, kernel_size, stride, padding, dilation, ceil_mode)
    for name, v, lengths in (("kernel_size", k, (1, 3)), ("stride", s, (0, 1, 3)), ("padding", p, (1, 3)),
                             ("dilation", d, (1, 3))):
        if len(v) not in lengths:
            raise invalid(op, f"{name} must have {', '.join(map(str, lengths))} elements, got {len(v)}")
    k3, s3, p3, d3 = triples(k, s, p, d)
    if not (all(0 < v < 2 ** 31 for v in k3 + s3 + d3) and all(0 <= p3[i] <= k3[i] // 2 for i in range(3))):
        raise invalid(op, f"kernel_size {k}, stride {s}, padding {p} or dilation {d} breaks the contract")
    for i, n in enumerate(input.shape[-3:]):  # (symbolic sizes: the comparisons become guards)
        top = n + 2 * p3[i] - d3[i] * (k3[i] - 1) - 1 + (s3[i] - 1 if ceil_mode else 0)
        if top < 0:
            raise invalid(op, f"the pooled size is < 1 on axis {i}")
        o = top // s3[i] + 1
        if ceil_mode and (o - 1) * s3[i] >= n + p3[i]:
            o = o - 1
        for q in range(-(-p3[i] // s3[i])):  # the windows that start in the padding
            if q >= o:
                break
            start = q * s3[i] - p3[i]
            first = start + -(start // d3[i]) * d3[i]  # the first tap >= 0
            if first >= n:
                raise invalid(op, f"a pooling window has no tap inside the input on axis {i}")
    return k, s, p, d, ceil_mode


def max_pool3d_with_indices(input: torch.Tensor, kernel_size: Size3, stride: Optional[Size3] = None,
                            padding: Size3 = 0, dilation: Size3 = 1,
                            ceil_mode: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """aclnnMaxPool3dWithArgmax: ``F.max_pool3d(..., return_indices=True)``.

    Returns the maximum of every pooling window and its flat (D, H, W)
    position in ``input`` (int64), as aten: a NaN wins over any number (a
    later NaN over an earlier one), and a window whose taps are all -inf
    gives its first tap. Its gradient is
    :func:`max_pool3d_with_indices_backward`, deterministic on every device.
    ``kernel_size``, ``padding`` and ``dilation`` are an int or 1 or 3 ints,
    ``stride`` also None (= ``kernel_size``); ``padding`` is at most half the
    kernel size. float32, float64, float16 or bfloat16, any strides.
    """
    return _pool("max_pool3d_with_indices", input, kernel_size, stride, padding, dilation, ceil_mode)


def _pool(op: str, input, kernel_size, stride, padding, dilation, ceil_mode) -> Tuple[torch.Tensor, torch.Tensor]:
    """max_pool3d_with_indices for the function ``op`` the user called (its errors name it)."""
    if not isinstance(input, torch.Tensor):
        require(op, input=input)
        tensors(op, input=input)
    window = planned(_window_plan, op, None, kernel_size, stride, padding, dilation, ceil_mode)
    if op == "max_pool3d_with_indices":
        values, indices = _MAX_POOL[+compiling()](input, *window)
    else:
        values, indices = call_as(op, _MAX_POOL[+compiling()], input, *window)
    return values, indices  # (a tuple, also of torch.fx proxies under symbolic tracing)


def max_pool3d(input: torch.Tensor, kernel_size: Size3, stride: Optional[Size3] = None, padding: Size3 = 0,
               dilation: Size3 = 1, ceil_mode: bool = False, return_indices: bool = False):
    """``F.max_pool3d`` through :func:`max_pool3d_with_indices`: the values, or
    (values, indices) with ``return_indices`` (any value, tested for truth as F does)."""
    values, indices = _pool("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode)
    return (values, indices) if return_indices else values


def max_pool3d_with_indices_backward(grad_output: torch.Tensor, self: torch.Tensor, indices: torch.Tensor,
                                     kernel_size: Size3, stride: Optional[Size3] = None, padding: Size3 = 0,
                                     dilation: Size3 = 1, ceil_mode: bool = False, *,
                                     out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnMaxPool3dWithArgmaxBackward: the gradient of
    ``F.max_pool3d(self, kernel_size, stride, padding, dilation, ceil_mode,
    return_indices=True)`` with respect to ``self``.

    ``grad_input = zeros_like(self)``, then for every pooled position ``o``:
    ``grad_input[n][c][indices[n][c][o]] += grad_output[n][c][o]`` over the
    flattened (D, H, W) axis (4-D: without c). Deterministic on every
    backend: a position covered by several windows (stride < kernel_size)
    sums its terms in increasing ``o``, so CPU and CUDA give the same bits.
    ``self`` gives shape, dtype and layout only.

    ``kernel_size``, ``padding`` and ``dilation`` are an int or 1 or 3 ints,
    ``stride`` also None or [] (= kernel_size); ``indices`` are int32 or
    int64, of ``grad_output``'s (the pooled) shape, each a position of its own
    output's pooling window, as ``max_pool3d`` returns them: any other raises
    IndexError naming it. ``out=`` has ``self``'s shape and dtype, any layout.
    """
    op = "max_pool3d_with_indices_backward"
    if not (isinstance(grad_output, torch.Tensor) and isinstance(self, torch.Tensor)
            and isinstance(indices, torch.Tensor)):
        require(op, grad_output=grad_output, self=self, indices=indices)
        tensors(op, grad_output=grad_output, self=self, indices=indices)
    window = planned(_window_plan, op, None, kernel_size, stride, padding, dilation, ceil_mode)
    if out is not None:
        return write_out(op, out, grad_output, self, indices, *window)
    return _MAX_POOL_BACKWARD[+compiling()](grad_output, self, indices, *window)


# ---------------------------------------------------------------------------
# Forward-mode AD and vmap (the backward formulas: csrc/autograd/max_pool.cpp).
# The forward's tangent is the input's tangent gathered at the indices (the
# values are the input's elements there). The backward is linear in
# grad_output, so its tangent is the operator applied to the tangent; self
# lends only its shape and dtype. vmap folds the batch dimension into N
# (indices index within their own (n, c) plane).

def _forward_jvp(args, dtype, t_self, *_):
    indices = args[7]  # (self, kernel_size, stride, padding, dilation, ceil_mode, values, indices)
    def planes(t):  # (N x C planes: reshape, which vmap batches, not flatten / view)
        return t.reshape(*t.shape[:-3], t.shape[-3] * t.shape[-2] * t.shape[-1])
    return planes(t_self).gather(-1, planes(indices)).reshape(indices.shape)


def _backward_jvp(args, dtype, t_grad_output, *_):
    _, self_like, *rest = args
    if t_grad_output is None:  # only self has a tangent, and it lends only its shape
        return torch.zeros(self_like.shape, dtype=self_like.dtype, device=self_like.device)
    return _ops.max_pool3d_with_indices_backward(t_grad_output, self_like, *rest)


register_autograd("torch_aclnn::max_pool3d_with_indices", _forward_jvp)
register_autograd("torch_aclnn::max_pool3d_with_indices_backward", _backward_jvp)
register_vmap("torch_aclnn::max_pool3d_with_indices", plane_vmap(_ops.max_pool3d_with_indices.default, 1))
register_vmap("torch_aclnn::max_pool3d_with_indices_backward",  # (self lends only its shape and dtype)
              plane_vmap(_ops.max_pool3d_with_indices_backward.default, 3, shape_only=(1,)))
