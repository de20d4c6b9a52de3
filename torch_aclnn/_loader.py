"""Loads the compiled extension once, loudly.

torch_aclnn._C holds every schema and the Meta (and CUDA) kernels;
torch_aclnn._cpu_<isa> holds the CPU kernels built for one instruction set.
Exactly one CPU module is imported: the one matching aten's own choice
(torch.backends.cpu.get_cpu_capability(), which honours ATEN_CPU_CAPABILITY),
so vectorised code runs the same instructions as aten's kernels.
"""
from __future__ import annotations

import importlib

import torch

_BUILD_HINT = (
    "torch_aclnn's C++ extension is not built (or was built against another torch). "
    "Build it from the repository root with:\n"
    "    pip install --no-build-isolation -e .\n"
    "(or `make build`), using the same Python and torch that import torch_aclnn."
)

# aten capability -> our module, best first.
_CPU_MODULES = {
    "AVX512": ("_cpu_avx512", "_cpu_avx2", "_cpu_default"),
    "AVX2": ("_cpu_avx2", "_cpu_default"),
}

cpu_isa: str | None = None  # the CPU kernel module in use, e.g. "_cpu_avx2"


def load() -> None:
    global cpu_isa
    if cpu_isa is not None:
        return
    try:
        importlib.import_module("torch_aclnn._C")
    except ImportError as e:  # pragma: no cover - exercised only on a broken install
        raise ImportError(f"{_BUILD_HINT}\nCause: {e}") from e
    capability = torch.backends.cpu.get_cpu_capability()
    errors = []
    for name in _CPU_MODULES.get(capability, ("_cpu_default",)):
        try:
            importlib.import_module(f"torch_aclnn.{name}")
        except ImportError as e:
            errors.append(f"{name}: {e}")
            continue
        cpu_isa = name
        return
    raise ImportError(f"{_BUILD_HINT}\nNo CPU kernel module could be loaded: {'; '.join(errors)}")


def has_cuda_kernels() -> bool:
    """Whether this build registered CUDA kernels (built with CUDA)."""
    load()
    return torch._C._dispatch_has_kernel_for_dispatch_key("torch_aclnn::elu", "CUDA") or \
        torch._C._dispatch_has_kernel_for_dispatch_key("torch_aclnn::upsample_nearest3d", "CUDA")
