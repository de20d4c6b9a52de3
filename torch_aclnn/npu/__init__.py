"""Ascend NPU support: a PrivateUse1 kernel for every torch_aclnn operator.

With torch_npu installed, tensors on ``device="npu"`` (PyTorch's PrivateUse1
backend) run every torch_aclnn operator through torch_npu's aten operators,
which call the CANN aclnn kernels, and get the spec's answers:

  torch_aclnn/npu/<family>.py   the glue of one family: aten operator called,
                                corrections where aclnn and the spec differ
  torch_aclnn/npu/limits.py     the device limits, handled by splitting the
                                call or computing it on the CPU
  torch_aclnn/npu/_glue.py      validation through the Meta kernels (the shared
                                contract), layouts, CPU path, registration
  torch_aclnn/npu/_backend.py   the guarded import of torch_npu

The kernels are registered whether or not torch_npu is installed (they only
run for PrivateUse1 tensors), so that they exist once torch_npu is imported.
"""
from __future__ import annotations

from . import _backend, limits  # noqa: F401
from ._backend import is_available, torch_npu, unavailable_reason  # noqa: F401
from ._glue import KERNELS, DeviceLimitWarning  # noqa: F401

from .._registry import import_families

# One module per operator family (torch_aclnn/npu/<stem>.py), registering its kernels on import.
import_families(__name__)

_backend.load_at_import()

__all__ = ["is_available", "unavailable_reason", "torch_npu", "DeviceLimitWarning", "limits", "KERNELS"]
