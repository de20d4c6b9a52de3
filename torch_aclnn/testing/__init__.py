"""Test and verification support shared by tests/, the check report and the
benchmarks: per-family OpInfos (sample inputs, float64 spec references,
contract-error inputs) on top of :mod:`torch_aclnn.testing.core`."""
from __future__ import annotations

import importlib

from .core import (  # noqa: F401
    FLOATING, LAYOUTS, TOLERANCES, ErrorInput, OpInfo, SampleInput, make_layout, make_tensor, tolerance,
)

# One module per operator family, each exporting OP_INFOS.
FAMILIES = (
    "upsample",
    "elu",
    "smooth_l1",
    "max_unpool",
)

OPS: dict = {}
for _family in FAMILIES:
    for _info in importlib.import_module(f"{__name__}.{_family}").OP_INFOS:
        OPS[_info.name] = _info
