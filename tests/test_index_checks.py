"""Index checks (docs/spec.md §7, "Index checks on CUDA"): the Python side.

The deferred mode itself is tested on the host (tests/test_cuda_host_emulation.py,
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
