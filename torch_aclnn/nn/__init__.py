"""Drop-in replacements for torch.nn modules, computed by torch_aclnn.

Each class subclasses the torch.nn module it replaces and overrides only
``forward``, which calls :mod:`torch_aclnn.nn.functional`: a call inside the
operator's contract runs torch_aclnn's kernels, any other call (4-D input to
Upsample, mode='bilinear', a legacy argument torch_aclnn does not cover, ...)
runs torch's, unchanged. Constructor arguments, defaults, attributes and
``state_dict`` are torch's own (none of these modules has parameters or
buffers, so a state_dict saved from either loads into the other, strictly),
``isinstance(m, torch.nn.ELU)`` stays true, and the repr names torch_aclnn:
``torch_aclnn.ELU(alpha=1.0)``.

    torch.nn.Upsample     -> Upsample     (routed: 5-D input, mode 'nearest', 'nearest-exact' or 'trilinear')
    torch.nn.ELU          -> ELU
    torch.nn.SELU         -> SELU
    torch.nn.CELU         -> CELU
    torch.nn.SmoothL1Loss -> SmoothL1Loss
    torch.nn.HuberLoss    -> HuberLoss    (delta * SmoothL1Loss(beta=delta))
    torch.nn.MaxUnpool3d  -> MaxUnpool3d
    torch.nn.MaxPool3d    -> MaxPool3d
    torch.nn.LeakyReLU    -> LeakyReLU
    torch.nn.AdaptiveAvgPool3d -> AdaptiveAvgPool3d  (an output size of 1 stays torch's mean)

``inplace=True`` (ELU, SELU, CELU, LeakyReLU) behaves as in torch: the input is
overwritten with the result and returned, and the backward is computed from
the saved *result* (aclnnEluBackward with ``is_result=True``,
aclnnLeakyReluBackward with ``selfIsResult=True``).

:func:`convert` swaps these modules into an existing model (and
:func:`unconvert` back);
:func:`torch_aclnn.patch` instead routes the functional calls that unmodified
code makes.

``torch.jit.script`` compiles each module to torch's own functional call
(TorchScript cannot run the per-call routing decision, which is Python): a
scripted model computes what the unconverted one would, with torch's kernels,
which ``torch_aclnn.patch()``'s dispatcher level routes like any other aten
call. ``torch.compile`` and ``torch.export`` trace the decision and keep the
torch_aclnn operators.
"""
from __future__ import annotations

import collections
import logging

import torch
import torch.nn.functional as F
from torch import Tensor

from . import functional

__all__ = ["Upsample", "ELU", "SELU", "CELU", "SmoothL1Loss", "HuberLoss", "MaxUnpool3d", "MaxPool3d", "LeakyReLU",
           "AvgPool3d", "AdaptiveAvgPool3d", "convert", "unconvert", "functional"]

_log = logging.getLogger("torch_aclnn")


class _Module:
    """What every torch_aclnn.nn module adds to its torch.nn base: its repr
    names torch_aclnn. Each ``forward`` calls torch_aclnn.nn.functional, or,
    when scripted (``torch.jit.is_scripting()``), torch's function of the same
    signature: the routing decision is Python, which TorchScript cannot run."""

    def _get_name(self) -> str:
        return f"torch_aclnn.{type(self).__name__}"


class Upsample(_Module, torch.nn.Upsample):
    """``torch.nn.Upsample``; 5-D input with mode 'nearest'
    (aclnnUpsampleNearest3d[Backward]), 'nearest-exact'
    (aclnnUpsampleNearestExact3d[Backward]) or 'trilinear'
    (aclnnUpsampleTrilinear3d[Backward]) is computed by torch_aclnn.
    The rules: docs/ops/upsample.md, docs/ops/upsample_trilinear.md."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                                 recompute_scale_factor=self.recompute_scale_factor)
        return functional.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                                      recompute_scale_factor=self.recompute_scale_factor)


class ELU(_Module, torch.nn.ELU):
    """``torch.nn.ELU(alpha=1.0, inplace=False)`` on aclnnElu / aclnnEluBackward."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return F.elu(input, self.alpha, self.inplace)
        return functional.elu(input, self.alpha, self.inplace)


