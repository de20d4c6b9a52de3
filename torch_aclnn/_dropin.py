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

import importlib
import math
import os
import sys
import warnings
from typing import Callable, Dict, FrozenSet, Union

import torch
import torch.nn.functional as F

from ._registry import OPERATORS
from ._torch_api import (functorch_transforms_active, has_kernel, is_view, plain_view, privateuse1_name,
                         tracing_state)
from .ops._calls import compiling, planned
from .ops._errors import is_contract_error
from .ops import adaptive_avg_pool as _adaptive, avg_pool as _avg, elu as _elu, leaky_relu as _lrelu, \
    max_pool as _pool, max_unpool as _unpool, smooth_l1 as _sl1, upsample as _up, upsample_trilinear as _tri

__all__ = ["ROUTES", "call", "decide"]

Decision = Union[str, torch.Tensor]

_INTS = (int, torch.SymInt)
_NUMBERS = (int, float, torch.SymInt, torch.SymFloat)
_REDUCTIONS = ("none", "mean", "sum")

# The tensor rules (dtypes, ranks, sizes, layouts, Scalar ranges) are
# csrc/aten_routes/rules.h's, which the dispatcher level applies to aten's
# arguments; read once here, as constants for torch.compile to trace.
_RULES = importlib.import_module("torch_aclnn._C")._route_rules()
_FLOAT_MAX = {getattr(torch, name): largest for name, largest in _RULES["dtypes"]}  # the routed dtypes
_SCALAR_LIMIT = _RULES["scalar_limit"]
_INPUTS = _RULES["inputs"]  # rule -> (per rank, the first axis that must not be empty or -1; w_fastest_4d)

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
    # (is_cpu and is_cuda first, they are cheaper; both are False for a fake
    # tensor, whose own device is meta)
    device = "cpu" if t.is_cpu else "cuda" if t.is_cuda else t.device.type
    if device not in _DEVICES[op]:
        return f"device {device!r}"
    if t.dtype not in _FLOAT_MAX:
        return f"dtype {t.dtype}"
    return None


def _input(t, op: str, rule: str):
    """None if ``op``'s routes take ``t`` as an input of ``rule``
    (rules.h: takes_input), else the reason."""
    why = _tensor(t, op)
    if why:
        return why
    nonempty_from, w_fastest_4d = _INPUTS[rule]
    dim = t.dim()
    if dim >= len(nonempty_from) or nonempty_from[dim] < 0:
        return f"{dim}-D input"
    for s in t.shape[nonempty_from[dim]:]:
        if not s > 0:
            return "an empty axis that torch refuses"
    if w_fastest_4d and dim == 4 and not t.is_contiguous() and (
            t.is_contiguous(memory_format=torch.channels_last)
            or t.unsqueeze(0).is_contiguous(memory_format=torch.channels_last_3d)):
        return "4-D input with another axis than W fastest in memory"
    return None


def _same_device(a: torch.Tensor, b: torch.Tensor) -> bool:
    """a.device == b.device (without making the device objects when both are
    on the CPU)."""
    return (a.is_cpu and b.is_cpu) or a.device == b.device


def _number(x) -> bool:
    return isinstance(x, _NUMBERS) and not isinstance(x, bool)


def _size3(v, kinds) -> bool:
    """One value of ``kinds`` (not bool), or 3 of them."""
    if isinstance(v, (list, tuple, torch.Size)):
        return len(v) == 3 and all(isinstance(e, kinds) and not isinstance(e, bool) for e in v)
    return isinstance(v, kinds) and not isinstance(v, bool)


def _scalars_fit(t: torch.Tensor, *values) -> bool:
    """Scalars of a call on ``t`` that are routed (rules.h: scalar_fits)."""
    if t.dtype == torch.float64:
        return True
    for x in values:
        if abs(x) <= math.inf and not abs(x) <= _SCALAR_LIMIT:  # (NaN fits)
            return False
    return True


_HERE = os.path.dirname(os.path.abspath(__file__))
_PASSED_BY = (_HERE, os.path.join("torch", "overrides.py"), os.path.join("torch", "nn", "functional.py"),
              os.path.join("torch", "nn", "modules", "module.py"))


