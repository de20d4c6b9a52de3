"""The contract's errors as the Python wrappers raise them (docs/spec.md,
"Edge rules"): ``[torch_aclnn <code>] <op>: <message>``; the checks every
wrapper shares (a required argument, a tensor argument, a backward's out=)."""
from __future__ import annotations

import logging
from typing import Any

import torch

NULLPTR = 161001
PARAM_INVALID = 161002


def contract_error(code: int, op: str, message: str) -> str:
    """The message format every backend uses: ``[torch_aclnn 161002] op: ...``."""
    return f"[torch_aclnn {code}] {op}: {message}"


def invalid(op: str, message: str, exc: type = ValueError) -> Exception:
    return exc(contract_error(PARAM_INVALID, op, message))


_CONTRACT_TAGS = (f"[torch_aclnn {NULLPTR}", f"[torch_aclnn {PARAM_INVALID}")
_CONTRACT_TYPES = (TypeError, ValueError, IndexError, RuntimeError)
DEFERRED = "deferred: "  # csrc/common/deferred.h: kTag


def is_contract_error(e: BaseException) -> bool:
    """Whether ``e`` is a contract error of the call that raised it: one of
    the contract's exception types (exactly), its message starting
    ``[torch_aclnn <code>] <op>: `` (torch_aclnn's other errors start
    ``[torch_aclnn] ``), and not an earlier call's deferred index check. The
    C++ twin is csrc/common/contract.h's is_contract_error."""
    if type(e) not in _CONTRACT_TYPES:
        return False
    tag, sep, rest = str(e).partition("] ")
    return tag in _CONTRACT_TAGS and bool(sep) and ": " in rest and not rest.startswith(DEFERRED)


class _QuietContractErrors(logging.Filter):
    """Drops the ERROR records torch's fake-tensor code writes, with a full
    traceback, when a Meta kernel raises: for a torch_aclnn contract error
    that is noise before the error itself, which torch.compile raises next
    with the tagged message (TorchRuntimeError: ... got TypeError('[torch_aclnn
    161002] ...')). Every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (exc is not None and is_contract_error(exc))


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


def write_out(op: str, out: Any, *args: Any) -> torch.Tensor:
    """The out= of a backward wrapper: ``torch.ops.torch_aclnn.<op>.grad_input(*args,
    grad_input=out)``, which writes ``out``; returns it. ``out`` must be a tensor
    (or handle torch calls itself, as :func:`tensors`): anything else is a
    161002 TypeError naming ``out``, the wrapper's argument."""
    if not isinstance(out, torch.Tensor) and not hasattr(type(out), "__torch_function__"):
        raise invalid(op, f"out must be a Tensor, got {type(out).__name__}", TypeError)
    getattr(torch.ops.torch_aclnn, op).grad_input(*args, grad_input=out)
    return out
