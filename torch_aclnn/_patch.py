"""``torch_aclnn.patch()``: run an unmodified PyTorch script on torch_aclnn's kernels.

Two levels route the same calls by the same rule (docs/spec.md §8; the
decision per torch.nn.functional function is torch_aclnn/_dropin.py):

``level="dispatcher"`` (patch()'s default where torch >= 2.9 and torch_npu is
not loaded: :func:`default_patch_level`) replaces aten's CPU and CUDA kernels of
the aten operators that those functions and their autograd formulas call
(aten::elu, aten::elu_backward, aten::upsample_nearest3d, ...;
csrc/aten_routes/routes.cpp) by a C++ kernel that applies the rule and calls aten's own
kernel for calls outside the contract. Every other torch call pays nothing,
and the routed ones no Python, so a step bound by the host keeps torch's
speed. It is process-wide (every thread), reaches what runs through aten's
kernels and, in code compiled while it is on, the torch.nn.functional calls
(traced through the same decision as the function level:
_compiled_routes.py), and leaves
aten's autograd formulas in place, so a call is routed if the routes are on
when it runs: a backward run after ``unpatch()`` is aten's. A replacement
stays registered once made: switched off, it hands every call to aten's kernel.

``level="function"`` (patched()'s default): a
:class:`torch.overrides.TorchFunctionMode` sees every
call of a ``torch.nn.functional`` function that supports
``__torch_function__`` (F.interpolate, F.elu, F.selu, F.celu,
F.smooth_l1_loss, F.huber_loss, F.max_unpool3d, F.max_pool3d,
F.max_pool3d_with_indices, F.avg_pool3d and F.adaptive_avg_pool3d all do) together with the exact arguments the
caller wrote. It is scoped to the calling thread and to what it records (the
backward of a call routed in the block is torch_aclnn's wherever it runs),
reaches the NPU and F.huber_loss, and dynamo traces it, so
``torch.compile(fullgraph=True)`` puts the torch_aclnn operators into its
graphs, a block entered inside compiled code included. Its cost: torch's
``__torch_function__`` machinery on every torch call of the thread in eager
mode (a tensor attribute read included; docs/performance.md), and modes are not
active while autograd runs a backward, so the forward that
``torch.utils.checkpoint`` recomputes there uses torch unless the patch is
passed in as its context
(``context_fn=lambda: (contextlib.nullcontext(), torch_aclnn.patched(level="function"))``).

Why not replace ``torch.nn.functional.elu`` & co.: docs/patch.md.
"""
from __future__ import annotations

import contextlib
import importlib
import threading
import warnings
from typing import Dict, Iterator, List, Optional

import torch
from torch.overrides import TorchFunctionMode

from . import _compiled_routes, _dropin
from .ops._calls import compiling
from ._torch_api import entered, exited, function_mode_stack

__all__ = ["patch", "unpatch", "patched", "is_patched", "patch_stats", "reset_patch_stats", "PatchStats",
           "default_patch_level", "ROUTED_FUNCTIONS", "ROUTED_OPERATORS", "LEVELS"]

# The torch.nn.functional functions the patch can route.
ROUTED_FUNCTIONS = tuple(name for name, _ in _dropin.ROUTES.values())


def _C():
    return importlib.import_module("torch_aclnn._C")


# (aten operator, torch_aclnn operator) per route of patch(level="dispatcher") (csrc/aten_routes/routes.cpp)
_ROUTES = tuple(_C()._aten_routes())
# The aten operators patch(level="dispatcher") can route, as PatchStats names them
# (none where this torch cannot have routes: torch < 2.9).
ROUTED_OPERATORS = tuple(f"aten::{aten}" for aten, _ in _ROUTES)
LEVELS = ("function", "dispatcher")

_NAMES = ROUTED_FUNCTIONS
assert _NAMES == _compiled_routes.NAMES
_INDEX = {name: i for i, name in enumerate(_NAMES)}


