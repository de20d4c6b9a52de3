"""What the tests of the NPU path share (tests/test_npu*.py): the PrivateUse1
kernel called with CPU tensors, a spy on the device operators it calls, and
the one-time warnings made fresh for each test."""
import pytest
import torch

from torch_aclnn.npu import _glue
from torch_aclnn.npu import upsample as npu_upsample

ops = torch.ops.torch_aclnn
PU1 = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)


def on_npu_path(overload, *args, **kwargs):
    """Runs the PrivateUse1 kernel (the NPU glue) of ``overload``."""
    return overload.redispatch(PU1, *args, **kwargs)


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    """Each test sees the one-time warnings afresh (autouse in every file that imports it)."""
    monkeypatch.setattr(_glue, "_warned", set())


class Spy:
    """Wraps a device operator: counts calls and records the first argument's shape."""

    def __init__(self, fn):
        self.fn, self.shapes = fn, []

    def __call__(self, *args, **kwargs):
        self.shapes.append(tuple(args[0].shape))
        return self.fn(*args, **kwargs)


FORWARDS = [("nearest", "upsample_nearest3d"), ("nearest-exact", "upsample_nearest_exact3d")]
BACKWARDS = [("nearest", "upsample_nearest3d_backward"), ("nearest-exact", "upsample_nearest_exact3d_backward")]


def _spy_upsample(monkeypatch, which, mode):
    table = npu_upsample.ATEN_FORWARD if which == "forward" else npu_upsample.ATEN_BACKWARD
    spy = Spy(table[mode])
    monkeypatch.setitem(table, mode, spy)
    return spy
