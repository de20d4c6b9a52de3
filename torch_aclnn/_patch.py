"""``torch_aclnn.patch()``: run an unmodified PyTorch script on torch_aclnn's kernels.

A :class:`torch.overrides.TorchFunctionMode` sees every call of a
``torch.nn.functional`` function that supports ``__torch_function__``
(F.interpolate, F.elu, F.selu, F.celu, F.smooth_l1_loss, F.huber_loss,
F.max_unpool3d, F.max_pool3d and F.max_pool3d_with_indices all do) together
with the exact arguments the caller wrote. For these nine, torch_aclnn/_dropin.py decides from those arguments whether
the call lies inside torch_aclnn's contract: if so torch_aclnn computes it,
otherwise the torch function itself runs, unchanged (the same decision
torch_aclnn.nn.functional makes). Every other torch call passes straight
through.

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
import threading
from typing import Dict, Iterator, Optional

import torch
from torch.overrides import TorchFunctionMode

from . import _dropin
from ._torch_api import entered, exited, function_mode_stack

__all__ = ["patch", "unpatch", "patched", "is_patched", "patch_stats", "reset_patch_stats", "PatchStats",
           "ROUTED_FUNCTIONS"]

# The torch.nn.functional functions the patch can route.
ROUTED_FUNCTIONS = tuple(name for name, _ in _dropin.ROUTES.values())

_NAMES = ROUTED_FUNCTIONS
_INDEX = {name: i for i, name in enumerate(_NAMES)}


class PatchStats:
    """What the patch did, per torch.nn.functional function name
    ("interpolate", "elu", "selu", "celu", "smooth_l1_loss", "huber_loss", "max_unpool3d", "max_pool3d",
    "max_pool3d_with_indices"):

    * ``routed[name]``: calls computed by torch_aclnn;
    * ``passed[name]``: calls handed to torch unchanged;
    * ``reasons[(name, reason)]``: why, e.g. ``("interpolate", "mode='trilinear'")``. A
      reason can quote sizes or values, so after ``MAX_REASONS`` distinct keys, calls with
      a new reason count under ``(name, "other reasons")``.

    ``routed`` and ``passed`` count calls inside ``torch.compile``d code too,
    each time the compiled code runs: there the counter is a tensor that the
    compiled graph increments (so counting never causes a recompilation);
    eager calls count in plain Python ints. ``reasons`` records eager calls
    only. Only names with a non-zero count appear."""

    MAX_REASONS = 256

    def __init__(self) -> None:
        self._eager = [[0] * len(_NAMES), [0] * len(_NAMES)]               # [routed, passed] x name
        # the same, for compiled code (on the CPU whatever torch.device(...) context is active)
        self._compiled = torch.zeros(2, len(_NAMES), dtype=torch.int64, device="cpu")
        self.reasons: Dict[tuple, int] = {}

    def _add_reason(self, name: str, reason: str) -> None:
        key = (name, reason)
        if key not in self.reasons and len(self.reasons) >= self.MAX_REASONS:
            key = (name, "other reasons")
        self.reasons[key] = self.reasons.get(key, 0) + 1

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


class _RoutingMode(TorchFunctionMode):
    def __init__(self, stats: Optional[PatchStats]) -> None:
        super().__init__()
        self.stats = stats

    def __enter__(self):
        entered(self)
        return super().__enter__()

    def __exit__(self, *exc):
        exited(self)
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        route = _dropin.ROUTES.get(func)
        if route is None:
            return func(*args, **kwargs)
        name, decision = route
        out = _dropin.decide(decision, args, kwargs)
        stats = self.stats
        if isinstance(out, str):
            if stats is not None:
                stats._add(1, name)
                if not torch.compiler.is_compiling():
                    stats._add_reason(name, out)
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
    return _RoutingMode(stats)


def patch(count: bool = True) -> None:
    """Route F.interpolate (5-D, nearest / nearest-exact), F.elu, F.selu,
    F.celu, F.smooth_l1_loss, F.huber_loss, F.max_unpool3d and F.max_pool3d
    (with or without indices) — and so nn.Upsample, nn.ELU, nn.SELU, nn.CELU,
    nn.SmoothL1Loss, nn.HuberLoss, nn.MaxUnpool3d, nn.MaxPool3d — to torch_aclnn from now on, in the calling thread, until
    :func:`unpatch`. Calls outside torch_aclnn's contract (other modes, 4-D
    input, other dtypes or devices, ...) go to torch unchanged. Calling it
    again is a no-op.

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
        stack = function_mode_stack()
        if not stack or stack[-1] is not mode:
            raise RuntimeError(
                "torch_aclnn.unpatch(): another TorchFunctionMode was entered after torch_aclnn.patch() and is "
                "still active; exit it first")
        mode.__exit__(None, None, None)
        del _global[tid]


def is_patched() -> bool:
    """Whether patch() is in effect in the calling thread, or a patched() block is active."""
    return any(isinstance(m, _RoutingMode) for m in function_mode_stack())


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
