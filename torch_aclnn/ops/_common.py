"""Helpers shared by the operator families' Python APIs."""
from __future__ import annotations

import importlib
import math
import numbers
import operator
from typing import Any, Callable, Optional, Sequence

import torch
from torch._library import autograd as _library_autograd
from torch._library import utils as _library_utils

NULLPTR = 161001
PARAM_INVALID = 161002


def contract_error(code: int, op: str, message: str) -> str:
    """The message format every backend uses: ``[torch_aclnn 161002] op: ...``."""
    return f"[torch_aclnn {code}] {op}: {message}"


def require(op: str, **args: Any) -> None:
    """161001: a required argument is None (the schema would reject it with a
    less helpful message before any kernel runs)."""
    for name, value in args.items():
        if value is None:
            raise TypeError(contract_error(NULLPTR, op, f"{name} is required, got None"))


def invalid(op: str, message: str, exc: type = ValueError) -> Exception:
    return exc(contract_error(PARAM_INVALID, op, message))


def register_autograd(qualname: str, backward: Callable, *, setup_context: Callable) -> None:
    """torch.library.register_autograd for a torch_aclnn operator: the same
    backward and setup_context, built into the same autograd.Function by
    torch's own make_autograd_impl. It is called by the operator's C++
    Autograd kernel (csrc/autograd.cpp) only when a gradient is needed; a call
    that needs none goes to the backend kernel without entering Python."""
    op = _library_utils.lookup_op(qualname)
    impl = _library_autograd.make_autograd_impl(op, _library_autograd.Info(backward, setup_context))
    from_raw = torch._C.DispatchKeySet.from_raw_repr

    def formula(raw_keyset: int, *args: Any) -> Any:
        return impl(from_raw(raw_keyset), *args)

    importlib.import_module("torch_aclnn._C")._set_autograd_formula(qualname, formula)


# ---------------------------------------------------------------------------
# Python-level arguments (spec "Edge rules": the wrappers speak the contract's
# error language). Each check names the argument as the user passed it and
# shows the value given. Symbolic values (torch.SymInt / SymFloat under
# torch.compile(dynamic=True)) are passed through untouched: converting them
# would specialise the trace; the operator's contract checks them instead.

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
_SYMBOLIC = (torch.SymInt, torch.SymFloat)


def _show(value: Any) -> str:
    if isinstance(value, (list, tuple, torch.Size)):
        return repr(list(value))
    return repr(value)


def _subject(name: str, shown: Any, singular: str, plural: str) -> str:
    """'size must be an int' for one value, 'size elements must be ints' for a list."""
    if isinstance(shown, (list, tuple, torch.Size)):
        return f"{name} elements must be {plural}"
    return f"{name} must be {singular}"


def int_arg(op: str, name: str, value: Any, *, minimum: Optional[int] = None, shown: Any = None) -> Any:
    """An int argument: a Python int, a numpy integer, a one-element integer
    tensor or a torch.SymInt (anything with ``__index__``), not bool.
    TypeError 161002 for any other type (float, str, None, ...); ValueError
    161002 when it does not fit in int64 or is below ``minimum``. ``shown``
    is the whole argument as given (for one element of a list)."""
    shown = value if shown is None else shown
    if isinstance(value, torch.SymInt):
        return value
    try:
        if isinstance(value, bool):
            raise TypeError
        # (an int as is: under dynamo a symbolic size is an int, and
        # operator.index would specialise it; comparisons do not)
        v = value if isinstance(value, int) else operator.index(value)
    except TypeError:
        raise invalid(op, f"{_subject(name, shown, 'an int', 'ints')}, got {_show(shown)} "
                      f"({type(value).__name__})", TypeError) from None
    if not INT64_MIN <= v <= INT64_MAX:
        raise invalid(op, f"{_subject(name, shown, 'in', 'in')} int64's range, got {_show(shown)}")
    if minimum is not None and v < minimum:
        rule = "> 0" if minimum == 1 else f">= {minimum}"
        raise invalid(op, f"{_subject(name, shown, rule, rule)}, got {_show(shown)}")
    return v


