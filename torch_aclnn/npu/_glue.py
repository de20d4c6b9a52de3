"""What every family's NPU glue shares: validation through the Meta kernels,
results in the layout every backend produces, the CPU path for inputs beyond
a device limit, and the registration of PrivateUse1 kernels.

Each PrivateUse1 kernel follows the same steps:

1. ``validate``: run the operator on meta copies of the arguments (same
   sizes, strides and dtypes, no data). That executes the C++ Meta kernel,
   i.e. the shared contract in csrc/contracts/<family>.h, so the NPU raises
   exactly the contract errors of every other backend, before touching the
   device. The meta result gives the result's shape, dtype and strides.
2. Empty input: the result without a device call (aclnn kernels do not
   support empty tensors).
3. ``limits.beyond_split``: an input beyond what splitting fixes goes to
   ``cpu_path`` (torch_aclnn's CPU kernel on CPU copies, one-time warning).
4. The torch_npu aten operator that reaches the aclnn kernel, split along
   N*C where a per-call limit requires it, then the family's corrections.
5. ``conform``: the result in the meta result's layout.

The kernels only use aten operators, so with CPU tensors (the tests redispatch
to PrivateUse1 with CPU tensors) the same code runs against aten's CPU kernels.
"""
from __future__ import annotations

import types
import warnings
from typing import Callable, Optional

import torch

from . import limits

_LIB = torch.library.Library("torch_aclnn", "IMPL")
_OPS = torch.ops.torch_aclnn

# name (with overload, as in the schema) -> the Python kernel registered for PrivateUse1.
KERNELS: dict = {}


class DeviceLimitWarning(UserWarning):
    """An input beyond an Ascend kernel's limit was computed on the CPU."""


_warned: set = set()


def register(name: str, fn: Callable) -> None:
    """Registers ``fn`` as the PrivateUse1 kernel of ``torch_aclnn::<name>``.
    The key is "PrivateUse1" (torch_npu renames the backend to "npu" only when
    it is imported, which may be later or never)."""
    _LIB.impl(name, fn, "PrivateUse1")
    KERNELS[name] = fn


def register_with_backward(forward: str, forward_kernel: Callable, backward_kernel: Callable) -> None:
    """Registers the kernels of ``torch_aclnn::<forward>``, of its gradient
    ``<forward>_backward`` and of the gradient's out= overload ``grad_input``
    (:func:`out_variant` of the gradient's kernel)."""
    backward = f"{forward}_backward"
    register(forward, forward_kernel)
    register(backward, backward_kernel)
    register(f"{backward}.grad_input", out_variant(backward_kernel, getattr(_OPS, backward).grad_input))


def meta(x):
    """A meta tensor with x's sizes, strides and dtype (non-tensors as they are)."""
    if isinstance(x, torch.Tensor):
        return torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device="meta")
    return x


def _cpu_scalar(x) -> bool:
    return x.dim() == 0 and x.device.type == "cpu"


def call_device(*tensors: torch.Tensor) -> torch.device:
    """The call's device as the contracts' one-device rule picks it: that of
    the first input that is not a 0-dim CPU tensor (else the first input's)."""
    return next((t.device for t in tensors if not _cpu_scalar(t)), tensors[0].device)


def validate(overload, *args, **kwargs) -> torch.Tensor:
    """Runs the contract (the C++ Meta kernel) on meta copies; returns the meta result.

    Only the tensors on the call's device (and 0-dim CPU inputs) get meta
    copies: a tensor on any other device is passed as it is, so that the
    contract's one-device rule rejects the call, naming the call's device."""
    device = call_device(*[a for a in args if isinstance(a, torch.Tensor)])

    def stand_in(x):
        if not isinstance(x, torch.Tensor) or x.device == device or _cpu_scalar(x):
            return meta(x)
        return x

    try:
        return overload(*[stand_in(a) for a in args], **{k: stand_in(v) for k, v in kwargs.items()})
    except RuntimeError as e:
        if device.type == "meta" or " is on meta" not in str(e):
            raise
        raise RuntimeError(str(e).replace(" is on meta", f" is on {device}")) from None


def first_true(mask: torch.Tensor):
    """The position (a list, one index per axis) of mask's first True in
    logical order, or None: where a data-dependent contract error names the
    offending element, as the CPU kernels do."""
    if mask.numel() == 0 or not bool(mask.any()):
        return None
    flat = int(mask.reshape(-1).nonzero()[0, 0])
    where = []
    for size in reversed(mask.shape):
        where.append(flat % size)
        flat //= size
    return where[::-1]


def like(m: torch.Tensor, device) -> torch.Tensor:
    """An uninitialised tensor with the meta result's sizes, strides and dtype on ``device``."""
    return torch.empty_strided(m.size(), m.stride(), dtype=m.dtype, device=device)


