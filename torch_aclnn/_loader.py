"""Loads the compiled extension once, loudly.

torch_aclnn._C holds every schema and the Meta (and CUDA) kernels;
torch_aclnn._cpu_<isa> holds the CPU kernels built for one instruction set.
Exactly one CPU module is imported: the one matching aten's own choice
(torch.backends.cpu.get_cpu_capability(), which honours ATEN_CPU_CAPABILITY),
so vectorised code runs the same instructions as aten's kernels.
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path

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


def _release(version: str) -> str:
    """'2.13.0' of '2.13.0+cpu': builds of one release share their C++ ABI."""
    return version.split("+")[0]


def check_build(built_with: "str | None" = None) -> None:
    """Refuses, before any .so is loaded, an extension built against another
    torch release than the one imported (it would fail on an undefined
    symbol, or worse). ``built_with``: the version recorded by setup.py next
    to the modules (_build_info.json; a build without it is not checked)."""
    if built_with is None:
        info = Path(__file__).with_name("_build_info.json")
        if not info.is_file():
            return
        built_with = json.loads(info.read_text()).get("torch", "")
    if _release(built_with) != _release(torch.__version__):
        raise ImportError(
            f"torch_aclnn's C++ extension was built against torch {built_with}, but this Python imports "
            f"torch {torch.__version__}: a C++ extension loads only under the torch it was built with. "
            "Rebuild it with this torch, from the repository root:\n"
            "    pip install --no-build-isolation -e .\n"
            "(or `make build`), or install a torch_aclnn wheel built for this torch.")


def load() -> None:
    global cpu_isa
    if cpu_isa is not None:
        return
    check_build()
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
    from ._registry import OPERATORS
    from ._torch_api import has_kernel

    load()
    return any(has_kernel(op, "CUDA") for op in OPERATORS)