def _caller_level() -> int:
    """The stacklevel of the first frame outside torch_aclnn, torch.overrides
    and torch.nn.functional: where the user called the F function, as F's
    own warnings say (2 under torch.compile, which does not trace frames)."""
    if compiling():
        return 2
    frame, level = sys._getframe(1), 1
    while frame is not None and any(part in frame.f_code.co_filename for part in _PASSED_BY):
        frame, level = frame.f_back, level + 1
    return level


def legacy_reduction(size_average, reduce, warn: bool = True) -> str:
    """The reduction F's losses take from the legacy ``size_average`` /
    ``reduce`` arguments, with F's deprecation warning unless ``warn`` is
    False (torch's rule, written here: torch's own helper is private, and
    dynamo cannot trace it)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    if compiling() or not warn:  # (dynamo cannot trace warnings.warn here)
        return reduction
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=_caller_level())
    return reduction


def _contract(fn: Callable, *args):
    """``fn(*args)``, or the reason if torch_aclnn's Python API rejects the
    arguments (a contract error: ops/_errors.is_contract_error)."""
    try:
        return fn(*args)
    except (TypeError, ValueError) as e:
        if is_contract_error(e):
            return str(e)
        raise


def _reasons(plan: Callable) -> Callable:
    """A drop-in plan (kept by :func:`planned`) whose contract errors become
    the reason to pass the call through, kept too."""
    def plan_or_reason(op, input, *args):
        return _contract(plan, op, input, *args)
    return plan_or_reason


# ---------------------------------------------------------------------------
# One decision per torch function, with its signature.

@_reasons
def _interpolate_plan(op, input, size, scale_factor, recompute_scale_factor, align_corners, antialias):
    """interpolate's rules on the plain arguments: the operator's (output
    size, scales), or the reason."""
    if antialias:
        return "antialias given"
    if align_corners is not None and (op != "upsample_trilinear3d" or type(align_corners) is not bool):
        return "align_corners given for a nearest mode, or not a bool"
    if (size is None) == (scale_factor is None):
        return "size and scale_factor both or neither given"
    if size is not None and not _size3(size, _INTS):
        return "size is not an int or 3 ints"
    if scale_factor is not None and not _size3(scale_factor, _NUMBERS):
        return "scale_factor is not a number or 3 numbers"
    return _up.resolve_size(op, input, size, scale_factor, recompute_scale_factor)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False) -> Decision:
    if mode == "nearest":
        op = "upsample_nearest3d"
    elif mode == "nearest-exact":
        op = "upsample_nearest_exact3d"
    elif mode == "trilinear":
        op = "upsample_trilinear3d"
    else:
        return f"mode={mode!r}"
    why = _input(input, op, "upsample")
    if why:
        return why
    resolved = planned(_interpolate_plan, op, input, size, scale_factor, recompute_scale_factor, align_corners,
                       antialias)
    if isinstance(resolved, str):
        return resolved
    output_size, scales = resolved
    if op == "upsample_trilinear3d":
        return _tri._FORWARD[+compiling()](input, output_size, bool(align_corners), *scales)
    return _up._OPS[op][+compiling()](input, output_size, *scales)


def _elu_call(input, alpha, scale, input_scale, inplace) -> Decision:
    if not isinstance(inplace, bool):
        return f"inplace={inplace!r}"
    why = _input(input, "elu", "elementwise")
    if why:
        return why
    if not _scalars_fit(input, alpha, scale, input_scale):
        return f"alpha={alpha!r} beyond float32"
    if inplace and input.requires_grad and torch.is_grad_enabled():
        # torch's in-place rules on tensors autograd tracks (leaves, views of
        # leaves, multi-output views, no_grad views, torch.func) are checked
        # before torch writes anything: such calls stay torch's.
        if input.is_leaf or is_view(input) or functorch_transforms_active():
            return "inplace=True on a leaf, a view or under torch.func"
        if not alpha >= 0:
            return "inplace=True with alpha not >= 0"
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


def _loss_args(input, target, reduction, parameter):
    """The reason a loss call is not routed (rules.h: takes_loss), or None.
    ``parameter``: beta or delta (>= 0), which torch's kernel rounds to the
    tensors' dtype."""
    why = _input(input, "smooth_l1_loss", "elementwise") or _input(target, "smooth_l1_loss", "elementwise")
    if why:
        return why
    if reduction not in _REDUCTIONS:
        return f"reduction={reduction!r}"
    if input.shape != target.shape:
        try:
            torch.broadcast_shapes(input.shape, target.shape)
        except RuntimeError:
            return "input and target do not broadcast"
        if input.dtype != target.dtype:
            return "shapes and dtypes differ (torch promotes after broadcasting)"
    if reduction == "none" and not (input.is_contiguous() and target.is_contiguous()):
        return "reduction='none' on a non-contiguous input or target (torch's result keeps their layout)"
    if not 0 <= parameter <= _FLOAT_MAX[input.dtype]:
        return f"beta/delta={parameter!r} not in [0, the largest {input.dtype}]"
    return None


