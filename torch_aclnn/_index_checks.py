"""Index checks on CUDA (docs/spec.md §7, "Index checks on CUDA").

max_unpool3d, max_unpool3d_backward and max_pool3d_with_indices_backward
check every index on the device. On CUDA the result of that check reaches
the host after the call has returned, so that no call synchronises with the
GPU: a bad index (which is never read or written through) raises its
IndexError, tagged ``deferred:``, at the next torch_aclnn call on a CUDA
device that finds the check arrived, or at :func:`check_index_errors`,
whichever comes first. :func:`set_sync_index_checks` (or the environment
variable ``TORCH_ACLNN_SYNC_INDEX_CHECKS=1``) makes every call wait for its own
check and raise at the call, as on the CPU and the NPU.
"""
from __future__ import annotations

import atexit
import importlib
import os
import warnings

import torch

__all__ = ["check_index_errors", "set_sync_index_checks"]

ENV = "TORCH_ACLNN_SYNC_INDEX_CHECKS"


def _C():
    return importlib.import_module("torch_aclnn._C")


def check_index_errors() -> None:
    """Wait for the index checks of every torch_aclnn CUDA call made so far
    and raise the first failed one's IndexError (``[torch_aclnn 161002]
    deferred: <operator>: indices[...] = value ...``). Returns at once when
    none is pending (always, without CUDA). The checks after a failed one
    stay pending: call again to see them. Not while the current CUDA stream
    is being captured into a graph (RuntimeError)."""
    if pending() and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
        raise RuntimeError("torch_aclnn.check_index_errors() waits for the GPU: not during CUDA graph capture")
    _C()._check_index_errors()


def pending() -> int:
    """How many index checks are pending (0 without CUDA)."""
    return _C()._pending_index_checks()


def set_sync_index_checks(enabled: bool) -> bool:
    """``True``: every CUDA call waits for its own index check and raises at
    the call (one host synchronisation per call of the three operators);
    ``False`` (the default): checks are read back without synchronising and
    raise later. Process-wide. Returns the previous setting."""
    if not isinstance(enabled, bool):
        raise TypeError(f"set_sync_index_checks(enabled): a bool expected, got {type(enabled).__name__}")
    return _C()._sync_index_checks(enabled)


def failed_checks():
    """Wait for the checks pending now, yielding each failed one's IndexError
    (a CUDA error while waiting raises)."""
    for _ in range(pending()):
        try:
            check_index_errors()
            return
        except IndexError as e:
            yield e


def _at_exit() -> None:
    """Warn about each failed check nothing raised (rather than lose it)."""
    try:
        for n, e in enumerate(failed_checks(), 1):
            warnings.warn(f"torch_aclnn: failed index check nothing raised ({n}): {e}", RuntimeWarning)
    except RuntimeError as e:  # a CUDA error: the checks cannot be read
        warnings.warn(f"torch_aclnn: {pending()} index check(s) could not be read at exit: {e}", RuntimeWarning)


def init() -> None:
    """At import: the environment variable, and the exit check."""
    value = os.environ.get(ENV, "")
    if value not in ("", "0", "1"):
        raise ValueError(f"{ENV}={value!r}: 0 or 1 expected")
    set_sync_index_checks(value == "1")
    atexit.register(_at_exit)
