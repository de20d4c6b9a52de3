"""``torch_aclnn.patch()``: run an unmodified PyTorch script on torch_aclnn's kernels.

A :class:`torch.overrides.TorchFunctionMode` sees every call of a
``torch.nn.functional`` function that supports ``__torch_function__``
(F.interpolate, F.elu, F.selu, F.celu, F.smooth_l1_loss, F.max_unpool3d
all do) together with the exact arguments the caller wrote. For these six it
decides, from those arguments, whether torch_aclnn computes the same thing:
if so it calls torch_aclnn, otherwise it calls the torch function itself,
unchanged. Every other torch call passes straight through.

Why a mode and not replacing ``torch.nn.functional.elu`` & co. (see
docs/patch.md for the full argument):

* it catches every call site: ``from torch.nn.functional import elu`` done
  before patching, ``torch.nn.functional`` stored under another name,
  third-party modules — a replaced module global misses all of those;
* it changes no shared global state: the mode stack is per thread, so one
  thread's patch cannot change what another thread, or another library,
  computes; ``patched()`` is exactly scoped and nests with other modes;
* dynamo understands TorchFunctionModes, so ``torch.compile(fullgraph=True)``
  traces the routing decisions and the torch_aclnn operators into one graph
  (a replaced F function is simply a different Python function to dynamo,
  but the mode's decision is made per call, with guards on the mode stack,
  so a model compiled unpatched recompiles when patched instead of silently
  keeping the old graph);
* the decision sees the Python-level arguments (``mode=``, ``inplace=``,
  ``size_average=``) that an aten-level (dispatcher) override would not.

The costs: one Python call per torch function in eager mode (a few
microseconds), none under torch.compile; and modes are not active while
autograd runs a backward, so the forward that ``torch.utils.checkpoint``
recomputes there uses torch unless the patch is passed in as its context
(``context_fn=lambda: (contextlib.nullcontext(), torch_aclnn.patched())``).
"""
from __future__ import annotations

import contextlib
import math
import threading
from typing import Dict, Iterator, Optional

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .ops.elu import celu_params

__all__ = ["patch", "unpatch", "patched", "is_patched", "patch_stats", "reset_patch_stats", "PatchStats",
           "ROUTED_FUNCTIONS"]

# The torch functions the patch can route, and the torch_aclnn operator(s) behind each.
ROUTED_FUNCTIONS = {
    "interpolate": ("upsample_nearest3d", "upsample_nearest_exact3d"),
    "elu": ("elu",),
    "selu": ("elu",),
    "celu": ("elu",),
    "smooth_l1_loss": ("smooth_l1_loss",),
    "max_unpool3d": ("max_unpool3d",),
}

_FLOATING = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
_REDUCTIONS = ("none", "mean", "sum")


_NAMES = tuple(ROUTED_FUNCTIONS)
_INDEX = {name: i for i, name in enumerate(_NAMES)}


class PatchStats:
    """What the patch did, per torch.nn.functional function name
    ("interpolate", "elu", "selu", "celu", "smooth_l1_loss", "max_unpool3d"):

    * ``routed[name]``: calls computed by torch_aclnn;
    * ``passed[name]``: calls handed to torch unchanged;
    * ``reasons[(name, reason)]``: why, e.g. ``("interpolate", "mode='trilinear'")``.

    ``routed`` and ``passed`` count calls inside ``torch.compile``d code too,
    each time the compiled code runs: there the counter is a tensor that the
    compiled graph increments (so counting never causes a recompilation);
    eager calls count in plain Python ints. ``reasons`` records eager calls
    only. Only names with a non-zero count appear."""

    def __init__(self) -> None:
        self._eager = [[0] * len(_NAMES), [0] * len(_NAMES)]               # [routed, passed] x name
        self._compiled = torch.zeros(2, len(_NAMES), dtype=torch.int64)     # the same, for compiled code
        self.reasons: Dict[tuple, int] = {}

    def _add(self, row: int, name: str) -> None:
        i = _INDEX[name]
        if torch.compiler.is_compiling():
            self._compiled[row, i] += 1
        else:
            self._eager[row][i] += 1

    def _count(self, row: int) -> Dict[str, int]:
        counts = [a + b for a, b in zip(self._eager[row], self._compiled[row].tolist())]
        return {n: c for n, c in zip(_NAMES, counts) if c}

    @property
    def routed(self) -> Dict[str, int]:
        return self._count(0)

    @property
    def passed(self) -> Dict[str, int]:
        return self._count(1)

    def total_routed(self) -> int:
        return sum(self.routed.values())

    def reset(self) -> None:
        for row in self._eager:
            row[:] = [0] * len(row)
        self._compiled.zero_()
        self.reasons.clear()

    def as_dict(self) -> dict:
        return {"routed": self.routed, "passed": self.passed,
                "reasons": {f"{name}: {why}": n for (name, why), n in self.reasons.items()}}

    def __repr__(self) -> str:
        return f"PatchStats(routed={self.routed!r}, passed={self.passed!r}, reasons={self.reasons!r})"


