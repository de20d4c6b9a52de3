"""Helpers shared by the operator families' Python APIs."""
from __future__ import annotations

from typing import Any

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
