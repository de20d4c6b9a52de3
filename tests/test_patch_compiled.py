"""patch()'s default level (the dispatcher) inside torch.compile
(torch_aclnn/_compiled_routes.py): compiled code routes the torch.nn.functional
calls as the function level does, trains deterministically (a model with
MaxUnpool3d under use_deterministic_algorithms(True), which aten's own tracing
refuses), recompiles when the routes are switched, counts, and leaves the
function level's routing in compiled code as it was."""
import pytest
import torch
import torch.nn.functional as F

import torch_aclnn

pytestmark = pytest.mark.skipif(not torch_aclnn._patch.ROUTED_OPERATORS,
                                reason="patch(level='dispatcher') needs torch >= 2.9")


@pytest.fixture(autouse=True)
def _clean():
    assert not torch_aclnn.is_patched()
    torch._dynamo.reset()
    yield
    torch_aclnn.unpatch()
    torch._dynamo.reset()


class UNetish(torch.nn.Module):
    """Every routed layer kind: ELU, MaxPool3d (indices), MaxUnpool3d, Upsample, SmoothL1Loss."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv3d(2, 4, 3, padding=1)
        self.act = torch.nn.ELU()
        self.pool = torch.nn.MaxPool3d(2, return_indices=True)
        self.unpool = torch.nn.MaxUnpool3d(2)
        self.up = torch.nn.Upsample(scale_factor=2)
        self.head = torch.nn.Conv3d(4, 1, 1)
        self.loss = torch.nn.SmoothL1Loss()

    def forward(self, x, target):
        h = self.act(self.conv(x))
        p, i = self.pool(h)
        y = self.head(self.unpool(p, i) + self.up(p))
        return self.loss(y, target)


def _train(model, step, x, t, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = step(x, t)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses), [p.detach().clone() for p in model.parameters()]


@pytest.mark.skipif(torch_aclnn.default_patch_level() != "dispatcher", reason="patch()'s default is the function level")
def test_default_patch_compiled_deterministic_training_is_bitwise_repeatable():
    torch.manual_seed(0)
    model = UNetish()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    x, t = torch.randn(2, 2, 4, 6, 6), torch.randn(2, 1, 4, 6, 6)
    want_losses, want_params = _train(model, model, x, t)  # eager torch
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        torch_aclnn.reset_patch_stats()
        torch_aclnn.patch()
        compiled = torch.compile(model)  # (inductor, the default backend)
        runs = []
        for _ in range(2):
            model.load_state_dict(state)
            runs.append(_train(model, compiled, x, t))
        stats = torch_aclnn.patch_stats()
    finally:
        torch.use_deterministic_algorithms(before)
    (losses, params), (losses2, params2) = runs
    assert torch.equal(losses, losses2) and all(torch.equal(a, b) for a, b in zip(params, params2))
    torch.testing.assert_close(losses, want_losses)
    for got, want in zip(params, want_params):
        torch.testing.assert_close(got, want)
    # torch_aclnn's operators ran in the compiled graphs, each call of each step
    # (max_pool3d passes on the CPU: it routes on CUDA only)
    assert {k: stats.routed.get(k) for k in ("elu", "interpolate", "max_unpool3d", "smooth_l1_loss")} == dict.fromkeys(
        ("elu", "interpolate", "max_unpool3d", "smooth_l1_loss"), 6)


def _graph_ops(gm):
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}


def test_compiled_code_follows_the_routes_switch():
    """Compiled while the routes are on: torch_aclnn's operators in the graph,
    counted by the block; once they are off, the code recompiles to torch's."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    x = torch.randn(1, 2, 3, 4, 5, dtype=torch.float64)
    f = torch.compile(lambda x: F.interpolate(F.elu(x), scale_factor=2), backend=backend, fullgraph=True)
    want = F.interpolate(F.elu(x), scale_factor=2)
    with torch_aclnn.patched(level="dispatcher") as stats:
        got = f(x)
        got = f(x)
    ops = _graph_ops(graphs[0])
    assert len(graphs) == 1 and all(any(op.startswith(f"torch_aclnn.{name}") for op in ops)
                                    for name in ("elu", "upsample_nearest3d")), ops
    assert stats.routed == {"elu": 2, "interpolate": 2}
    torch.testing.assert_close(got, want)
    got = f(x)  # routes off: recompiled, torch's functions
    assert len(graphs) == 2 and not any("torch_aclnn" in op for op in _graph_ops(graphs[1]))
    assert stats.routed == {"elu": 2, "interpolate": 2}
    torch.testing.assert_close(got, want)


def test_function_level_still_routes_compiled_code():
    """The twins that keep torch's functions in dynamo's graphs route at the function level too."""
    with torch_aclnn.patched(level="dispatcher"):
        torch.compile(lambda x: F.elu(x), backend="aot_eager", fullgraph=True)(torch.randn(3))  # (registers them)
    torch._dynamo.reset()
    x = torch.randn(2, 3)
    with torch_aclnn.patched(level="function") as stats:
        got = torch.compile(lambda x: F.selu(x) + F.elu(x), backend="aot_eager", fullgraph=True)(x)
    assert stats.routed == {"selu": 1, "elu": 1}
    torch.testing.assert_close(got, F.selu(x) + F.elu(x))
