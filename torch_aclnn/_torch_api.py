"""Every private torch attribute torch_aclnn's runtime uses, in one place.

torch has no public way to ask a few things torch_aclnn needs (which
TorchFunctionModes are active, whether a torch.func transform is active,
whether a tensor is a view, the PrivateUse1 device name). Each function
below prefers a public API where torch has one, uses the private one only
where this torch has it (checked with getattr, which holds across versions),
and otherwise falls back to the closest public answer, said in its
docstring. Nothing else in the package names a private torch attribute;
tests/test_torch_api.py checks that and runs each fallback.
"""
from __future__ import annotations

import functools
import threading

import torch


_PUBLIC_KERNEL_PROBE = "has_kernel_for_dispatch_key"  # (a test hides it to run the fallback)


def has_kernel(op: str, dispatch_key: str) -> bool:
    """Whether ``torch_aclnn::<op>`` has a kernel of its own for
    ``dispatch_key`` ('CPU', 'CUDA', 'PrivateUse1', 'Meta', ...): the public
    ``OpOverload.has_kernel_for_dispatch_key`` of its default overload, else
    the private dispatcher probe."""
    overload = getattr(torch.ops.torch_aclnn, op).default
    public = getattr(overload, _PUBLIC_KERNEL_PROBE, None)
    if public is not None:
        return bool(public(getattr(torch._C.DispatchKey, dispatch_key)))
    return bool(torch._C._dispatch_has_kernel_for_dispatch_key(f"torch_aclnn::{op}", dispatch_key))


def functorch_transforms_active() -> bool:
    """Whether a torch.func transform (vmap, grad, jvp, ...) is active.
    Fallback: True (the setup_context form of a Function, which also serves
    plain autograd, just more slowly). Called on every differentiable call."""
    return _TRANSFORMS_PROBE() if _TRANSFORMS_PROBE is not None else True


_TRANSFORMS_PROBE = getattr(torch._C, "_are_functorch_transforms_active", None)


def _public_tracing_state():
    return True if torch.jit.is_tracing() else None


# tracing_state() is not None while torch.jit.trace records (called on every
# drop-in decision, so the C function itself; fallback: torch.jit.is_tracing).
tracing_state = getattr(torch._C, "_get_tracing_state", None) or _public_tracing_state


def privateuse1_name() -> str:
    """The device type name of the PrivateUse1 backend ('npu' once torch_npu
    renamed it). Fallback: 'npu' when torch_npu is imported, else torch's
    default name."""
    name = getattr(torch._C, "_get_privateuse1_backend_name", None)
    if name is not None:
        return name()
    return "npu" if hasattr(torch, "npu") else "privateuseone"


def autocast_available(device_type: str) -> bool:
    """Whether torch.autocast supports ``device_type``: the public
    ``torch.amp.is_autocast_available`` (torch >= 2.4), else the private
    probe, else CPU and CUDA only."""
    public = getattr(torch.amp, "is_autocast_available", None)
    if public is not None:
        return bool(public(device_type))
    private = getattr(torch._C, "_is_autocast_available", None)
    return bool(private(device_type)) if private is not None else device_type in ("cpu", "cuda")


def is_view(t: torch.Tensor) -> bool:
    """Whether ``t`` is a view of another tensor (``Tensor._base``,
    underscored though long-standing; torch.compile traces it)."""
    return t._base is not None


def plain_view(t: torch.Tensor) -> bool:
    """Whether the view ``t`` may be overwritten in place under autograd by an
    autograd.Function (``mark_dirty``) as by an aten in-place op: its base is
    not a leaf that requires grad, and it was made in grad mode by a
    single-output view op (the private ``_get_creation_meta`` is DEFAULT).
    Without that probe: False (the caller then leaves every view to torch)."""
    base = t._base
    if base is None or (base.is_leaf and base.requires_grad):
        return False
    autograd = getattr(torch._C, "_autograd", None)
    probe = getattr(autograd, "_get_creation_meta", None)
    if probe is None:
        return False
    return probe(t) == autograd.CreationMeta.DEFAULT


def promoted_dtype(*tensors: torch.Tensor) -> torch.dtype:
    """The dtype elementwise type promotion gives ``tensors`` (all at once,
    0-dim tensors ranking below the others). Fallback: torch.promote_types
    over their dtypes, which agrees when the tensors are all 0-dim or all not."""
    try:
        from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes
    except ImportError:
        return functools.reduce(torch.promote_types, (t.dtype for t in tensors))
    return elementwise_dtypes(*tensors, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)[1]


# The logger torch's fake-tensor code reports a failing Meta kernel on.
FAKE_TENSOR_LOGGER = "torch._subclasses.fake_tensor"


_own_modes = threading.local()


def function_mode_stack() -> list:
    """The TorchFunctionModes active in this thread, innermost last.
    Fallback: only the modes torch_aclnn entered itself (recorded by
    :func:`entered` / :func:`exited`), so another library's mode above them
    goes unseen."""
    private = getattr(torch.overrides, "_get_current_function_mode_stack", None)
    if private is not None:
        return list(private())
    return list(getattr(_own_modes, "stack", []))


def entered(mode) -> None:
    if not hasattr(_own_modes, "stack"):
        _own_modes.stack = []
    _own_modes.stack.append(mode)


def exited(mode) -> None:
    stack = getattr(_own_modes, "stack", [])
    if stack and stack[-1] is mode:
        stack.pop()


def dynamo_function_tables():
    """dynamo's rule per in-graph torch function and its set of functions a
    TorchFunctionMode sees (torch has no public way to add a function to
    either; _compiled_routes.py adds its twins of the routed functions). Raises
    where this torch's dynamo has other tables: the caller then leaves compiled
    code to torch."""
    from torch._dynamo.trace_rules import get_torch_obj_rule_map
    from torch._dynamo.variables.torch import get_overridable_functions
    return get_torch_obj_rule_map(), get_overridable_functions()


def recompile_limit(n: int):
    """A context in which torch.compile traces a function anew up to ``n``
    times; past that, dynamo runs it eagerly without a word. (dynamo's
    ``recompile_limit``; ``cache_size_limit`` is its name in older torch.)"""
    import torch._dynamo  # (here, not at import: importing torch_aclnn leaves dynamo unloaded)

    config = torch._dynamo.config
    return config.patch(**{"recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit": n})
