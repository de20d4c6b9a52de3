"""Drop-in replacements for torch.nn modules, computed by torch_aclnn.

Each class subclasses the torch.nn module it replaces and overrides only
``forward``: constructor arguments, defaults, attributes, ``repr`` and
``state_dict`` are torch's own (none of these modules has parameters or
buffers, so a state_dict saved from either loads into the other, strictly),
and ``isinstance(m, torch.nn.ELU)`` stays true.

    torch.nn.Upsample     -> Upsample     (5-D input; mode 'nearest' or 'nearest-exact')
    torch.nn.ELU          -> ELU
    torch.nn.SELU         -> SELU
    torch.nn.CELU         -> CELU
    torch.nn.SmoothL1Loss -> SmoothL1Loss
    torch.nn.MaxUnpool3d  -> MaxUnpool3d

``inplace=True`` (ELU, SELU, CELU) behaves as in torch: the input is
overwritten with the result and returned, and the backward is computed from
the saved *result* (aclnnEluBackward with ``is_result=True``), so no copy of
the input is kept for autograd. The kernel itself is out-of-place, so the
call briefly needs one temporary of the input's size. As in torch, the
backward of an in-place call with a negative alpha is an error (the result
does not determine the input), and a leaf that requires grad cannot be
modified in place.

To swap the modules of an existing model without editing it, use
:func:`torch_aclnn.patch` instead (it routes the functional calls these
modules make); :func:`convert` replaces module instances in a model.
"""
from __future__ import annotations

import warnings

import torch
from torch import Tensor

from .ops.elu import SELU_ALPHA, SELU_SCALE, celu, celu_params, elu, selu
from .ops.max_unpool import max_unpool3d
from .ops.smooth_l1 import smooth_l1_loss
from .ops.upsample import upsample_nearest3d, upsample_nearest_exact3d

__all__ = ["Upsample", "ELU", "SELU", "CELU", "SmoothL1Loss", "MaxUnpool3d", "convert"]

_NEAREST = {"nearest": upsample_nearest3d, "nearest-exact": upsample_nearest_exact3d}


class Upsample(torch.nn.Upsample):
    """``torch.nn.Upsample`` for 5-D (N, C, D, H, W) input with mode 'nearest'
    (aclnnUpsampleNearest3d[Backward]) or 'nearest-exact'
    (aclnnUpsampleNearestExact3d[Backward]).

    Other modes and ``align_corners`` are rejected when the module is built
    (ValueError); input that is not 5-D raises torch_aclnn's ValueError. The
    scale rule is the spec's: see docs/ops/upsample.md.
    """

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None) -> None:
        if mode not in _NEAREST:
            raise ValueError(f"torch_aclnn.nn.Upsample supports mode 'nearest' and 'nearest-exact', got {mode!r} "
                             f"(use torch.nn.Upsample for it)")
        if align_corners is not None:
            raise ValueError("torch_aclnn.nn.Upsample: align_corners only applies to the interpolating modes, "
                             f"got align_corners={align_corners!r} with mode={mode!r}")
        super().__init__(size, scale_factor, mode, align_corners, recompute_scale_factor)

    def forward(self, input: Tensor) -> Tensor:
        return _NEAREST[self.mode](input, self.size, self.scale_factor, self.recompute_scale_factor)


class _EluInplace(torch.autograd.Function):
    """``input.copy_(elu(input))``, differentiated from the saved result as aten's elu_ is."""

    @staticmethod
    def forward(ctx, input, alpha, scale, input_scale):
        result = torch.ops.torch_aclnn.elu(input, alpha, scale, input_scale)
        input.copy_(result)
        ctx.mark_dirty(input)
        ctx.save_for_backward(input)
        ctx.params = (alpha, scale, input_scale)
        return input

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        alpha, scale, input_scale = ctx.params
        return torch.ops.torch_aclnn.elu_backward(grad, alpha, scale, input_scale, True, result), None, None, None