class PatchStats:
    """What the patch did, per torch.nn.functional function name
    ("interpolate", "elu", "selu", "celu", "smooth_l1_loss", "huber_loss", "max_unpool3d", "max_pool3d",
    "max_pool3d_with_indices", "avg_pool3d", ...) and, for ``level="dispatcher"``, per aten
    operator ("aten::elu", "aten::upsample_nearest3d_backward", ...):

    * ``routed[name]``: calls computed by torch_aclnn;
    * ``passed[name]``: calls handed to torch unchanged;
    * ``reasons[(name, reason)]``: why, e.g. ``("interpolate", "mode='trilinear'")``. A
      reason can quote sizes or values, so after ``MAX_REASONS`` distinct keys, calls with
      a new reason count under ``(name, "other reasons")``.

    ``routed`` and ``passed`` count calls inside ``torch.compile``d code too,
    each time the compiled code runs: there the counter is a tensor that the
    compiled graph increments (so counting never causes a recompilation);
    eager calls count in plain Python ints. ``reasons`` records eager calls
    only. Only names with a non-zero count appear. The aten operators' counts
    are of every thread's calls while the object counts them (the routes
    count in C++, without reasons)."""

    MAX_REASONS = 256

    def __init__(self) -> None:
        self._eager = [[0] * len(_NAMES), [0] * len(_NAMES)]               # [routed, passed] x name
        # the same, for compiled code (on the CPU whatever torch.device(...) context is active)
        self._compiled = torch.zeros(2, len(_NAMES), dtype=torch.int64, device="cpu")
        self.reasons: Dict[tuple, int] = {}
        # the aten operators': [routed, passed] x route counted so far, the routes' own
        # counts when this object started counting them (while it does), and how many users
        # count into it
        self._aten = [[0] * len(_ROUTES), [0] * len(_ROUTES)]
        self._aten_base: Optional[tuple] = None
        self._aten_users = 0
        # the same for the calls of code compiled while the routes are on, per function
        # name (_compiled_routes.COUNTS; its value when this object started counting)
        self._routes_compiled = torch.zeros(2, len(_NAMES), dtype=torch.int64, device="cpu")
        self._routes_compiled_base: Optional[torch.Tensor] = None

    # (the aten counts are read and changed under _lock: a block may end in another thread)
    def _aten_start(self) -> None:
        self._aten_users += 1
        if self._aten_users == 1:
            self._aten_base = _C()._aten_route_counts()
            self._routes_compiled_base = _compiled_routes.COUNTS.clone()

    def _aten_stop(self) -> None:
        self._aten_users -= 1
        if self._aten_users == 0:
            self._aten = self._aten_counts()
            self._routes_compiled = self._routes_compiled_counts()
            self._aten_base = self._routes_compiled_base = None

    def _aten_counts(self) -> list:
        with _lock:
            if self._aten_base is None:
                return self._aten
            now = _C()._aten_route_counts()
            return [[self._aten[row][i] + now[i][row] - self._aten_base[i][row] for i in range(len(_ROUTES))]
                    for row in (0, 1)]

    def _routes_compiled_counts(self) -> torch.Tensor:
        with _lock:
            if self._routes_compiled_base is None:
                return self._routes_compiled
            return self._routes_compiled + _compiled_routes.COUNTS - self._routes_compiled_base

    def _add_reason(self, name: str, reason: str) -> None:
        key = (name, reason)
        if key not in self.reasons and len(self.reasons) >= self.MAX_REASONS:
            key = (name, "other reasons")
        self.reasons[key] = self.reasons.get(key, 0) + 1

    def _add(self, row: int, name: str) -> None:
        i = _INDEX[name]
        if compiling():
            self._compiled[row, i] += 1
        else:
            self._eager[row][i] += 1

    def _count(self, row: int) -> Dict[str, int]:
        compiled = (self._compiled[row] + self._routes_compiled_counts()[row]).tolist()
        counts = [a + b for a, b in zip(self._eager[row], compiled)]
        counts += self._aten_counts()[row]
        return {n: c for n, c in zip(_NAMES + ROUTED_OPERATORS, counts) if c}

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
        with _lock:
            self._aten = [[0] * len(_ROUTES), [0] * len(_ROUTES)]
            self._routes_compiled = torch.zeros_like(self._routes_compiled)
            if self._aten_base is not None:
                self._aten_base = _C()._aten_route_counts()
                self._routes_compiled_base = _compiled_routes.COUNTS.clone()

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
                if not compiling():
                    stats._add_reason(name, out)
            return func(*args, **kwargs)
        if stats is not None:
            stats._add(0, name)
        return out


# ---------------------------------------------------------------------------
# Public API.

_STATS = PatchStats()
_lock = threading.RLock()  # (PatchStats reads its aten counts under it, also from inside _aten_remove)
_global: Dict[int, _RoutingMode] = {}  # thread id -> the mode patch() entered there


def _new_mode(stats: Optional[PatchStats]) -> _RoutingMode:
    return _RoutingMode(stats)


# ---------------------------------------------------------------------------
# level="dispatcher": csrc/aten_routes/routes.cpp's routes, switched on process-wide.

