"""Helpers shared by the operator families' Python APIs."""
from __future__ import annotations

import importlib
from typing import Any, Callable

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