class SELU(_Module, torch.nn.SELU):
    """``torch.nn.SELU(inplace=False)``: ELU with alpha = 1.6732632423543772, scale = 1.0507009873554805."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return F.selu(input, self.inplace)
        return functional.selu(input, self.inplace)


class CELU(_Module, torch.nn.CELU):
    """``torch.nn.CELU(alpha=1.0, inplace=False)``: ELU with input_scale = 1 / alpha."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return F.celu(input, self.alpha, self.inplace)
        return functional.celu(input, self.alpha, self.inplace)


class SmoothL1Loss(_Module, torch.nn.SmoothL1Loss):
    """``torch.nn.SmoothL1Loss(size_average=None, reduce=None, reduction='mean', beta=1.0)``
    on aclnnSmoothL1Loss[Backward]. The legacy size_average / reduce
    arguments are turned into ``reduction`` by torch.nn's own rules (with its
    deprecation warning). Like torch, it warns when input and target shapes
    differ, then broadcasts."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)
        return functional.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Module, torch.nn.HuberLoss):
    """``torch.nn.HuberLoss(reduction='mean', delta=1.0)``:
    ``delta * smooth_l1_loss(beta=delta)`` on aclnnSmoothL1Loss[Backward]."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)
        return functional.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class MaxUnpool3d(_Module, torch.nn.MaxUnpool3d):
    """``torch.nn.MaxUnpool3d(kernel_size, stride=None, padding=0)`` on
    aclnnMaxUnpool3d[Backward]; ``forward(input, indices, output_size=None)``.
    Deterministic: where indices repeat, the element with the largest flat
    input position wins."""

    def forward(self, input: Tensor, indices: Tensor, output_size: list[int] | None = None) -> Tensor:
        if torch.jit.is_scripting():
            return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)
        return functional.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxPool3d(_Module, torch.nn.MaxPool3d):
    """``torch.nn.MaxPool3d(kernel_size, stride=None, padding=0, dilation=1,
    return_indices=False, ceil_mode=False)`` on aclnnMaxPool3dWithArgmax[Backward]:
    the gradient is deterministic on every device, also where aten's CUDA
    kernel refuses ``use_deterministic_algorithms(True)``."""

    def forward(self, input: Tensor):
        if torch.jit.is_scripting():
            return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                ceil_mode=self.ceil_mode, return_indices=self.return_indices)
        return functional.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                     ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class LeakyReLU(_Module, torch.nn.LeakyReLU):
    """``torch.nn.LeakyReLU(negative_slope=0.01, inplace=False)`` on aclnnLeakyRelu / aclnnLeakyReluBackward."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return F.leaky_relu(input, self.negative_slope, self.inplace)
        return functional.leaky_relu(input, self.negative_slope, self.inplace)


class AvgPool3d(_Module, torch.nn.AvgPool3d):
    """``torch.nn.AvgPool3d(kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None)`` on aclnnAvgPool3d[Backward]: the
    gradient is a deterministic gather on every device, also where aten's CUDA kernel
    refuses ``use_deterministic_algorithms(True)``."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                self.count_include_pad, self.divisor_override)
        return functional.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                     self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_Module, torch.nn.AdaptiveAvgPool3d):
    """``torch.nn.AdaptiveAvgPool3d(output_size)`` on aclnnAdaptiveAvgPool3d[Backward]:
    the gradient is a gather, deterministic on every device, also where
    aten's CUDA kernel refuses ``use_deterministic_algorithms(True)``. An
    output size of 1 stays torch's (a mean, deterministic already)."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return F.adaptive_avg_pool3d(input, self.output_size)
        return functional.adaptive_avg_pool3d(input, self.output_size)


_REPLACEMENTS = {
    torch.nn.Upsample: Upsample,
    torch.nn.ELU: ELU,
    torch.nn.SELU: SELU,
    torch.nn.CELU: CELU,
    torch.nn.SmoothL1Loss: SmoothL1Loss,
    torch.nn.HuberLoss: HuberLoss,
    torch.nn.MaxUnpool3d: MaxUnpool3d,
    torch.nn.MaxPool3d: MaxPool3d,
    torch.nn.LeakyReLU: LeakyReLU,
    torch.nn.AvgPool3d: AvgPool3d,
    torch.nn.AdaptiveAvgPool3d: AdaptiveAvgPool3d,
}


def _why_kept(m: torch.nn.Module):
    """Why a module of a covered kind is left as it is (None: swap it)."""
    if type(m) not in _REPLACEMENTS:
        return f"a subclass of torch.nn.{next(c for c in _REPLACEMENTS if isinstance(m, c)).__name__}"
    if isinstance(m, torch.nn.Upsample) and m.mode not in ("nearest", "nearest-exact", "trilinear"):
        return f"mode={m.mode!r}, which torch_aclnn never computes"
    return None


def _swap(module: torch.nn.Module, twin_type, what: str) -> torch.nn.Module:
    """Replaces, in place, every module ``m`` of ``module`` (and ``module``
    itself) for which ``twin_type(m)`` gives a class by an object of that class
    with ``m``'s attributes; ``twin_type`` gives None to leave ``m`` alone, or
    a string: why it is left alone though covered. Returns the (possibly new) root."""
    swapped, kept = collections.Counter(), []
    twins = {}  # id(old module) -> its replacement: a module used in several places stays one module

    def twin(name: str, m: torch.nn.Module) -> torch.nn.Module:
        if id(m) in twins:
            return twins[id(m)]
        new = m
        cls = twin_type(m)
        if isinstance(cls, str):
            kept.append(f"{name or '(root)'!r} ({cls})")
        elif cls is not None:
            new = cls.__new__(cls)
            new.__dict__.update(m.__dict__)
            swapped[cls.__name__] += 1
        twins[id(m)] = new
        return new

    # Every place a module is used (named_modules(remove_duplicate=False)); the
    # covered modules have no children, so no parent is replaced along the way.
    for path, m in list(module.named_modules(remove_duplicate=False)):
        if path:
            parent_path, _, name = path.rpartition(".")
            parent = module.get_submodule(parent_path)
            new = twin(path, m)
            if new is not m:
                setattr(parent, name, new)
    root = twin("", module)
    if _log.isEnabledFor(logging.INFO):
        done = ", ".join(f"{n} {k}" for k, n in sorted(swapped.items())) or "none"
        _log.info("torch_aclnn.nn.%s: swapped %d module(s): %s; left alone %d: %s", what, sum(swapped.values()),
                  done, len(kept), "; ".join(kept) or "none")
    return root


def convert(module: torch.nn.Module) -> torch.nn.Module:
    """Replace, in place, every torch.nn module of ``module`` (or ``module``
    itself) that torch_aclnn.nn covers with its torch_aclnn.nn twin; returns
    the (possibly new) root. Also ``torch_aclnn.convert``; undone by
    :func:`unconvert`.

    Swapped: the torch.nn classes of ``_REPLACEMENTS`` (Upsample, ELU, SELU,
    CELU, SmoothL1Loss, HuberLoss, MaxUnpool3d, MaxPool3d, ...), matched by
    exact type. Each call of a swapped module is
    still computed by torch when it lies outside torch_aclnn's contract (a
    4-D Upsample input, say), so converting never breaks a model. Left alone:
    subclasses of those classes (their forward may be their own) and
    Upsamples whose mode torch_aclnn never computes ('trilinear', ...).
    What was swapped and left alone is logged at INFO on the "torch_aclnn"
    logger."""

    def twin_type(m: torch.nn.Module):
        if isinstance(m, tuple(_REPLACEMENTS)) and not isinstance(m, _Module):
            return _why_kept(m) or _REPLACEMENTS[type(m)]
        return None

    return _swap(module, twin_type, "convert")


def unconvert(module: torch.nn.Module) -> torch.nn.Module:
    """Undo :func:`convert`: replace, in place, every torch_aclnn.nn module of
    ``module`` (or ``module`` itself) by the torch.nn module it stands for,
    with the same attributes; returns the (possibly new) root. Also
    ``torch_aclnn.unconvert``.

    The result holds no torch_aclnn class, so it pickles (``torch.save(model)``)
    into a file that loads where torch_aclnn is not installed. Subclasses of
    torch_aclnn.nn's modules are left alone. Logged at INFO as convert() is."""
    torch_type = {ours: theirs for theirs, ours in _REPLACEMENTS.items()}
    return _swap(module, lambda m: torch_type.get(type(m)), "unconvert")
