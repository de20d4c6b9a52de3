"""A backward run after the dispatcher-level routes are switched off is torch's
(aten's autograd formulas call whatever kernel is registered when they run):
unpatch() and the end of a patched(level="dispatcher") block warn while a
graph recorded with the routes on is still alive, and only then (docs/patch.md)."""
import gc
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_aclnn

pytestmark = pytest.mark.skipif(not torch_aclnn._patch.ROUTED_OPERATORS,
                                reason="patch(level='dispatcher') needs torch >= 2.9")


@pytest.fixture(autouse=True)
def _clean():
    assert not torch_aclnn.is_patched()
    yield
    torch_aclnn.unpatch()


def _x():
    return torch.randn(2, 3, 4, 4, 4, dtype=torch.float64, requires_grad=True)


def test_unpatch_warns_while_a_recorded_graph_is_alive():
    x = _x()
    torch_aclnn.patch(count=False)
    loss = F.smooth_l1_loss(F.interpolate(F.elu(x), scale_factor=2), torch.zeros(2, 3, 8, 8, 8, dtype=x.dtype))
    with pytest.warns(UserWarning, match=r"\d result\(s\) of routed calls still hold the autograd graph") as w:
        torch_aclnn.unpatch()
    assert w[0].filename == __file__  # (the caller's line)
    with torch_aclnn.patched(level="dispatcher") as stats:  # (counts what the backward meets: torch's kernels)
        torch_aclnn._C._unroute_aten()
        loss.backward()
        torch_aclnn._C._route_aten(torch_aclnn._patch.route_keys())
    assert stats.routed == {}


def test_no_warning_once_the_graph_is_gone():
    x = _x()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch_aclnn.patch(count=False)
        F.elu(x).sum().backward()          # backward before unpatch(): the graph is freed
        y = F.elu(x.detach())              # nothing recorded
        with torch.no_grad():
            z = F.elu(x)                   # nothing recorded
        w = F.elu(x)
        del w                              # recorded, then freed
        gc.collect()
        torch_aclnn.unpatch()
        with torch_aclnn.patched(level="dispatcher"):
            F.elu(x).sum().backward()
    assert y.grad_fn is None and z.grad_fn is None


def test_patched_block_warns_at_its_end():
    x = _x()
    with pytest.warns(UserWarning, match="1 result") as w:
        with torch_aclnn.patched(level="dispatcher"):
            y = F.elu(x)
    assert w[0].filename == __file__
    y.sum().backward()  # (aten's kernel, as the warning said)