def _shape_warning(input, target) -> None:
    """F's warning for input and target shapes that differ, attributed as F's is."""
    if input.shape != target.shape and not compiling():  # (as legacy_reduction)
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
            "This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=_caller_level())


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0) -> Decision:
    if not _number(beta) or not beta >= 0:
        return f"beta={beta!r}"
    legacy = size_average is not None or reduce is not None
    if legacy:  # (the rules see the reduction they give; F warns after the shape warning)
        reduction = legacy_reduction(size_average, reduce, warn=False)
    why = _loss_args(input, target, reduction, beta)
    if why:
        return why
    _shape_warning(input, target)
    if legacy:
        legacy_reduction(size_average, reduce)  # F's deprecation warning
    return _sl1.smooth_l1_loss(input, target, reduction, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None) -> Decision:
    if weight is not None:
        return "weight given"
    if not _number(delta) or not delta > 0:
        return f"delta={delta!r}"
    why = _loss_args(input, target, reduction, delta)
    if why:
        return why
    if input.dtype != target.dtype:
        return "input and target dtypes differ (torch's huber_loss keeps the input's)"
    # delta * smooth_l1(beta=delta) computes 0.5 * d**2 / delta and scales it
    # back: for delta > 1 that intermediate can underflow where aten's 0.5 * d**2
    # does not. float16 / bfloat16 (5 or 8 exponent bits) are routed for
    # delta <= 1 only, float32 / float64 for delta <= 2**20 (an underflow there
    # loses less than 1e-39).
    if not delta <= (1.0 if input.dtype in (torch.float16, torch.bfloat16) else 2.0 ** 20):
        return f"delta={delta!r} too large for {input.dtype}"
    _shape_warning(input, target)
    return _sl1.huber_loss(input, target, reduction, delta)


def _ints(v) -> bool:
    """An int, or a list / tuple / torch.Size of ints, as F.max_unpool3d's
    own arithmetic takes them (numpy integers and tensors make torch raise)."""
    if type(v) is int:
        return True
    if isinstance(v, (list, tuple, torch.Size)):
        for e in v:
            if type(e) is not int and not isinstance(e, torch.SymInt):
                return False
        return True
    return isinstance(v, torch.SymInt)


@_reasons
def _unpool_plan(op, input, kernel_size, stride, padding, output_size):
    """max_unpool3d's rules on the input's shape and the plain arguments: the
    operator's (output size, stride, padding), or the reason."""
    for s in input.shape[1:]:
        if not s > 0:
            return "an empty axis other than N"
    if not (_ints(kernel_size) and _ints(padding) and (stride is None or _ints(stride))
            and (output_size is None or _ints(output_size))):
        return "kernel_size, stride, padding or output_size not ints"
    plan = _unpool.plan(op, input, kernel_size, stride, padding, output_size)
    if math.prod(plan[0]) < math.prod(input.shape[-3:]):
        return "output volume smaller than the input's D*H*W (overlapping pooling windows)"
    return plan


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None) -> Decision:
    why = _tensor(input, "max_unpool3d")
    if why:
        return why
    if not isinstance(indices, torch.Tensor) or indices.dtype != torch.int64:
        return "indices are not an int64 tensor"
    if not _same_device(indices, input):
        return "indices on another device"
    if input.dim() not in (4, 5):
        return f"{input.dim()}-D input"
    if input.shape != indices.shape:
        return "input and indices shapes differ"
    plan = planned(_unpool_plan, "max_unpool3d", input, kernel_size, stride, padding, output_size)
    if isinstance(plan, str):
        return plan
    out = _unpool._MAX_UNPOOL[+compiling()](input, indices, *plan)
    return out if out.is_contiguous() else out.contiguous()  # torch's result is contiguous in every layout


