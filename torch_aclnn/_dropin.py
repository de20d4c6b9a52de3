"""The drop-in rule (docs/spec.md, "Drop-in rule"), once per torch function.

A call of a ``torch.nn.functional`` function is computed by torch_aclnn only
when it lies inside the operator's contract; everything else goes to the
torch function itself, unchanged, and so gives torch's answer or torch's own
error. One function per torch function below decides that: it takes the
torch function's exact signature and returns torch_aclnn's result, or a str
(the reason to pass the call through). All four drop-in surfaces use them:
``torch_aclnn.patch()`` (torch_aclnn/_patch.py), ``torch_aclnn.nn.functional``,
the ``torch_aclnn.nn`` modules (built on it) and ``torch_aclnn.nn.convert()``.

The checks are made on what is known before the kernel runs (types,
devices, dtypes, ranks, sizes, the contract's rules that torch does not
have), so ``torch.compile`` traces the decision with no graph break. One rule
depends on the data: an unpool index outside the output raises torch_aclnn's
IndexError; :func:`call` then gives the call to torch (eager only), whose
own error follows.
"""
from __future__ import annotations

import math
import warnings
from typing import Callable, Dict, FrozenSet, Union

import torch
import torch.nn.functional as F

from ._registry import OPERATORS
from ._torch_api import has_kernel, legacy_reduction, privateuse1_name
from .ops import elu as _elu, max_unpool as _unpool, smooth_l1 as _sl1, upsample as _up

__all__ = ["ROUTES", "call", "decide"]

Decision = Union[str, torch.Tensor]

_FLOATING = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
_INTS = (int, torch.SymInt)
_NUMBERS = (int, float, torch.SymInt, torch.SymFloat)
_REDUCTIONS = ("none", "mean", "sum")
_FLOAT32_MAX = float(torch.finfo(torch.float32).max)
_MAX_DIMS = 8  # elu and smooth_l1: at most 8 dims (the aclnn contract; torch has no limit)

# operator -> the device types that have its torch_aclnn kernels; filled by
# refresh_devices() when torch_aclnn is imported (after the NPU kernels
# register), so that compiled code only reads constants.
_DEVICES: Dict[str, FrozenSet[str]] = {}


def refresh_devices() -> None:
    keys = (("CPU", "cpu"), ("CUDA", "cuda"), ("PrivateUse1", privateuse1_name()))
    for op in OPERATORS:
        _DEVICES[op] = frozenset(dev for key, dev in keys if has_kernel(op, key))


def _tensor(t, op: str):
    """None if the contract takes this tensor (a floating tensor on a device
    with ``op``'s kernels), else the reason."""
    if not isinstance(t, torch.Tensor):
        return f"argument of type {type(t).__name__}"
    if t.device.type not in _DEVICES[op]:
        return f"device {t.device.type!r}"
    if t.dtype not in _FLOATING:
        return f"dtype {t.dtype}"
    return None


def _number(x) -> bool:
    return isinstance(x, _NUMBERS) and not isinstance(x, bool)


def _size3(v, kinds) -> bool:
    """One value of ``kinds`` (not bool), or 3 of them."""
    if isinstance(v, (list, tuple, torch.Size)):
        return len(v) == 3 and all(isinstance(e, kinds) and not isinstance(e, bool) for e in v)
    return isinstance(v, kinds) and not isinstance(v, bool)


def _fits_float32(x, dtype) -> bool:
    """A scalar the contract takes for tensors of ``dtype``: any value for
    float64, else a value representable in float32 (+-inf and NaN included)."""
    return dtype == torch.float64 or not abs(x) <= math.inf or abs(x) <= _FLOAT32_MAX


def _contract(fn: Callable, *args):
    """``fn(*args)``, or the reason if torch_aclnn's Python API rejects the
    arguments (a message starting "[torch_aclnn")."""
    try:
        return fn(*args)
    except (TypeError, ValueError) as e:
        if str(e).startswith("[torch_aclnn"):
            return str(e)
        raise


# ---------------------------------------------------------------------------
# One decision per torch function, with its signature.

def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False) -> Decision:
    if mode == "nearest":
        op, ours = "upsample_nearest3d", _up.upsample_nearest3d
    elif mode == "nearest-exact":
        op, ours = "upsample_nearest_exact3d", _up.upsample_nearest_exact3d
    else:
        return f"mode={mode!r}"
    why = _tensor(input, op)
    if why:
        return why
    if input.dim() != 5:
        return f"{input.dim()}-D input"
    if align_corners is not None or antialias:
        return "align_corners/antialias given"
    if (size is None) == (scale_factor is None):
        return "size and scale_factor both or neither given"
    if size is not None and not _size3(size, _INTS):
        return "size is not an int or 3 ints"
    if scale_factor is not None and not _size3(scale_factor, _NUMBERS):
        return "scale_factor is not a number or 3 numbers"
    for s in input.shape[2:]:
        if not s > 0:
            return "an empty D, H or W axis"
    resolved = _contract(_up._resolve, op, input, size, scale_factor, recompute_scale_factor)
    if isinstance(resolved, str):
        return resolved
    output_size, scales = resolved
    return getattr(torch.ops.torch_aclnn, op)(input, output_size, *scales)