def conform(result: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """``result`` in the layout (and dtype) every backend produces, copying only if needed."""
    if result.dtype == m.dtype and result.size() == m.size() and (
            result.numel() <= 1 or result.stride() == m.stride()):
        return result
    out = like(m, result.device)
    out.copy_(result)
    return out


def geometry_of(t: torch.Tensor):
    """What the limits table measures of an operator whose rows read only the
    dtype and the rank of one tensor."""
    return types.SimpleNamespace(dtype=t.dtype, ndim=t.dim())


def opmath(dtype):
    """The dtype aten's kernels compute ``dtype`` in: float32 for half/bfloat16."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def without_device(op: str, overload, m: torch.Tensor, device, geometry, *args) -> Optional[torch.Tensor]:
    """Steps 2 and 3: the result of a call the device kernel does not compute,
    an empty one (``m``, the meta result, has no element) or one beyond what
    splitting fixes (torch_aclnn's CPU kernel on ``args``); None otherwise."""
    return _without_device(op, overload, m, device, geometry, args)


def begin(op: str, *args, geometry=None):
    """Steps 1 to 3 of a kernel that has nothing to do between them: the meta
    result (``validate``) and ``without_device``'s answer, for the operator
    ``torch_aclnn::<op>`` on the contracts' device of the call
    (``call_device``) and the limits measured on ``geometry`` (by default
    ``geometry_of(args[0])``)."""
    overload = getattr(_OPS, op).default
    m = validate(overload, *args)
    device = call_device(*[a for a in args if isinstance(a, torch.Tensor)])
    g = geometry_of(args[0]) if geometry is None else geometry
    return m, _without_device(op, overload, m, device, g, args)


def _without_device(op, overload, m, device, geometry, args):
    # Two frames below the family's kernel (_on_cpu's `below`).
    if m.numel() == 0:
        return like(m, device)
    beyond = limits.beyond_split(op, geometry)
    if beyond is not None:
        return _on_cpu(op, beyond, overload, device, args, {}, below=2)
    return None


def warn_once(op: str, limit: limits.Limit, device, stacklevel: int = 4) -> None:
    key = (op, limit.key)
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(
        f"torch_aclnn.{op}: input beyond the Ascend kernel's limit '{limit.text}' (source: {limit.source}); "
        f"computed through torch_aclnn's CPU kernel and copied back to {device}. "
        "Shown once per operator and limit.", DeviceLimitWarning, stacklevel=stacklevel)


def _cpu(x):
    return x.detach().cpu() if isinstance(x, torch.Tensor) else x


def cpu_path(op: str, limit: limits.Limit, overload, device, *args, **kwargs) -> torch.Tensor:
    """Computes the call with torch_aclnn's CPU kernel on CPU copies and
    returns the result on ``device`` (same layout: the CPU kernels produce the
    layout the Meta kernels describe)."""
    return _on_cpu(op, limit, overload, device, args, kwargs, below=1)


def _on_cpu(op: str, limit: limits.Limit, overload, device, args, kwargs, below: int) -> torch.Tensor:
    """cpu_path's work, called `below` frames below the family's kernel
    (the warning names the kernel's caller, as cpu_path's always has)."""
    warn_once(op, limit, device, stacklevel=below + 4)
    result = overload(*[_cpu(a) for a in args], **{k: _cpu(v) for k, v in kwargs.items()})
    if isinstance(result, tuple):  # several results
        return tuple(r.to(device) for r in result)
    return result.to(device)


def plane_chunks(N: int, C: int, per_call: int):
    """Splits the N x C (n, c) planes into calls of at most ``per_call``
    planes, each a rectangle [n0:n1, c0:c1] (whole C rows where they fit,
    else part of one n's channels). Yields (n0, n1, c0, c1)."""
    if N * C <= per_call:
        yield 0, N, 0, C
        return
    if C <= per_call:
        step = per_call // C
        for n0 in range(0, N, step):
            yield n0, min(N, n0 + step), 0, C
        return
    for n in range(N):
        for c0 in range(0, C, per_call):
            yield n, n + 1, c0, min(C, c0 + per_call)


def out_variant(functional: Callable, out_overload, out_name: str = "grad_input") -> Callable:
    """The PrivateUse1 kernel of an out= overload: the contract (including its
    rules on the out tensor) on meta copies, then the functional kernel, then
    a copy into the out tensor (dtype widening included)."""

    def kernel(*args, **kwargs):
        out = kwargs[out_name]
        validate(out_overload, *args, **kwargs)
        rest = {k: v for k, v in kwargs.items() if k != out_name}
        out.copy_(functional(*args, **rest))  # the schema returns ()

    kernel.__name__ = f"{getattr(functional, '__name__', 'kernel')}_out"
    return kernel
