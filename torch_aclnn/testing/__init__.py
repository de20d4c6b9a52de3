"""Test and verification support shared by tests/, the check report and the
benchmarks: per-family OpInfos (sample inputs, float64 spec references,
contract-error inputs) on top of :mod:`torch_aclnn.testing.core`."""
from __future__ import annotations

from .core import (  # noqa: F401
    FLOATING, LAYOUTS, TOLERANCES, ErrorInput, OpInfo, SampleInput, first, make_layout, make_tensor, node_name,
    results, tolerance,
)

from .._registry import import_families

# Every family's OpInfos (torch_aclnn/testing/<stem>.py exports OP_INFOS), in registry order.
OPS: dict = {info.name: info for module in import_families(__name__) for info in module.OP_INFOS}