def _elu_call(input, alpha, scale, input_scale, inplace) -> Decision:
    if not isinstance(inplace, bool):
        return f"inplace={inplace!r}"
    why = _tensor(input, "elu")
    if why:
        return why
    if input.dim() > _MAX_DIMS:
        return f"{input.dim()}-D input"
    for v in (alpha, scale, input_scale):
        if not _fits_float32(v, input.dtype):
            return f"alpha={alpha!r} beyond float32"
    if inplace and torch.is_grad_enabled() and input.requires_grad:
        if input.is_leaf:
            return "inplace=True on a leaf that requires grad"
        if not alpha >= 0:
            return "inplace=True with alpha < 0"
    return _elu._elu(input, alpha, scale, input_scale, inplace)


def elu(input, alpha=1.0, inplace=False) -> Decision:
    if not _number(alpha):
        return f"alpha of type {type(alpha).__name__}"
    return _elu_call(input, alpha, 1.0, 1.0, inplace)


def selu(input, inplace=False) -> Decision:
    return _elu_call(input, _elu.SELU_ALPHA, _elu.SELU_SCALE, 1.0, inplace)


def celu(input, alpha=1.0, inplace=False) -> Decision:
    if not _number(alpha):
        return f"alpha of type {type(alpha).__name__}"
    params = _contract(_elu.celu_params, input, alpha)  # celu's own rule: alpha != 0, 1 / alpha representable
    if isinstance(params, str):
        return params
    return _elu_call(input, params[0], 1.0, params[1], inplace)


def _loss_args(input, target, reduction):
    """The reason a loss call is outside smooth_l1's contract, or None."""
    why = _tensor(input, "smooth_l1_loss") or _tensor(target, "smooth_l1_loss")
    if why:
        return why
    if reduction not in _REDUCTIONS:
        return f"reduction={reduction!r}"
    if input.dim() > _MAX_DIMS or target.dim() > _MAX_DIMS:
        return "more than 8 dims"
    if input.shape != target.shape:
        try:
            torch.broadcast_shapes(input.shape, target.shape)
        except RuntimeError:
            return "input and target do not broadcast"
        if not torch.compiler.is_compiling():
            warnings.warn(
                f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                "This will likely lead to incorrect results due to broadcasting. "
                "Please ensure they have the same size.",
                stacklevel=4,
            )
    return None


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0) -> Decision:
    if not _number(beta) or not beta >= 0:
        return f"beta={beta!r}"
    why = _tensor(input, "smooth_l1_loss") or _tensor(target, "smooth_l1_loss")
    if why:
        return why
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    why = _loss_args(input, target, reduction)
    if why:
        return why
    return _sl1.smooth_l1_loss(input, target, reduction, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None) -> Decision:
    if weight is not None:
        return "weight given"
    if not _number(delta) or not (delta > 0 and delta < math.inf):
        return f"delta={delta!r}"
    why = _loss_args(input, target, reduction)
    if why:
        return why
    return _sl1.huber_loss(input, target, reduction, delta)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None) -> Decision:
    why = _tensor(input, "max_unpool3d")
    if why:
        return why
    if not isinstance(indices, torch.Tensor) or indices.dtype != torch.int64:
        return "indices are not an int64 tensor"
    if indices.device != input.device:
        return "indices on another device"
    if input.dim() not in (4, 5):
        return f"{input.dim()}-D input"
    if input.shape != indices.shape:
        return "input and indices shapes differ"
    for s in input.shape[1:]:
        if not s > 0:
            return "an empty axis other than N"
    plan = _contract(_unpool.plan, "max_unpool3d", input, kernel_size, stride, padding, output_size)
    if isinstance(plan, str):
        return plan
    size, stride, padding = plan
    if math.prod(size) < math.prod(input.shape[-3:]):
        return "output volume smaller than the input's D*H*W (overlapping pooling windows)"
    return torch.ops.torch_aclnn.max_unpool3d(input, indices, size, stride, padding)


# ---------------------------------------------------------------------------

# torch function -> (its name, the decision above).
ROUTES: Dict[Callable, tuple] = {
    F.interpolate: ("interpolate", interpolate),
    F.elu: ("elu", elu),
    F.selu: ("selu", selu),
    F.celu: ("celu", celu),
    F.smooth_l1_loss: ("smooth_l1_loss", smooth_l1_loss),
    F.huber_loss: ("huber_loss", huber_loss),
    F.max_unpool3d: ("max_unpool3d", max_unpool3d),
}


def decide(decision: Callable, args: tuple, kwargs: dict) -> Decision:
    """``decision(*args, **kwargs)``; arguments that do not bind to the torch
    signature pass through (torch raises its own TypeError)."""
    try:
        return decision(*args, **kwargs)
    except TypeError as e:
        if str(e).startswith("[torch_aclnn") or "argument" not in str(e):
            raise
        return "arguments that do not bind to the torch signature"
    except IndexError as e:
        # Data-dependent: an index outside the output. torch raises its own error.
        if torch.compiler.is_compiling() or not str(e).startswith("[torch_aclnn"):
            raise
        return "an index outside the output"


def call(torch_fn: Callable, *args, **kwargs) -> torch.Tensor:
    """torch_aclnn's result for a call inside the contract, else torch's."""
    out = decide(ROUTES[torch_fn][1], args, kwargs)
    return torch_fn(*args, **kwargs) if isinstance(out, str) else out
