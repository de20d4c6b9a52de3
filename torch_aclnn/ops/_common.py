"""Helpers shared by the operator families' Python APIs."""
from __future__ import annotations

import importlib
import logging
import math
import numbers
import operator
from typing import Any, Callable, Dict, NamedTuple, Optional, Sequence

import torch

NULLPTR = 161001
PARAM_INVALID = 161002


def contract_error(code: int, op: str, message: str) -> str:
    """The message format every backend uses: ``[torch_aclnn 161002] op: ...``."""
    return f"[torch_aclnn {code}] {op}: {message}"


class _QuietContractErrors(logging.Filter):
    """Drops the ERROR records torch's fake-tensor code writes, with a full
    traceback, when a Meta kernel raises: for a torch_aclnn contract error
    that is noise before the error itself, which torch.compile raises next
    with the tagged message (TorchRuntimeError: ... got TypeError('[torch_aclnn
    161002] ...')). Every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (exc is not None and str(exc).startswith("[torch_aclnn "))


def quiet_contract_error_logs() -> None:
    """Installs :class:`_QuietContractErrors` on torch's fake-tensor logger (once)."""
    from .._torch_api import FAKE_TENSOR_LOGGER

    logger = logging.getLogger(FAKE_TENSOR_LOGGER)
    if not any(isinstance(f, _QuietContractErrors) for f in logger.filters):
        logger.addFilter(_QuietContractErrors())


def require(op: str, **args: Any) -> None:
    """161001: a required argument is None (the schema would reject it with a
    less helpful message before any kernel runs)."""
    for name, value in args.items():
        if value is None:
            raise TypeError(contract_error(NULLPTR, op, f"{name} is required, got None"))


def tensors(op: str, **args: Any) -> None:
    """161002 TypeError: an argument the schema takes as a Tensor is neither a
    tensor nor an object that handles torch calls itself (``__torch_function__``,
    as torch.fx's Proxy); None is :func:`require`'s."""
    for name, value in args.items():
        if not isinstance(value, torch.Tensor) and not hasattr(type(value), "__torch_function__"):
            raise invalid(op, f"{name} must be a Tensor, got {type(value).__name__}", TypeError)


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
        message = str(e)
        tag, sep, rest = message.partition("] ")
        if not (message.startswith("[torch_aclnn ") and sep and ": " in rest) or type(e).__module__ != "builtins":
            raise
        raise type(e)(f"{tag}] {name}: {rest.partition(': ')[2]}") from None


def write_out(op: str, out: Any, *args: Any) -> torch.Tensor:
    """The out= of a backward wrapper: ``torch.ops.torch_aclnn.<op>.grad_input(*args,
    grad_input=out)``, which writes ``out``; returns it. ``out`` must be a tensor
    (or handle torch calls itself, as :func:`tensors`): anything else is a
    161002 TypeError naming ``out``, the wrapper's argument."""
    if not isinstance(out, torch.Tensor) and not hasattr(type(out), "__torch_function__"):
        raise invalid(op, f"out must be a Tensor, got {type(out).__name__}", TypeError)
    getattr(torch.ops.torch_aclnn, op).grad_input(*args, grad_input=out)
    return out


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


def invalid(op: str, message: str, exc: type = ValueError) -> Exception:
    return exc(contract_error(PARAM_INVALID, op, message))


def register_autograd(qualname: str, jvp: Callable) -> type:
    """The operator's torch.autograd.Function, for the calls its C++ Autograd
    kernel (csrc/autograd/kernel.cpp) does not record itself: those with a
    forward-mode tangent and those inside torch.func transforms. Its backward
    is the operator's C++ formula (csrc/autograd/<family>.cpp, through
    ``torch_aclnn._C._derivative``), which plain autograd runs without this
    class; ``jvp(args, dtype, *tangents)`` is the forward-mode formula, given
    the call's arguments in schema order (the tensors the derivative keeps,
    stand-ins for those it keeps "like", None for the others), the result's
    dtype and one tangent (or None) per argument; for an operator with
    several results (values and integer indices) the arguments are followed
    by the kept results, and the jvp returns the first result's tangent
    (the others are not differentiable). ``generate_vmap_rule``
    builds its vmap rule from the operators' own (:func:`register_vmap`),
    which torch.func's transforms over it (jacrev, jacfwd, hessian, vmap of
    grad) need. Returns the class.

    ``forward`` calls the operator again: Function.apply runs it with grad
    mode and forward grad mode off, so that call goes below autograd, as the
    Function torch.library generates does with its explicit redispatch."""
    namespace, name = qualname.split("::")
    op = getattr(getattr(torch.ops, namespace), name).default
    C = importlib.import_module("torch_aclnn._C")
    keep = C._derivative_keep(qualname)
    several = len(op._schema.returns) > 1

    def forward(*args: Any) -> Any:
        return op(*args)

    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        values = tuple(inputs) + (tuple(output) if several else ())
        kept = [x for x, k in zip(values, keep) if k == "value"]
        ctx.save_for_backward(*kept)
        ctx.save_for_forward(*kept)
        # (for "like": shape, dtype and device only, as the C++ node keeps them)
        ctx.inputs = [(x.shape, x.dtype, x.device) if k == "like" else None if isinstance(x, torch.Tensor) else x
                      for x, k in zip(values, keep)]
        if several:
            ctx.mark_non_differentiable(*output[1:])
        ctx.dtype = (output[0] if several else output).dtype

    def arguments(ctx: Any) -> list:
        kept = iter(ctx.saved_tensors)
        return [next(kept) if k == "value" else _stand_in(*x) if k == "like" else x for x, k in zip(ctx.inputs, keep)]

    def backward(ctx: Any, grad: torch.Tensor, *_: Any) -> tuple:
        return C._derivative(qualname, arguments(ctx), ctx.needs_input_grad, grad)

    def forward_ad(ctx: Any, *tangents: Any) -> Any:
        tangent = jvp(arguments(ctx), ctx.dtype, *tangents)
        return (tangent,) + (None,) * (len(op._schema.returns) - 1) if several else tangent

    # The grad_fn of its results is "<namespace>_<name>_defaultBackward" (it names the overload).
    function = type(f"{namespace}_{name}_default", (torch.autograd.Function,), {
        "__doc__": f"The autograd.Function of {qualname}.",
        "__module__": jvp.__module__,
        "forward": staticmethod(forward),
        "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward),
        "jvp": staticmethod(forward_ad),
        "generate_vmap_rule": True,
    })
    C._set_autograd_formula(qualname, function.apply)
    return function


