"""How the Python wrappers call their operators: :class:`Operator` (the
direct call in eager code, the OpOverload in compiled code, chosen by
:func:`compiling`) and :func:`planned` (an argument plan, kept per distinct
call in eager mode)."""
from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, NamedTuple, Optional

import torch

from ._errors import is_contract_error


def call_as(name: str, op: Callable, *args: Any) -> Any:
    """``op(*args)`` for the Python function ``name`` the user called: a
    contract error the operator raises names ``name`` (``torch_aclnn.max_pool3d``
    runs max_pool3d_with_indices; its errors say max_pool3d). Compiled code
    calls ``op`` as it is (no try block for dynamo to trace)."""
    if compiling():
        return op(*args)
    try:
        return op(*args)
    except (TypeError, ValueError, IndexError, RuntimeError) as e:
        if not is_contract_error(e):
            raise
        tag, _, rest = str(e).partition("] ")
        raise type(e)(f"{tag}] {name}: {rest.partition(': ')[2]}") from None


def _plan_key(shape, args):
    """A hashable key equal only for the same sizes and the same argument
    values and types (None, bool, int, float, or a list / tuple of ints and
    floats), else None (a symbolic size, another type)."""
    for size in shape:
        if type(size) is not int:  # (symbolic sizes outside dynamo)
            return None
    parts = [tuple(shape)]
    for v in args:
        t = type(v)
        if v is None or t is int or t is float or t is bool:
            parts.append((t, v))
        elif t is list or t is tuple:
            for e in v:
                if type(e) is not int:
                    break
            else:  # (ints only, the common case: the values alone, which no other part can equal)
                parts.append(tuple(v))
                continue
            types = tuple(map(type, v))
            for e in types:
                if e is not int and e is not float:
                    return None
            parts.append((types, tuple(v)))
        else:
            return None
    return tuple(parts)


def _frozen(result: Any) -> Any:
    """A plan's result (a tuple of lists and values, or a reason) with its lists as tuples."""
    if type(result) is tuple:
        return tuple(tuple(v) if type(v) is list else v for v in result)
    return result


# Whether dynamo is tracing the caller (torch.compiler.is_compiling, under a short name).
compiling = torch.compiler.is_compiling


# (plan, op, input shape, arguments) -> the plan's result; see planned.
_PLANS: Dict[tuple, Any] = {}
_PLANS_MAX = 1024


def planned(plan: Callable, op: str, input: Optional[torch.Tensor], *args: Any) -> Any:
    """``plan(op, input, *args)`` for a plan that reads only ``input``'s shape
    (or nothing of it: ``input`` None) and the plain arguments: the
    arithmetic that turns a call's arguments into the operator's (an output
    size, a window, ...) and the rules on them. A training step repeats the
    same calls, so in eager mode the result is kept per distinct (shape,
    arguments) when the arguments are all plain values (:func:`_plan_key`;
    at most ``_PLANS_MAX`` of them, then the cache starts over); a plan that
    raises keeps nothing. Compiled code plans at trace time. A kept result's
    lists are kept as tuples: it is handed to the operators (and so to any
    ``__torch_function__`` handler) on every later call."""
    if compiling() or not (input is None or isinstance(input, torch.Tensor)):
        return plan(op, input, *args)
    key = _plan_key(() if input is None else input.shape, args)  # (a plan given None for a tensor raises)
    if key is None:
        return plan(op, input, *args)
    key = (plan, op, key)
    hit = _PLANS.get(key)
    if hit is None:
        hit = _frozen(plan(op, input, *args))
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = hit
    return hit


class Operator(NamedTuple):
    """An operator as the Python API calls it: ``op[+compiling()]`` is, in
    eager code, its direct call (csrc/direct_call.cpp: the OpOverload's
    results and errors, shorter on a common call, every argument
    positional and of its schema type exactly) and, in compiled code, its
    OpOverload (dynamo does not trace into C). The ``+`` makes the flag an
    int: torch 2.11's dynamo refuses to index a tuple with a bool."""
    direct: Callable
    overload: Any

    @staticmethod
    def of(name: str) -> "Operator":
        """Operator ``name``'s direct call and its ``torch.ops.torch_aclnn.<name>.default``.
        A schema the direct call cannot take (an argument type without a
        converter, a keyword-only argument, a non-Tensor result: the list in
        csrc/direct_call.h) keeps the OpOverload in both places, slower but
        the same call (tests/test_direct_call.py checks that every operator
        has its direct call)."""
        overload = getattr(torch.ops.torch_aclnn, name).default
        try:
            direct = importlib.import_module("torch_aclnn._C")._direct_call(f"torch_aclnn::{name}", "", overload)
        except RuntimeError:
            direct = overload
        return Operator(direct, overload)
