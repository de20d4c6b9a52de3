"""What one benchmark case is: a :class:`Case` names the operator and the
variant and builds a :class:`Setup` (the torch_aclnn call, the aten call a
user would otherwise make, the tensors they read). The cases themselves:
bench_cases.py (throughput) and bench_overhead.py (1-element calls)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch

_ours = torch.ops.torch_aclnn
_aten = torch.ops.aten


@dataclass
class Setup:
    ours: Callable[[], object]
    aten: Callable[[], object]
    reads: list                 # tensors the call reads (each counted once); written = the result
    exact: bool = False         # results must be bitwise equal (else: close)
    # Work the case needs besides its memory traffic, as plain aten ops (the
    # harness times it as a floor next to the traffic floor): (name, callable)
    compute: Optional[tuple] = None
    # 1-element cases: the same call through torch.ops (torch.ops.torch_aclnn.<op>.default),
    # so that what the Python API adds to the operator's own entry can be told apart
    entry: Optional[Callable[[], object]] = None


@dataclass
class Case:
    op: str                     # torch_aclnn operator name (what --op selects)
    name: str                   # the variant, e.g. "scale 2 NCDHW"
    dtype: torch.dtype
    form: str                   # "functional" or "out="
    build: Callable[[str], Setup]
    overload: str = "default"   # our overload the case needs ("grad_input" for out=)
    kind: str = "throughput"    # or "overhead" (1-element call: per-call cost)
    aten_name: str = ""         # what the aten side calls, for the report
    target_ratio: Optional[float] = None
    target_pct: Optional[float] = None
    target_overhead: Optional[float] = None

    @property
    def qualname(self) -> str:
        return f"torch_aclnn::{self.op}" + ("" if self.overload == "default" else f".{self.overload}")


def _name(packet) -> str:
    return "aten." + packet._qualified_op_name.split("::")[1]
