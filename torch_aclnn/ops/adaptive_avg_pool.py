"""The AdaptiveAvgPool3d family (docs/spec.md §13): adaptive_avg_pool3d (aclnnAdaptiveAvgPool3d)
and its gradient adaptive_avg_pool3d_backward (aclnnAdaptiveAvgPool3dBackward), 4-D (C, D, H, W)
or 5-D (N, C, D, H, W).

The family's other files share its stem (torch_aclnn/_registry.py):
csrc/contracts/adaptive_avg_pool.h, csrc/cpu/adaptive_avg_pool.cpp, csrc/cuda/adaptive_avg_pool.cu,
torch_aclnn/npu/adaptive_avg_pool.py, torch_aclnn/testing/adaptive_avg_pool.py, and
csrc/autograd/adaptive_avg_pool.cpp (the backward formulas). Its forward-mode formulas and vmap
rules are below.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import torch

from ._args import int_arg
from ._autograd import register_autograd
from ._calls import Operator, compiling, planned
from ._errors import invalid, require, tensors
from ._vmap import plane_vmap, register_vmap

__all__ = ["adaptive_avg_pool3d", "adaptive_avg_pool3d_backward"]

_ops = torch.ops.torch_aclnn
# Called as op[+compiling()](...): the direct call in eager code, the OpOverload when compiled (_calls.Operator).
_POOL = Operator.of("adaptive_avg_pool3d")
_POOL_BACKWARD = Operator.of("adaptive_avg_pool3d_backward")

Size3 = Union[int, Sequence[Optional[int]]]


def output_size_of(op: str, input: torch.Tensor, output_size: Size3) -> list:
    """``F.adaptive_avg_pool3d``'s output_size as the operator's 3 ints: an
    int for every axis, or 3 elements where None keeps the input's size on
    that axis (its type rules here; lengths and values: the contract's
    row 7, whose message is the same)."""
    if isinstance(output_size, (list, tuple, torch.Size)):
        if len(output_size) != 3:
            raise invalid(op, f"output_size must have 3 elements (D, H, W), got {len(output_size)} "
                          f"({list(output_size)})")
        if not isinstance(input, torch.Tensor) or input.dim() < 3:
            if any(v is None for v in output_size):
                raise invalid(op, "self must be 4-D (C, D, H, W) or 5-D (N, C, D, H, W) for an output_size "
                              f"with None, got {tuple(getattr(input, 'shape', ()))}")
            return [int_arg(op, "output_size", v, shown=output_size) for v in output_size]
        return [input.shape[i - 3] if v is None else int_arg(op, "output_size", v, shown=output_size)
                for i, v in enumerate(output_size)]
    return [int_arg(op, "output_size", output_size)] * 3


def _plan(op: str, input: torch.Tensor, output_size: Size3) -> list:
    require(op, input=input, output_size=output_size)
    tensors(op, input=input)
    return output_size_of(op, input, output_size)


def adaptive_avg_pool3d(input: torch.Tensor, output_size: Size3) -> torch.Tensor:
    """aclnnAdaptiveAvgPool3d: ``F.adaptive_avg_pool3d(input, output_size)``.

    Each output is the mean of its window, ``[floor(i*in/out),
    ceil((i+1)*in/out))`` per axis, summed in increasing (d, h, w) and
    divided by the window's three lengths in turn (float16/bfloat16 in
    float32, rounded once). ``output_size`` is an int or 3 elements, None
    keeping the input's size on that axis. 4-D (C, D, H, W) or 5-D
    (N, C, D, H, W) input, float32, float64, float16 or bfloat16, any
    strides; the result keeps a channels_last_3d input's layout. Its
    gradient is :func:`adaptive_avg_pool3d_backward`, deterministic on every
    device.
    """
    op = "adaptive_avg_pool3d"
    size = planned(_plan, op, input, output_size)
    return _POOL[+compiling()](input, size)


def adaptive_avg_pool3d_backward(grad_output: torch.Tensor, self: torch.Tensor, *,
                                 out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """aclnnAdaptiveAvgPool3dBackward: the gradient of
    ``F.adaptive_avg_pool3d(self, grad_output.shape[-3:])`` with respect to
    ``self``.

    ``grad_input[i]`` sums ``grad_output[o] / kd / kh / kw`` over the
    windows ``o`` that contain ``i``, in increasing (od, oh, ow): a gather,
    so the same bits on CPU and CUDA, at any thread count. ``self`` gives
    shape, dtype and layout only; ``grad_output`` has its leading axes and
    the pooled D, H, W. ``out=`` has ``self``'s shape and dtype, any layout.
    """
    op = "adaptive_avg_pool3d_backward"
    if not (isinstance(grad_output, torch.Tensor) and isinstance(self, torch.Tensor)):
        require(op, grad_output=grad_output, self=self)
        tensors(op, grad_output=grad_output, self=self)
    if out is not None:
        _ops.adaptive_avg_pool3d_backward.grad_input(grad_output, self, grad_input=out)
        return out
    return _POOL_BACKWARD[+compiling()](grad_output, self)


# ---------------------------------------------------------------------------
# Forward-mode AD and vmap (the backward formulas: csrc/autograd/adaptive_avg_pool.cpp).
# Both operators are linear in their first tensor, so the tangent is the
# operator applied to the tangent; the backward's self lends only its shape,
# dtype and layout. vmap folds the batch dimension into the first axis (the
# planes are independent).

def _forward_jvp(args, dtype, t_self, *_):
    return _ops.adaptive_avg_pool3d(t_self, args[1])


def _backward_jvp(args, dtype, t_grad_output, *_):
    _, self_like = args
    if t_grad_output is None:  # only self has a tangent, and it lends only its shape
        return torch.zeros(self_like.shape, dtype=self_like.dtype, device=self_like.device)
    return _ops.adaptive_avg_pool3d_backward(t_grad_output, self_like)


register_autograd("torch_aclnn::adaptive_avg_pool3d", _forward_jvp)
register_autograd("torch_aclnn::adaptive_avg_pool3d_backward", _backward_jvp)
register_vmap("torch_aclnn::adaptive_avg_pool3d", plane_vmap(_ops.adaptive_avg_pool3d.default, 1))
register_vmap("torch_aclnn::adaptive_avg_pool3d_backward",  # (self lends only its shape and dtype)
              plane_vmap(_ops.adaptive_avg_pool3d_backward.default, 2, shape_only=(1,)))
