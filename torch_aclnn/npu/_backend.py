"""Finding torch_npu, defensively: the NPU path's view of
torch_aclnn/_npu_import.py, which imports torch_npu (guarded, once) and says
why that failed.

When it is imported: where TORCH_DEVICE_BACKEND_AUTOLOAD is not "0" and
torch_npu is installed, at ``import torch_aclnn`` (before torch, where torch
is not imported yet; else torch's own autoload has already imported it);
otherwise on the first ``is_available()`` call.
"""
from __future__ import annotations

import warnings
from typing import Optional

import torch

from .. import _npu_import

_reason: Optional[str] = None  # why an imported torch_npu is unusable (no device, ...)


def autoload_disabled() -> bool:
    return _npu_import.autoload_disabled()


def torch_npu():
    """The torch_npu module, or None when it cannot be imported (imports it
    once; never raises)."""
    return _npu_import.import_torch_npu()


def load_at_import() -> None:
    """Called by ``import torch_aclnn``: import torch_npu now when it is
    installed and autoload is not disabled, warning (once) if that fails."""
    if autoload_disabled() or not _npu_import.installed():
        return
    if torch_npu() is None:
        warnings.warn(f"torch_aclnn: torch_npu is installed but unusable ({_npu_import.reason}); the NPU path is "
                      "disabled. Set TORCH_DEVICE_BACKEND_AUTOLOAD=0 to skip importing it.", RuntimeWarning,
                      stacklevel=3)


def is_available() -> bool:
    """Whether torch_npu imports and sees at least one NPU. Never raises."""
    global _reason
    _reason = None
    if torch_npu() is None:
        return False
    try:
        npu = getattr(torch, "npu", None)
        if npu is None or not npu.is_available() or npu.device_count() < 1:
            _reason = "torch_npu imported but reports no NPU device"
            return False
    except (Exception, SystemExit) as e:
        _reason = f"torch.npu.is_available() failed: {type(e).__name__}: {e}"
        return False
    return True


def unavailable_reason() -> Optional[str]:
    """Why the NPU path is unavailable (None when it is available)."""
    if is_available():
        return None
    return _reason or _npu_import.reason
