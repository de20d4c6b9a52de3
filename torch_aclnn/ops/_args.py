"""Python-level arguments (docs/spec.md "Edge rules": the wrappers speak the
contract's error language). Each check names the argument as the user passed
it and shows the value given. Symbolic values (torch.SymInt / SymFloat under
torch.compile(dynamic=True)) are passed through untouched: converting them
would specialise the trace; the operator's contract checks them instead."""
from __future__ import annotations

import math
import numbers
import operator
from typing import Any, Optional, Sequence

import torch

from ._errors import invalid

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
    if type(value) is int and INT64_MIN <= value <= INT64_MAX and (minimum is None or value >= minimum):
        return value  # (the common case, first)
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


def int_array(op: str, name: str, value: Any, *, scalar: bool = False) -> Any:
    """An operator's int-array argument as the user gives it (a list / tuple /
    torch.Size of ints, or with ``scalar`` also an int): the elements are
    checked by :func:`int_arg`; the length and the values' rules are the
    contract's."""
    if isinstance(value, (list, tuple, torch.Size)):
        return [int_arg(op, name, v, shown=value) for v in value]
    if not scalar:
        raise invalid(op, f"{name} must be a list of ints, got {_show(value)} ({type(value).__name__})", TypeError)
    return int_arg(op, name, value)


def real_arg(op: str, name: str, value: Any, *, shown: Any = None, tensor: bool = False) -> Any:
    """A real-number argument: int or float (numpy's too) or a symbolic one,
    not bool, complex or str; with ``tensor``, also a 0-dim real tensor that
    does not require grad, as torch takes one for a Scalar argument (elu's
    alpha, smooth_l1's beta; not a scale factor). Returned as a float
    (symbolic: unchanged). ``shown`` is the whole argument when ``value`` is
    one of its elements."""
    if type(value) is float:  # (the common case, first)
        return value
    whole = value if shown is None else shown
    if isinstance(value, _SYMBOLIC):
        return value
    if tensor and isinstance(value, torch.Tensor) and value.dim() == 0 and not value.requires_grad \
            and not value.is_complex() and value.dtype is not torch.bool:
        value = value.item()
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


_INT = frozenset((int,))
_OPTIONAL_FLOAT = frozenset((float, type(None)))


def plain_ints(*values: Any) -> bool:
    """Whether each value is a list or tuple of ints (exactly int: not bool,
    not symbolic): an int-array argument that needs none of :func:`int_arg`'s
    checks but the range, which torch's argument parser applies too (an
    element beyond int64 makes it raise a RuntimeError, on which the caller
    runs the checks, to raise the contract's error naming it)."""
    for v in values:
        t = type(v)
        if (t is not list and t is not tuple) or not _INT.issuperset(map(type, v)):
            return False
    return True


def optional_floats(*values: Any) -> bool:
    """Whether each value is None or exactly a float."""
    return _OPTIONAL_FLOAT.issuperset(map(type, values))


def optional_real(op: str, name: str, value: Any) -> Any:
    """None, or a real number (:func:`real_arg`)."""
    return None if value is None else real_arg(op, name, value)


def bool_arg(op: str, name: str, value: Any) -> Any:
    """A bool (or a symbolic one)."""
    if isinstance(value, (bool, torch.SymBool)):
        return value
    raise invalid(op, f"{name} must be a bool, got {_show(value)} ({type(value).__name__})", TypeError)