# ---------------------------------------------------------------------------
# Per function: the same signature as the torch function, returning the
# torch_aclnn result, or a str (the reason to pass through).


def _tensor_ok(t, devices, floating_only: bool = True):
    """None if torch_aclnn takes this tensor, else the reason."""
    if not isinstance(t, torch.Tensor):
        return f"argument of type {type(t).__name__}"
    if t.device.type not in devices:
        return f"device {t.device.type!r}"
    if floating_only and t.dtype not in _FLOATING:
        return f"dtype {t.dtype}"
    return None


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


_INTS = (int, torch.SymInt)
_NUMBERS = (int, float, torch.SymInt, torch.SymFloat)


def _size3(v, kinds) -> bool:
    """One value of ``kinds`` (not bool), or 3 of them."""
    if isinstance(v, (list, tuple, torch.Size)):
        return len(v) == 3 and all(isinstance(e, kinds) and not isinstance(e, bool) for e in v)
    return isinstance(v, kinds) and not isinstance(v, bool)


class _Router:
    """The routing decisions; one instance per mode, holding the table of
    devices that have torch_aclnn kernels for each operator (computed once,
    so that compiled code only reads constants)."""

    def __init__(self, ta) -> None:
        self.ta = ta
        privateuse1 = torch._C._get_privateuse1_backend_name()
        keys = (("CPU", "cpu"), ("CUDA", "cuda"), ("PrivateUse1", privateuse1))
        self.devices = {
            op: frozenset(dev for key, dev in keys
                          if torch._C._dispatch_has_kernel_for_dispatch_key(f"torch_aclnn::{op}", key))
            for ops in ROUTED_FUNCTIONS.values() for op in ops}

    def interpolate(self, input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                    recompute_scale_factor=None, antialias=False):
        if mode == "nearest":
            op = "upsample_nearest3d"
        elif mode == "nearest-exact":
            op = "upsample_nearest_exact3d"
        else:
            return f"mode={mode!r}"
        why = _tensor_ok(input, self.devices[op])
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
        if scale_factor is not None:
            if not _size3(scale_factor, _NUMBERS):
                return "scale_factor is not a number or 3 numbers"
            factors = scale_factor if isinstance(scale_factor, (list, tuple)) else (scale_factor,)
            for f in factors:
                if not (f > 0 and f < math.inf):  # (SymFloat-safe)
                    return "scale_factor not finite and > 0"
        return getattr(self.ta, op)(input, size, scale_factor, recompute_scale_factor)

    def elu(self, input, alpha=1.0, inplace=False):
        if inplace:
            return "inplace=True"
        why = _tensor_ok(input, self.devices["elu"])
        if why:
            return why
        if not _number(alpha):
            return f"alpha of type {type(alpha).__name__}"
        return self.ta.elu(input, alpha)

    def selu(self, input, inplace=False):
        if inplace:
            return "inplace=True"
        why = _tensor_ok(input, self.devices["elu"])
        if why:
            return why
        return self.ta.selu(input)

    def celu(self, input, alpha=1.0, inplace=False):
        if inplace:
            return "inplace=True"
        why = _tensor_ok(input, self.devices["elu"])
        if why:
            return why
        if not _number(alpha):
            return f"alpha={alpha!r}"
        try:  # celu's own rule on alpha (0, or 1 / alpha beyond the compute type)
            celu_params(input, alpha)
        except ValueError:
            return f"alpha={alpha!r}"
        return self.ta.celu(input, alpha)

    def smooth_l1_loss(self, input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
        why = _tensor_ok(input, self.devices["smooth_l1_loss"]) or \
            _tensor_ok(target, self.devices["smooth_l1_loss"])
        if why:
            return why
        if size_average is not None or reduce is not None:
            return "legacy size_average/reduce given"
        if reduction not in _REDUCTIONS:
            return f"reduction={reduction!r}"
        if not _number(beta) or not beta >= 0:
            return f"beta={beta!r}"
        if input.shape != target.shape:
            return "input and target shapes differ (torch warns, then broadcasts)"
        return self.ta.smooth_l1_loss(input, target, reduction, beta)

    def max_unpool3d(self, input, indices, kernel_size, stride=None, padding=0, output_size=None):
        devices = self.devices["max_unpool3d"]
        why = _tensor_ok(input, devices, floating_only=False) or _tensor_ok(indices, devices, False)
        if why:
            return why
        if input.dtype == torch.bool or input.is_complex():
            return f"dtype {input.dtype}"
        if indices.dtype != torch.int64:
            return f"indices dtype {indices.dtype}"
        if input.dim() not in (4, 5):
            return f"{input.dim()}-D input"
        if input.shape != indices.shape:
            return "input and indices shapes differ"
        return self.ta.max_unpool3d(input, indices, kernel_size, stride, padding, output_size)


class _RoutingMode(TorchFunctionMode):
    def __init__(self, router: _Router, stats: Optional[PatchStats]) -> None:
        super().__init__()
        self.router = router
        self.stats = stats

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        r = self.router
        if func is F.interpolate:
            name, out = "interpolate", r.interpolate(*args, **kwargs)
        elif func is F.elu:
            name, out = "elu", r.elu(*args, **kwargs)
        elif func is F.selu:
            name, out = "selu", r.selu(*args, **kwargs)
        elif func is F.celu:
            name, out = "celu", r.celu(*args, **kwargs)
        elif func is F.smooth_l1_loss:
            name, out = "smooth_l1_loss", r.smooth_l1_loss(*args, **kwargs)
        elif func is F.max_unpool3d:
            name, out = "max_unpool3d", r.max_unpool3d(*args, **kwargs)
        else:
            return func(*args, **kwargs)
        stats = self.stats
        if isinstance(out, str):
            if stats is not None:
                stats._add(1, name)
                if not torch.compiler.is_compiling():
                    key = (name, out)
                    stats.reasons[key] = stats.reasons.get(key, 0) + 1
            return func(*args, **kwargs)
        if stats is not None:
            stats._add(0, name)
        return out


# ---------------------------------------------------------------------------
# Public API.

_STATS = PatchStats()
_lock = threading.Lock()
_global: Dict[int, _RoutingMode] = {}  # thread id -> the mode patch() entered there


def _new_mode(stats: Optional[PatchStats]) -> _RoutingMode:
    import torch_aclnn

    return _RoutingMode(_Router(torch_aclnn), stats)


def patch(count: bool = True) -> None:
    """Route F.interpolate (5-D, nearest / nearest-exact), F.elu, F.selu,
    F.celu, F.smooth_l1_loss and F.max_unpool3d — and so nn.Upsample, nn.ELU,
    nn.SELU, nn.CELU, nn.SmoothL1Loss, nn.MaxUnpool3d — to torch_aclnn from now
    on, in the calling thread, until :func:`unpatch`. Calls torch_aclnn does
    not cover (other modes, 4-D input, inplace=True, legacy arguments, other
    dtypes or devices) go to torch unchanged. Calling it again is a no-op.

    ``count=False``: do not count calls in :func:`patch_stats` (inside
    compiled graphs, counting is a tiny CPU tensor update per call).

    Example::

        import torch_aclnn
        torch_aclnn.patch()
        train(model)                      # unmodified code
        print(torch_aclnn.patch_stats())  # what was routed
    """
    tid = threading.get_ident()
    with _lock:
        if tid in _global:
            return
        mode = _new_mode(_STATS if count else None)
        mode.__enter__()
        _global[tid] = mode


def unpatch() -> None:
    """Undo :func:`patch` in the calling thread (a no-op if it is not patched).

    Raises RuntimeError if a TorchFunctionMode entered after patch() is still
    active (leave that ``with`` block first)."""
    tid = threading.get_ident()
    with _lock:
        mode = _global.get(tid)
        if mode is None:
            return
        stack = torch.overrides._get_current_function_mode_stack()
        if not stack or stack[-1] is not mode:
            raise RuntimeError(
                "torch_aclnn.unpatch(): another TorchFunctionMode was entered after torch_aclnn.patch() and is "
                "still active; exit it first")
        mode.__exit__(None, None, None)
        del _global[tid]


def is_patched() -> bool:
    """Whether patch() is in effect in the calling thread, or a patched() block is active."""
    return any(isinstance(m, _RoutingMode) for m in torch.overrides._get_current_function_mode_stack())


@contextlib.contextmanager
def patched(stats: Optional[PatchStats] = None) -> Iterator[PatchStats]:
    """``with torch_aclnn.patched() as stats:`` — :func:`patch` for one block.

    Yields a fresh :class:`PatchStats` counting the calls of this block only
    (pass ``stats=`` to accumulate into your own); the process-wide counts of
    :func:`patch_stats` are not touched. Nests with patch() and other modes."""
    stats = PatchStats() if stats is None else stats
    with _new_mode(stats):
        yield stats


def patch_stats() -> PatchStats:
    """The counts of every call routed (or passed through) by :func:`patch`."""
    return _STATS


def reset_patch_stats() -> None:
    """Zero :func:`patch_stats`."""
    _STATS.reset()
