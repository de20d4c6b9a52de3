"""Finding torch_npu, defensively.

torch_npu is optional (``pip install torch_aclnn[npu]``). Importing it can
fail in many ways that must never break ``import torch_aclnn``: it is not
installed (ImportError), CANN's shared libraries are missing or of another
version (OSError, ImportError), or an old torch_npu refuses the installed
torch by calling ``sys.exit`` (SystemExit). Any of these leaves the NPU path
unavailable, with the reason recorded for ``torch_aclnn.npu.unavailable_reason()``.

When it is imported: torch itself imports torch_npu at ``import torch``
when TORCH_DEVICE_BACKEND_AUTOLOAD is not "0" (torch >= 2.5 device-backend
autoload). Otherwise torch_aclnn imports it once, at ``import torch_aclnn``
if it is installed and autoload is not disabled, else on the first
``is_available()`` call.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import warnings
from typing import Optional

import torch

_tried = False
_module = None
_reason: Optional[str] = "torch_npu has not been looked for yet"


def _installed() -> bool:
    if sys.modules.get("torch_npu") is not None:
        return True
    try:
        return importlib.util.find_spec("torch_npu") is not None
    except (Exception, SystemExit):  # a broken entry in sys.modules or on sys.path
        return True  # let the import itself report what is wrong


def autoload_disabled() -> bool:
    return os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "0"


def torch_npu():
    """The torch_npu module, or None when it cannot be imported (imports it
    once; never raises)."""
    global _tried, _module, _reason
    if _tried:
        return _module
    _tried = True
    try:
        _module = importlib.import_module("torch_npu")
        _reason = None
    except (Exception, SystemExit) as e:  # ImportError, OSError, RuntimeError, sys.exit() ...
        _module = None
        _reason = f"import torch_npu failed: {type(e).__name__}: {e}"
    return _module


def load_at_import() -> None:
    """Called by ``import torch_aclnn``: import torch_npu now when it is
    installed and autoload is not disabled, warning (once) if that fails."""
    if autoload_disabled() or not _installed():
        return
    if torch_npu() is None:
        warnings.warn(f"torch_aclnn: torch_npu is installed but unusable ({_reason}); the NPU path is disabled. "
                      "Set TORCH_DEVICE_BACKEND_AUTOLOAD=0 to skip importing it.", RuntimeWarning, stacklevel=3)


def is_available() -> bool:
    """Whether torch_npu imports and sees at least one NPU. Never raises."""
    global _reason
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
    _reason = None
    return True


def unavailable_reason() -> Optional[str]:
    """Why the NPU path is unavailable (None when it is available)."""
    return None if is_available() else _reason
