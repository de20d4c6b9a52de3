"""The guarded import of torch_npu, made before torch's where it can be.

torch_npu is optional (``pip install torch_aclnn[npu]``). Importing it can
fail in many ways that must never break ``import torch_aclnn``: it is not
installed (ImportError), CANN's shared libraries are missing or of another
version (OSError, ImportError: torch_npu 2.14.0 without CANN raises
``ImportError: libhccl.so: cannot open shared object file``), or an old
torch_npu refuses the installed torch by calling ``sys.exit`` (SystemExit).

Where torch_npu is installed and TORCH_DEVICE_BACKEND_AUTOLOAD is not "0",
``import torch`` imports it too (torch >= 2.5 device-backend autoload) and
turns any failure into ``RuntimeError: Failed to load the backend extension:
torch_npu``: torch itself does not import. So ``import torch_aclnn``, when
torch is not imported yet, imports torch_npu first, the order torch_npu
supports: it imports torch with the autoload switched off, so when torch_npu
then fails, torch is imported and works and only the NPU path is lost, with
the reason. (A failed torch_npu import leaves TORCH_DEVICE_BACKEND_AUTOLOAD
at "0" in os.environ; it is put back.) This module imports no torch itself.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Optional

_AUTOLOAD = "TORCH_DEVICE_BACKEND_AUTOLOAD"

tried = False
module = None
reason: Optional[str] = "torch_npu has not been looked for yet"


def installed() -> bool:
    if sys.modules.get("torch_npu") is not None:
        return True
    try:
        return importlib.util.find_spec("torch_npu") is not None
    except (Exception, SystemExit):  # a broken entry in sys.modules or on sys.path
        return True  # let the import itself report what is wrong


def autoload_disabled() -> bool:
    return os.environ.get(_AUTOLOAD, "1") == "0"


def import_torch_npu():
    """The torch_npu module, or None when it cannot be imported (imports it
    once; never raises)."""
    global tried, module, reason
    if tried:
        return module
    tried = True
    autoload = os.environ.get(_AUTOLOAD)
    try:
        module = importlib.import_module("torch_npu")
        reason = None
    except (Exception, SystemExit) as e:  # ImportError, OSError, RuntimeError, sys.exit() ...
        module = None
        reason = f"import torch_npu failed: {type(e).__name__}: {e}"
    finally:
        if autoload is None:
            os.environ.pop(_AUTOLOAD, None)
        else:
            os.environ[_AUTOLOAD] = autoload
    return module


def import_before_torch() -> None:
    """Called by ``import torch_aclnn`` before it imports torch (see above)."""
    if "torch" in sys.modules or autoload_disabled() or not installed():
        return
    import_torch_npu()
