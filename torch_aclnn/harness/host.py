"""What the benchmark reports say about the machine they ran on."""
from __future__ import annotations

import os
import platform
from typing import Optional

import torch


def cpu_model() -> str:
    """The CPU's model name, with its family and model numbers (a VM's name,
    e.g. 'AMD EPYC', does not tell one generation from the next)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model"):
                    fields[key] = value.strip()
                if not line.strip() and fields:  # the first processor's block only
                    break
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name


def load() -> Optional[float]:
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def huge_pages() -> str:
    """How large CPU outputs get their memory (csrc/cpu/cpu_utils.h, with_huge_pages)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return "no transparent huge pages on this system"
    ours = "off (TORCH_ACLNN_HUGE_PAGES=0)" if os.environ.get("TORCH_ACLNN_HUGE_PAGES") == "0" else "advised"
    aten = "advised" if os.environ.get("THP_MEM_ALLOC_ENABLE") == "1" else "not advised (THP_MEM_ALLOC_ENABLE unset)"
    return f"transparent huge pages '{mode}'; torch_aclnn's large outputs: {ours}; aten's: {aten}"


def gpu() -> dict:
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"gpu": p.name, "gpu_sms": p.multi_processor_count, "gpu_memory_gib": round(p.total_memory / 2**30, 1),
            "cuda": torch.version.cuda}