# one per patch(level="dispatcher") / patched(...) block: its counts; the routes are on while there is one
_aten_users: List[Optional[PatchStats]] = []
_aten_patch: Optional[tuple] = None         # (its counts,) while patch(level="dispatcher") is a user


def route_keys() -> list:
    """(aten operator, dispatch key) of every route: the devices with the
    torch_aclnn operator's kernels, CPU and CUDA (on the NPU, torch_npu's
    aten kernels call aclnn already); max_pool3d as _dropin routes it (not
    on the CPU)."""
    keys = []
    for aten, ours in _ROUTES:
        devices = _dropin._DEVICES[ours] & {"cpu", "cuda"}
        if aten.startswith("max_pool3d") and not _dropin.ROUTE_POOL_ON_CPU:
            devices = devices - {"cpu"}
        keys += [(aten, device.upper()) for device in sorted(devices)]
    return keys


def _aten_add(stats: Optional[PatchStats]) -> None:
    """Adds a user of the routes, counting into ``stats``, switching them on
    (again: the keys follow _dropin.ROUTE_POOL_ON_CPU as it is now). Under _lock."""
    _C()._route_aten(route_keys())
    if stats is not None:
        stats._aten_start()
    _aten_users.append(stats)
    _switch_compiled()


def _aten_remove(stats: Optional[PatchStats], stacklevel: int = 3) -> None:
    """Removes a user, switching the routes off after the last (every call
    goes to aten's own kernel again). Under _lock."""
    for i, user in enumerate(_aten_users):  # (by identity: PatchStats defines no ==)
        if user is stats:
            del _aten_users[i]
            break
    if stats is not None:
        stats._aten_stop()
    if not _aten_users:
        alive = _C()._unroute_aten()
        if alive:
            warnings.warn(
                f"[torch_aclnn] the dispatcher-level routes are now off, and {alive} result(s) of routed calls still "
                "hold the autograd graph recorded while they were on: its backward, run from now on, uses torch's "
                "kernels (run loss.backward() before unpatch() / inside the patched() block; docs/patch.md)",
                stacklevel=stacklevel)
    _switch_compiled()


def _switch_compiled() -> None:
    """Code compiled from now on routes as the routes are now (_compiled_routes),
    counting into patch_stats() where patch(level="dispatcher") counts. Under _lock."""
    _compiled_routes.switch(bool(_aten_users), any(u is not None for u in _aten_users))


def default_patch_level() -> str:
    """The level of :func:`patch` without one: "dispatcher" where this torch
    has its routes (>= 2.9) and torch_npu is not loaded, else "function" (the
    routes replace aten's CPU and CUDA kernels only; on the NPU it is the mode
    that reaches torch_aclnn's NPU kernels). A :func:`patched` block takes
    "function" unless told otherwise."""
    return "dispatcher" if ROUTED_OPERATORS and getattr(torch, "npu", None) is None else "function"


def _check_level(level: Optional[str]) -> str:
    """``level``, or the default for None; ValueError for anything else."""
    if level is None:
        return default_patch_level()
    if level not in LEVELS:
        raise ValueError(f"[torch_aclnn] level must be one of {LEVELS} or None, got {level!r}")
    return level


def patch(count: bool = True, level: Optional[str] = None) -> None:
    """Route F.interpolate (5-D, nearest / nearest-exact), F.elu, F.selu,
    F.celu, F.smooth_l1_loss, F.max_unpool3d, F.max_pool3d (CUDA; with or
    without indices), F.avg_pool3d and F.adaptive_avg_pool3d (an output size other than 1)
    — and so nn.Upsample, nn.ELU, nn.SELU, nn.CELU, nn.SmoothL1Loss, nn.MaxUnpool3d,
    nn.MaxPool3d, nn.AvgPool3d, nn.AdaptiveAvgPool3d — to torch_aclnn from now
    on, until :func:`unpatch`. Calls outside torch_aclnn's contract (other
    modes, 4-D input, other dtypes or devices, ...) go to torch unchanged.
    Calling it again at the same level is a no-op.

    ``level`` (docs/patch.md):

    * ``"dispatcher"``: replace aten's CPU and CUDA kernels of the aten
      operators behind those functions (aten::elu, aten::elu_backward,
      aten::upsample_nearest3d, ...) by routes that apply the same rule, in
      every thread. No other torch call pays anything.
    * ``"function"``: a TorchFunctionMode in the calling thread sees the
      torch.nn.functional calls with their Python arguments (F.huber_loss
      and in-place ELU too, the NPU too), and torch.compile puts the
      torch_aclnn operators into its graphs; every torch call of that thread
      pays the mode's per-call cost.
    * ``None`` (default): :func:`default_patch_level`, "dispatcher" where this
      torch has it (>= 2.9) and torch_npu is not loaded.

    At the dispatcher level a call is routed if the routes are on when it
    runs, the backward's included: call ``loss.backward()`` before
    :func:`unpatch`.

    ``count=False``: do not count calls in :func:`patch_stats` (inside
    compiled graphs, counting is a tiny CPU tensor update per call).

    Example::

        import torch_aclnn
        torch_aclnn.patch()
        train(model)                      # unmodified code
        print(torch_aclnn.patch_stats())  # what was routed
    """
    global _aten_patch
    level = _check_level(level)
    if level == "dispatcher":
        with _lock:
            if _aten_patch is None:
                _aten_add(_STATS if count else None)
                _aten_patch = (_STATS if count else None,)
        return
    tid = threading.get_ident()
    with _lock:
        if tid in _global:
            return
        mode = _new_mode(_STATS if count else None)
        mode.__enter__()
        _global[tid] = mode