def _elu_inplace(input: Tensor, alpha: float, scale: float, input_scale: float) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"input must be a Tensor, got {type(input).__name__}")
    if torch.is_grad_enabled() and input.requires_grad:
        return _EluInplace.apply(input, alpha, scale, input_scale)
    return input.copy_(torch.ops.torch_aclnn.elu(input, alpha, scale, input_scale))


class ELU(torch.nn.ELU):
    """``torch.nn.ELU(alpha=1.0, inplace=False)`` on aclnnElu / aclnnEluBackward."""

    def forward(self, input: Tensor) -> Tensor:
        if self.inplace:
            return _elu_inplace(input, self.alpha, 1.0, 1.0)
        return elu(input, self.alpha)


class SELU(torch.nn.SELU):
    """``torch.nn.SELU(inplace=False)``: ELU with alpha = 1.6732632423543772, scale = 1.0507009873554805."""

    def forward(self, input: Tensor) -> Tensor:
        if self.inplace:
            return _elu_inplace(input, SELU_ALPHA, SELU_SCALE, 1.0)
        return selu(input)


class CELU(torch.nn.CELU):
    """``torch.nn.CELU(alpha=1.0, inplace=False)``: ELU with input_scale = 1 / alpha."""

    def forward(self, input: Tensor) -> Tensor:
        if self.inplace:
            alpha, input_scale = celu_params(input, self.alpha)
            return _elu_inplace(input, alpha, 1.0, input_scale)
        return celu(input, self.alpha)


class SmoothL1Loss(torch.nn.SmoothL1Loss):
    """``torch.nn.SmoothL1Loss(size_average=None, reduce=None, reduction='mean', beta=1.0)``
    on aclnnSmoothL1Loss[Backward]. The legacy size_average / reduce
    arguments are turned into ``reduction`` by torch.nn's own rules (with its
    deprecation warning). Like torch, it warns when input and target shapes
    differ, then broadcasts."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if (isinstance(input, Tensor) and isinstance(target, Tensor) and target.size() != input.size()
                and not torch.compiler.is_compiling()):
            warnings.warn(
                f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                "This will likely lead to incorrect results due to broadcasting. "
                "Please ensure they have the same size.",
                stacklevel=2,
            )
        return smooth_l1_loss(input, target, self.reduction, self.beta)


class MaxUnpool3d(torch.nn.MaxUnpool3d):
    """``torch.nn.MaxUnpool3d(kernel_size, stride=None, padding=0)`` on
    aclnnMaxUnpool3d[Backward]; ``forward(input, indices, output_size=None)``.
    Deterministic: where indices repeat, the element with the largest flat
    input position wins."""

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


_REPLACEMENTS = {
    torch.nn.Upsample: Upsample,
    torch.nn.ELU: ELU,
    torch.nn.SELU: SELU,
    torch.nn.CELU: CELU,
    torch.nn.SmoothL1Loss: SmoothL1Loss,
    torch.nn.MaxUnpool3d: MaxUnpool3d,
}


def convert(module: torch.nn.Module) -> torch.nn.Module:
    """Replace, in place, every torch.nn module of ``module`` (or ``module``
    itself) that torch_aclnn.nn covers with its torch_aclnn.nn twin; returns
    the (possibly new) root. An Upsample with a mode other than 'nearest' /
    'nearest-exact' is kept. Modules are matched by exact type, so
    subclasses of the torch.nn classes are left alone."""
    def twin(m):
        cls = _REPLACEMENTS.get(type(m))
        if cls is None or (cls is Upsample and (m.mode not in _NEAREST or m.align_corners is not None)):
            return m
        new = cls.__new__(cls)
        new.__dict__.update(m.__dict__)
        return new

    for name, child in list(module.named_children()):
        new = convert(child)
        if new is not child:
            setattr(module, name, new)
    return twin(module)