def reverse(qualname: str, args: list, index: int, v: torch.Tensor) -> torch.Tensor:
    """The operator's C++ backward formula for argument ``index`` alone,
    applied to ``v``: for a derivative that is elementwise (a diagonal
    Jacobian), also its forward-mode tangent."""
    needs = [i == index for i in range(len(args))]
    return importlib.import_module("torch_aclnn._C")._derivative(qualname, args, needs, v)[index]


def _stand_in(shape, dtype, device) -> torch.Tensor:
    """A tensor of this shape, dtype and device with one element of memory (a
    derivative's ``like`` argument: only those are read)."""
    return torch.empty((), dtype=dtype, device=device).expand(shape)


# ---------------------------------------------------------------------------
# Python-level arguments (docs/spec.md "Edge rules": the wrappers speak the contract's
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


def register_vmap(qualname: str, rule: Callable) -> None:
    """``torch.library.register_vmap(qualname, rule)``: how torch.vmap (and
    the torch.func transforms built on it) batches the operator. The
    dispatcher leaves out trailing arguments equal to their defaults: the
    rule's signature gives them the schema's defaults."""
    torch.library.register_vmap(qualname, rule)


def batch_first(t: torch.Tensor, bdim: Optional[int], batch_size: int) -> torch.Tensor:
    """A vmap rule's argument with its batch dimension first; an unbatched one
    (``bdim`` None) expanded to the batch (stride 0, no copy)."""
    return t.movedim(bdim, 0) if bdim is not None else t.expand(batch_size, *t.shape)


def fold_batch(tensors: Sequence[torch.Tensor], in_dims: Sequence[Optional[int]], batch_size: int,
               ranks: Sequence[int] = (5, 6)) -> Optional[tuple]:
    """A vmap rule's tensors with the batch dimension folded into N, and the
    (batch, N) sizes to unflatten the result with; None where their logical
    ranks differ or are not ``ranks`` (left to the unbatched calls, whose
    error it is). For operators whose planes (n, c) are independent."""
    full = [batch_first(t, d, batch_size) for t, d in zip(tensors, in_dims)]
    if any(t.dim() != full[0].dim() for t in full) or full[0].dim() not in ranks:
        return None
    return [t.flatten(0, 1) for t in full], full[0].shape[:2]


def plane_vmap(op: Callable, tensors: int, shape_only: Sequence[int] = ()) -> Callable:
    """The vmap rule of an operator whose first ``tensors`` arguments hold
    independent (n, c) planes (the rest plain, no schema defaults): the batch
    folded into N and one call, its results unflattened; else
    :func:`vmap_loop`. An unbatched argument at a position in ``shape_only``
    lends only its shape and dtype: the folded call gets a stride-0 stand-in,
    not a copy per batch element."""

    def rule(info, in_dims, *args):
        planes = [a.new_zeros(()).expand(a.shape) if i in shape_only and in_dims[i] is None else a
                  for i, a in enumerate(args[:tensors])]
        folded = fold_batch(planes, in_dims[:tensors], info.batch_size)
        if folded is None:
            return vmap_loop(op, info.batch_size, in_dims, *args)
        parts, batch_n = folded
        out = op(*parts, *args[tensors:])
        if isinstance(out, tuple):  # several results
            return tuple(r.unflatten(0, batch_n) for r in out), (0,) * len(out)
        return out.unflatten(0, batch_n), 0

    return rule


def vmap_loop(op: Callable, batch_size: int, in_dims: tuple, *args: Any) -> tuple:
    """The exact vmap rule of any operator: ``op`` once per batch element,
    the results stacked along dimension 0 (so every error is the unbatched
    call's)."""
    # None for the defaults the rule filled in; a list argument has a list of Nones.
    in_dims = (*in_dims, *(None,) * (len(args) - len(in_dims)))
    if batch_size == 0:  # nothing to compute: the result's shape and dtype come from the Meta kernel
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        meta = [(a.new_empty(a.shape[:d] + a.shape[d + 1:], device="meta") if isinstance(d, int) else
                 a.to("meta") if isinstance(a, torch.Tensor) else a) for a, d in zip(args, in_dims)]
        like = op(*meta)
        if isinstance(like, tuple):  # several results
            return tuple(torch.empty((0, *r.shape), dtype=r.dtype, device=device) for r in like), (0,) * len(like)
        return torch.empty((0, *like.shape), dtype=like.dtype, device=device), 0
    results = [op(*(a.select(d, b) if isinstance(d, int) else a for a, d in zip(args, in_dims)))
               for b in range(batch_size)]
    if isinstance(results[0], tuple):
        return tuple(torch.stack(r) for r in zip(*results)), (0,) * len(results[0])
    return torch.stack(results), 0