# F.max_pool3d is not routed on the CPU: aten's CPU backward is deterministic
# already (a sequential scatter per plane), and torch_aclnn's CPU kernels,
# faster on most shapes, still lose on some (a 2x2x2 pooling of a small
# model's 8^3 volume, where a call's fixed cost is most of the time; the
# backward of overlapping windows in channels_last_3d or bfloat16;
# docs/performance.md), so routing could slow a training step down.
# Tests set this to exercise the decision on the CPU.
ROUTE_POOL_ON_CPU = False


def _max_pool3d_call(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """max_pool3d with its indices (both results) or the reason to pass through."""
    why = _input(input, "max_pool3d_with_indices", "max_pool")  # (F's 4-D input is (C, D, H, W))
    if why:
        return why
    if input.device.type == "cpu" and not ROUTE_POOL_ON_CPU:
        return "device 'cpu' (aten's max_pool3d backward is deterministic there)"
    if not return_indices and input.device.type == "cpu" and input.dtype in (torch.float16, torch.bfloat16) \
            and torch.is_autocast_enabled("cpu"):
        return "autocast on CPU (aten's max_pool3d without indices runs in float32 there)"
    window = planned(_pool_plan, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)
    if isinstance(window, str):
        return window
    return _pool._MAX_POOL[+compiling()](input, *window)


@_reasons
def _pool_plan(op, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """max_pool3d's rules on the plain arguments: the operator's window
    arguments, or the reason."""
    if not (_ints(kernel_size) and _ints(padding) and _ints(dilation) and (stride is None or _ints(stride))):
        return "kernel_size, stride, padding or dilation not ints"
    if not isinstance(ceil_mode, bool) or not isinstance(return_indices, bool):
        return "ceil_mode or return_indices not a bool"
    return _pool.plan(op, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False) -> Decision:
    out = _max_pool3d_call(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    return out if isinstance(out, str) or return_indices else out[0]


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False) -> Decision:
    return _max_pool3d_call(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _leaky_relu_call(input, negative_slope, inplace) -> Decision:
    if not _number(negative_slope):
        return f"negative_slope of type {type(negative_slope).__name__}"
    if not isinstance(inplace, bool):
        return f"inplace={inplace!r}"
    why = _input(input, "leaky_relu", "elementwise")
    if why:
        return why
    if not _scalars_fit(input, negative_slope):
        return f"negative_slope={negative_slope!r} beyond float32"
    if inplace and input.requires_grad and torch.is_grad_enabled():
        # (as in _elu_call: torch's in-place rules on tracked tensors stay torch's), but a plain view
        # of a non-leaf (InstanceNorm3d's output, in nnU-Net's blocks) is overwritten as aten would
        # (in eager code: compiled code leaves every view to torch)
        if input.is_leaf or functorch_transforms_active() or (is_view(input) and (compiling() or
                                                                                 not plain_view(input))):
            return "inplace=True on a leaf, a view of a leaf or a special view, or under torch.func"
        if not negative_slope >= 0:  # torch's backward raises, for NaN too
            return "inplace=True with negative_slope not >= 0"
    return _lrelu._leaky_relu(input, negative_slope, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False) -> Decision:
    return _leaky_relu_call(input, negative_slope, inplace)


def leaky_relu_(input, negative_slope=0.01) -> Decision:
    return _leaky_relu_call(input, negative_slope, True)
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None) -> Decision:
    """Routed on every device: the backward is a deterministic gather (aten's
    CUDA backward adds with atomics and refuses deterministic mode), and aten's
    CPU kernels have no float16/bfloat16 avg_pool3d."""
    why = _input(input, "avg_pool3d", "avg_pool")  # (F's 4-D input is (C, D, H, W))
    if why:
        return why
    window = planned(_avg_pool_plan, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)
    if isinstance(window, str):
        return window
    out = _avg._AVG_POOL[+compiling()](input, *window)
    return out if out.is_contiguous() else out.contiguous()  # torch's result is contiguous in every layout


@_reasons
def _avg_pool_plan(op, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """avg_pool3d's rules on the plain arguments: the operator's window
    arguments, or the reason."""
    if not (_ints(kernel_size) and _ints(padding) and (stride is None or _ints(stride))):
        return "kernel_size, stride or padding not ints"
    if not isinstance(ceil_mode, bool) or not isinstance(count_include_pad, bool):
        return "ceil_mode or count_include_pad not a bool"
    if divisor_override is not None and not (isinstance(divisor_override, _INTS)
                                             and not isinstance(divisor_override, bool)):
        return "divisor_override not None or an int"
    return _avg.plan(op, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


@_reasons
def _adaptive_plan(op, input, output_size):
    """adaptive_avg_pool3d's rules on the input's shape and output_size: the
    operator's 3 ints, or the reason."""
    if isinstance(output_size, (list, tuple, torch.Size)):
        if len(output_size) != 3 or not all(v is None or isinstance(v, _INTS) and not isinstance(v, bool)
                                            for v in output_size):
            return "output_size not an int or 3 ints or Nones"
    elif not (isinstance(output_size, _INTS) and not isinstance(output_size, bool)):
        return "output_size not an int or 3 ints or Nones"
    size = _adaptive.output_size_of(op, input, output_size)
    if not all(v > 0 for v in size):
        return "an output size of 0 (torch returns an empty result)"
    if all(v == 1 for v in size):
        return "output size 1 (torch computes a mean, deterministic already)"
    return size


def adaptive_avg_pool3d(input, output_size) -> Decision:
    why = _input(input, "adaptive_avg_pool3d", "adaptive_pool")  # (F's 4-D input is (C, D, H, W))
    if why:
        return why
    size = planned(_adaptive_plan, "adaptive_avg_pool3d", input, output_size)
    if isinstance(size, str):
        return size
    out = _adaptive._POOL[+compiling()](input, size)
    return out if out.is_contiguous() else out.contiguous()  # torch's result is contiguous in every layout


# ---------------------------------------------------------------------------

# torch function -> (its name, the decision above of that name).
ROUTES: Dict[Callable, tuple] = {getattr(F, name): (name, globals()[name]) for name in (
    "interpolate", "elu", "selu", "celu", "smooth_l1_loss", "huber_loss", "max_unpool3d", "max_pool3d",
    "max_pool3d_with_indices", "leaky_relu", "leaky_relu_", "avg_pool3d", "adaptive_avg_pool3d")}


def _on_cuda(args: tuple, kwargs: dict) -> bool:
    """Whether a tensor argument is on CUDA, where a bad index is not handed to
    torch: aten's CUDA kernels stop the process on one (device-side assert)."""
    return any(isinstance(a, torch.Tensor) and a.is_cuda for a in (*args, *kwargs.values()))


def decide(decision: Callable, args: tuple, kwargs: dict) -> Decision:
    """``decision(*args, **kwargs)``. Arguments that do not bind to the torch
    signature pass through (torch raises its own TypeError). So does, in
    eager mode, a call whose kernel raises a contract error: the rules the
    kernel checks on data (an unpool index outside the output) or on sizes
    (a result whose size overflows int64) are then torch's to judge. Under
    torch.jit.trace every call is torch's: its trace keeps the sizes it derives
    from the input's shape symbolic, where torch_aclnn's would record them as
    constants (and the dispatcher level routes the traced aten calls)."""
    if tracing_state() is not None:
        return "torch.jit.trace (torch's call keeps the trace shape-generic)"
    try:
        return decision(*args, **kwargs)
    except (TypeError, ValueError, IndexError) as e:
        ours = is_contract_error(e)
        if ours and not compiling() and not (type(e) is IndexError and _on_cuda(args, kwargs)):
            return f"contract: {e}"
        if type(e) is TypeError and "argument" in str(e) and not ours:
            return "arguments that do not bind to the torch signature"
        raise


def call(torch_fn: Callable, *args, **kwargs) -> torch.Tensor:
    """torch_aclnn's result for a call inside the contract, else torch's."""
    out = decide(ROUTES[torch_fn][1], args, kwargs)
    return torch_fn(*args, **kwargs) if isinstance(out, str) else out