def int_list(op: str, name: str, value: Any, *, lengths: Sequence[int] = (3,), scalar: bool = True,
             minimum: Optional[int] = None, what: str = "3 elements (D, H, W)") -> list:
    """An int (when ``scalar``: repeated ``lengths[0]`` times) or a list /
    tuple / torch.Size of ints whose length is one of ``lengths`` (``what``
    says so in the error), each element checked by :func:`int_arg`."""
    if isinstance(value, (list, tuple, torch.Size)):
        if len(value) not in lengths:
            raise invalid(op, f"{name} must {'be an int or ' if scalar else ''}have {what}, got {_show(value)}")
        return [int_arg(op, name, v, minimum=minimum, shown=value) for v in value]
    if not scalar:
        raise invalid(op, f"{name} must be a list of ints with {what}, got {_show(value)} "
                      f"({type(value).__name__})", TypeError)
    return [int_arg(op, name, value, minimum=minimum)] * lengths[0]


def int_array(op: str, name: str, value: Any) -> Any:
    """An operator's int-array argument as the user gives it (an int, or a
    list / tuple / torch.Size of ints): the elements are checked by
    :func:`int_arg`; the length and the values' rules are the contract's."""
    if isinstance(value, (list, tuple, torch.Size)):
        return [int_arg(op, name, v, shown=value) for v in value]
    return int_arg(op, name, value)


def real_arg(op: str, name: str, value: Any, *, shown: Any = None) -> Any:
    """A real-number argument: int or float (numpy's too) or a symbolic one,
    not bool, complex or str. Returned as a float (symbolic: unchanged).
    ``shown`` is the whole argument when ``value`` is one of its elements."""
    whole = value if shown is None else shown
    if isinstance(value, _SYMBOLIC):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        element = shown is not None and shown is not value  # one element of a list argument
        subject = _subject(name, whole, "a real number", "real numbers") if element else f"{name} must be a real number"
        raise invalid(op, f"{subject} (int or float), got {_show(whole)} ({type(value).__name__})", TypeError)
    try:
        return float(value)
    except OverflowError:  # an int beyond float's range
        raise invalid(op, f"{_subject(name, whole, 'finite', 'finite')}, got {_show(whole)}") from None


def positive_scale(op: str, name: str, value: Any, *, shown: Any = None) -> Any:
    """A scale factor: a finite real number > 0 (see :func:`real_arg`)."""
    shown = value if shown is None else shown
    v = real_arg(op, name, value, shown=shown)
    if not (v > 0 and v < math.inf):  # NaN fails both (SymFloat-safe)
        raise invalid(op, f"{_subject(name, shown, 'finite and > 0', 'finite and > 0')}, got {_show(shown)}")
    return v


def scaled_size(op: str, name: str, size: Any, scale: Any, axis: str, shown: Any) -> Any:
    """``floor(size * scale)``, as F.interpolate computes an output size from
    a scale factor; a concrete result must be > 0 and fit in int64."""
    product = torch.sym_float(size) * scale
    if isinstance(product, float) and not product < 2.0 ** 63:  # inf included
        raise invalid(op, f"{name} {_show(shown)} gives an output size that overflows int64: "
                      f"floor({size} * {scale!r}) on axis {axis}")
    out = math.floor(product)
    if isinstance(out, int):
        if out <= 0:
            raise invalid(op, f"{name} {_show(shown)} gives an output size of {out} on axis {axis} "
                          f"(floor({size} * {scale!r})); every output size must be > 0")
    return out


def optional_real(op: str, name: str, value: Any) -> Any:
    """None, or a real number (:func:`real_arg`)."""
    return None if value is None else real_arg(op, name, value)


def bool_arg(op: str, name: str, value: Any) -> Any:
    """A bool (or a symbolic one)."""
    if isinstance(value, (bool, torch.SymBool)):
        return value
    raise invalid(op, f"{name} must be a bool, got {_show(value)} ({type(value).__name__})", TypeError)
