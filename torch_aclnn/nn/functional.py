"""``torch.nn.functional``'s functions that torch_aclnn covers, with its exact
signatures: ``import torch_aclnn.nn.functional as F`` is a one-line swap.

Each call is computed by torch_aclnn when it lies inside the operator's
contract, and otherwise handed to the torch function itself, unchanged (so it
gives torch's answer or torch's own error). The decision is made per call by
torch_aclnn/_dropin.py, the same one ``torch_aclnn.patch()`` makes. What
routes and what passes through: docs/patch.md.

    interpolate     5-D input, mode 'nearest' / 'nearest-exact' / 'trilinear'
    elu, selu, celu any floating input of at most 8 dims; inplace=True too
    smooth_l1_loss  floating input and target that broadcast; legacy
                    size_average / reduce as torch turns them into reduction
    huber_loss      as smooth_l1_loss, delta > 0, no weight
    max_unpool3d    4-D or 5-D floating input, int64 indices
    max_pool3d      4-D or 5-D floating input (return_indices or not)
    leaky_relu, leaky_relu_
                    any floating input of at most 8 dims; inplace=True too
    avg_pool3d      4-D or 5-D floating input
    adaptive_avg_pool3d  4-D or 5-D floating input, an output size other
                    than 1 (torch computes that as a mean)

Every other name of torch.nn.functional (``F.conv3d``, ``F.relu``, ...) is
torch's own object, looked up there when it is used (``__getattr__``), and
``dir()`` lists them all, so a file that uses both kinds keeps working after
the swap. ``__all__`` lists the functions above.
"""
from __future__ import annotations

from typing import List, Optional

import torch.nn.functional as _F
from torch import Tensor

from .._dropin import call

__all__ = ["interpolate", "elu", "selu", "celu", "smooth_l1_loss", "huber_loss", "max_unpool3d", "max_pool3d",
           "leaky_relu", "leaky_relu_", "avg_pool3d", "adaptive_avg_pool3d"]


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None,
                antialias: bool = False) -> Tensor:
    """``torch.nn.functional.interpolate``; 'nearest', 'nearest-exact' and
    'trilinear' on 5-D input run upsample_nearest3d / upsample_nearest_exact3d /
    upsample_trilinear3d."""
    return call(_F.interpolate, input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``torch.nn.functional.elu`` on torch_aclnn's elu / elu_backward."""
    return call(_F.elu, input, alpha, inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``torch.nn.functional.selu`` on torch_aclnn's elu / elu_backward."""
    return call(_F.selu, input, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``torch.nn.functional.celu`` on torch_aclnn's elu / elu_backward."""
    return call(_F.celu, input, alpha, inplace)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
                   reduce: Optional[bool] = None, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``torch.nn.functional.smooth_l1_loss`` on torch_aclnn's smooth_l1_loss[_backward]."""
    return call(_F.smooth_l1_loss, input, target, size_average, reduce, reduction, beta)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Optional[Tensor] = None) -> Tensor:
    """``torch.nn.functional.huber_loss``: ``delta * smooth_l1_loss(beta=delta)``."""
    if weight is None:  # (older torch has no weight argument)
        return call(_F.huber_loss, input, target, reduction, delta)
    return call(_F.huber_loss, input, target, reduction, delta, weight)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size: Optional[List[int]] = None) -> Tensor:
    """``torch.nn.functional.max_unpool3d`` on torch_aclnn's max_unpool3d[_backward]."""
    return call(_F.max_unpool3d, input, indices, kernel_size, stride, padding, output_size)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """``torch.nn.functional.max_pool3d`` on torch_aclnn's max_pool3d_with_indices[_backward]:
    the values, or (values, indices) with ``return_indices``. The gradient is
    deterministic on every device."""
    return call(_F.max_pool3d, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``torch.nn.functional.leaky_relu`` on torch_aclnn's leaky_relu / leaky_relu_backward."""
    return call(_F.leaky_relu, input, negative_slope, inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``torch.nn.functional.leaky_relu_``: leaky_relu with ``inplace=True``."""
    return call(_F.leaky_relu_, input, negative_slope)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    """``torch.nn.functional.avg_pool3d`` on torch_aclnn's avg_pool3d[_backward]: the
    gradient is a deterministic gather on every device."""
    return call(_F.avg_pool3d, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """``torch.nn.functional.adaptive_avg_pool3d`` on torch_aclnn's
    adaptive_avg_pool3d[_backward]: the gradient is a gather, deterministic on
    every device. An output size of 1 stays torch's (a mean)."""
    return call(_F.adaptive_avg_pool3d, input, output_size)


def __getattr__(name: str):
    """Any other name of torch.nn.functional: torch's own (the one-line swap)."""
    try:
        return getattr(_F, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(dir(_F)))