def unpatch(level: Optional[str] = None) -> None:
    """Undo :func:`patch`: ``level="function"`` in the calling thread,
    ``level="dispatcher"`` in every thread, ``None`` (default) both. A no-op
    for a level that is not patched.

    Raises RuntimeError, and undoes nothing, if a TorchFunctionMode entered
    after patch(level="function") is still active (leave that ``with`` block
    first). Switching the dispatcher level off warns (UserWarning) while
    results of routed calls still hold an autograd graph recorded with the
    routes on: its backward, run from then on, is torch's."""
    global _aten_patch
    levels = LEVELS if level is None else (_check_level(level),)
    tid = threading.get_ident()
    with _lock:
        mode = _global.get(tid) if "function" in levels else None
        if mode is not None:
            stack = function_mode_stack()
            if not stack or stack[-1] is not mode:
                raise RuntimeError(
                    "torch_aclnn.unpatch(): another TorchFunctionMode was entered after torch_aclnn.patch() and is "
                    "still active; exit it first")
            mode.__exit__(None, None, None)
            del _global[tid]
        if "dispatcher" in levels and _aten_patch is not None:
            _aten_remove(_aten_patch[0])
            _aten_patch = None


def is_patched(level: Optional[str] = None) -> bool:
    """Whether calls are routed: ``level="function"``: patch() or a patched()
    block is in effect in the calling thread; ``level="dispatcher"``: the
    routes are switched on (in every thread); ``None`` (default): either."""
    if level is None:
        return any(is_patched(lv) for lv in LEVELS)
    if _check_level(level) == "dispatcher":
        return bool(_aten_users)
    return any(isinstance(m, _RoutingMode) for m in function_mode_stack())


@contextlib.contextmanager
def patched(stats: Optional[PatchStats] = None, level: Optional[str] = "function") -> Iterator[PatchStats]:
    """``with torch_aclnn.patched() as stats:`` — :func:`patch` for one block.

    Yields a fresh :class:`PatchStats` counting the calls of this block
    (pass ``stats=`` to accumulate into your own).

    ``level="function"`` (the default, unlike :func:`patch`'s): the calling
    thread's torch.nn.functional calls inside the block; the backward of a
    call routed there is torch_aclnn's wherever it runs; the block counts its
    own calls only (not in :func:`patch_stats`); nests with patch() and other
    modes, and inside torch.compile'd code.

    ``level="dispatcher"``: the routes are on, in every thread, until the
    last such block or ``patch(level="dispatcher")`` ends, and route every
    call made meanwhile, forward or backward (so keep ``loss.backward()``
    inside the block); the block counts every thread's calls meanwhile, per
    aten operator, as does every other counter active then (an enclosing
    block, :func:`patch_stats` under ``patch(level="dispatcher")``).

    ``level=None``: :func:`default_patch_level`, patch()'s default."""
    level = _check_level(level)
    stats = PatchStats() if stats is None else stats
    if level == "dispatcher":
        with _lock:
            _aten_add(stats)
        try:
            yield stats
        finally:
            with _lock:
                _aten_remove(stats, stacklevel=4)
        return
    with _new_mode(stats):
        yield stats


def patch_stats() -> PatchStats:
    """The counts of every call routed (or passed through) by :func:`patch`."""
    return _STATS


def reset_patch_stats() -> None:
    """Zero :func:`patch_stats`."""
    _STATS.reset()
