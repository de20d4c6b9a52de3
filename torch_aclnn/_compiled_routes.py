"""patch(level="dispatcher") inside torch.compile: the routes there.

The dispatcher level replaces aten's CPU and CUDA kernels (csrc/aten_routes/routes.cpp),
which compiled code mostly does not call: dynamo records each
``torch.nn.functional`` function of ``_dropin.ROUTES`` as one graph node,
which AOTAutograd turns into aten operators that inductor decomposes into
its own code (elu, upsample_nearest3d, max_unpool3d, ...). Only those that
inductor leaves to aten's kernel (smooth_l1_loss) would reach a route, and
aten's own meta function of max_unpool3d refuses deterministic mode, so a
compiled model with MaxUnpool3d failed under
``torch.use_deterministic_algorithms(True)`` whatever the patch.

So while the routes are on, dynamo traces each of those functions as the
function level's mode does: the same decision (``_dropin.decide``), which
puts the torch_aclnn operator into the graph for a call inside the contract,
else the torch function itself. To do so, each function of ``_dropin.ROUTES``
gets a dynamo polyfill (``torch.compiler.substitute_in_graph``) that reads
``_state.on``; dynamo guards on it, so code compiled while the routes were on
recompiles once they are off, and the other way round. The torch function
itself stays a graph node through a twin of it (the same code under another
identity; dynamo's in-graph rule moves to the twin, and dynamo lets a
TorchFunctionMode see its calls), which ``_dropin.ROUTES`` maps as the
original, so the function level's mode still routes it.

Dynamo is imported the first time the routes are switched on (the polyfills
must exist before anything is compiled). Where this torch's dynamo lacks
what it needs, compiled code keeps aten's operators, as before, and the
"torch_aclnn" logger says so once.
"""
from __future__ import annotations

import logging
import threading
import types
from typing import Callable, Optional

import torch

from . import _dropin
from ._torch_api import dynamo_function_tables

_log = logging.getLogger("torch_aclnn")


# The functions' names, in _dropin.ROUTES's order (_patch.ROUTED_FUNCTIONS).
NAMES = tuple(name for name, _ in _dropin.ROUTES.values())
# [routed, passed] x name: the calls of compiled code while the routes are on, all
# threads; a PatchStats counting the routes adds what these grow by meanwhile, as
# it does with the routes' own counts in C++ (a tensor, so that counting never recompiles).
COUNTS = torch.zeros(2, len(NAMES), dtype=torch.int64, device="cpu")


class _State:
    on = False        # the routes are switched on (read by the polyfills; dynamo guards on it)
    count = False     # some user of the routes counts


_state = _State()
_lock = threading.Lock()
_registered: Optional[bool] = None  # None: not tried yet; False: this torch cannot


def _twin(fn: Callable) -> Callable:
    """A function with ``fn``'s code, defaults and closure under another identity."""
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    twin.__kwdefaults__ = fn.__kwdefaults__
    twin.__qualname__ = fn.__qualname__
    twin.__module__ = fn.__module__
    twin.__doc__ = fn.__doc__
    return twin


def _polyfill(name: str, decision: Callable, torch_fn: Callable) -> Callable:
    i = NAMES.index(name)

    def traced(*args, **kwargs):
        if _state.on:
            out = _dropin.decide(decision, args, kwargs)
            routed = not isinstance(out, str)
            if _state.count:
                COUNTS[0 if routed else 1, i] += 1
            if routed:
                return out
        return torch_fn(*args, **kwargs)
    traced.__name__ = traced.__qualname__ = f"{name}_routed"
    return traced


def _register() -> bool:
    """Registers the polyfills (once); False where this torch cannot."""
    global _registered
    if _registered is not None:
        return _registered
    _registered = False
    try:
        import torch.compiler

        rules, overridable = dynamo_function_tables()
        for fn, (name, decision) in list(_dropin.ROUTES.items()):
            twin = _twin(fn)
            if fn in rules:  # (an in-graph function: its twin takes its rule)
                rules[twin] = rules.pop(fn)
            if fn in overridable:  # (and a TorchFunctionMode sees its calls)
                overridable.add(twin)
            _dropin.ROUTES[twin] = (name, decision)
            torch.compiler.substitute_in_graph(fn, skip_signature_check=True)(_polyfill(name, decision, twin))
        _registered = True
    except Exception as e:  # (torch's private dynamo tables differ in this version)
        _log.warning("torch_aclnn: patch(level='dispatcher') cannot route inside torch.compile with this torch "
                     "(%s: %s); compiled code runs torch's operators there. patch(level='function') routes them.",
                     type(e).__name__, e)
    return _registered


def switch(on: bool, count: bool) -> None:
    """The routes are switched on (``on``) or off; ``count``: compiled calls count in COUNTS."""
    with _lock:
        if on:
            _register()
        _state.on = on
        _state.count = on and count
