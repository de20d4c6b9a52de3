"""Index checks (docs/spec.md §7, "Index checks on CUDA"): the Python side.

The deferred mode itself is tested on the host (tests/test_cuda_host_deferred.py,
the registry driven by emulated checks) and on a GPU (tests/test_cuda.py). Here:
the switch, its environment variable, the CPU's checks (at the call in either
mode) and the drop-in rule's handling of an earlier call's deferred error."""
import os
import subprocess
import sys

import pytest
import torch

import torch_aclnn
from torch_aclnn import _dropin


@pytest.fixture
def restore_mode():
    previous = torch_aclnn.set_sync_index_checks(True)
    yield
    torch_aclnn.set_sync_index_checks(previous)


def test_set_sync_index_checks_returns_the_previous_mode(restore_mode):
    assert torch_aclnn.set_sync_index_checks(False) is True
    assert torch_aclnn.set_sync_index_checks(False) is False
    assert torch_aclnn.set_sync_index_checks(True) is False
    with pytest.raises(TypeError, match="a bool expected, got int"):
        torch_aclnn.set_sync_index_checks(1)


def _child(env_value, code):
    env = dict(os.environ)
    env.pop("TORCH_ACLNN_SYNC_INDEX_CHECKS", None)
    if env_value is not None:
        env["TORCH_ACLNN_SYNC_INDEX_CHECKS"] = env_value
    return subprocess.run([sys.executable, "-c", "import torch_aclnn\n" + code], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("env_value, sync", [(None, False), ("0", False), ("1", True)])
def test_environment_variable_sets_the_mode_at_import(env_value, sync):
    r = _child(env_value, "print(torch_aclnn.set_sync_index_checks(False))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(sync)


def test_environment_variable_refuses_other_values():
    r = _child("yes", "")
    assert r.returncode != 0
    assert "TORCH_ACLNN_SYNC_INDEX_CHECKS='yes': 0 or 1 expected" in r.stderr


@pytest.mark.parametrize("sync", [True, False])
def test_cpu_raises_at_the_call_in_either_mode(sync, restore_mode):
    torch_aclnn.set_sync_index_checks(sync)
    x = torch.randn(1, 1, 2, 2, 2)
    idx = torch.full((1, 1, 2, 2, 2), 64)
    with pytest.raises(IndexError, match=r"^\[torch_aclnn 161002\] max_unpool3d: indices\[0, 0, 0, 0, 0\] = 64"):
        torch.ops.torch_aclnn.max_unpool3d(x, idx, [4, 4, 4], [2, 2, 2], [0, 0, 0])
    assert torch_aclnn._C._pending_index_checks() == 0
    torch_aclnn.check_index_errors()  # nothing pending: returns


def test_dropin_hands_this_calls_own_contract_error_to_torch_but_raises_a_deferred_one():
    def raises(message):
        def decision(*args, **kwargs):
            raise IndexError(message)
        return decision

    own = "[torch_aclnn 161002] max_unpool3d: indices[0, 0, 0, 0, 0] = 64 is outside [0, 64)"
    assert _dropin.decide(raises(own), (), {}) == f"contract: {own}"
    earlier = "[torch_aclnn 161002] deferred: max_unpool3d: indices[0, 0, 0, 0, 0] = 64 is outside [0, 64)"
    with pytest.raises(IndexError, match="deferred: max_unpool3d"):
        _dropin.decide(raises(earlier), (), {})


def test_dropin_raises_a_bad_index_on_cuda_instead_of_handing_it_to_torch(monkeypatch):
    """aten's CUDA kernels stop the process on a bad index: such a call's own
    IndexError is raised, not handed on (the CPU's still is)."""
    def decision(*args, **kwargs):
        raise IndexError("[torch_aclnn 161002] max_unpool3d: indices[0, 0, 0, 0, 0] = 64 is outside [0, 64)")

    monkeypatch.setattr(_dropin, "_on_cuda", lambda args, kwargs: True)
    with pytest.raises(IndexError, match="max_unpool3d: indices"):
        _dropin.decide(decision, (), {})


class _FakeC:
    """torch_aclnn._C's index-check functions over a list of outcomes."""

    def __init__(self, outcomes):
        self.outcomes = list(outcomes)

    def _pending_index_checks(self):
        return len(self.outcomes)

    def _check_index_errors(self):
        while self.outcomes:
            error = self.outcomes.pop(0)
            if error is not None:
                raise error


def test_at_exit_warns_once_per_failed_check(monkeypatch):
    from torch_aclnn import _index_checks
    fake = _FakeC([None, IndexError("check 1"), None, IndexError("check 2")])
    monkeypatch.setattr(_index_checks, "_C", lambda: fake)
    with pytest.warns(RuntimeWarning) as record:
        _index_checks._at_exit()
    assert [str(w.message) for w in record] == [
        "torch_aclnn: failed index check nothing raised (1): check 1",
        "torch_aclnn: failed index check nothing raised (2): check 2"]
    assert not fake.outcomes


def test_at_exit_stops_at_a_cuda_error(monkeypatch):
    from torch_aclnn import _index_checks
    fake = _FakeC([RuntimeError("CUDA error: an illegal memory access"), None])
    monkeypatch.setattr(_index_checks, "_C", lambda: fake)
    with pytest.warns(RuntimeWarning, match=r"1 index check\(s\) could not be read at exit: CUDA error"):
        _index_checks._at_exit()
