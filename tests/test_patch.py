"""torch_aclnn.patch(level="function"): every routed function (result, gradient, and that the
torch_aclnn operator really ran), the pass-through cases, the life cycle
(patch / unpatch / patched, threads, other modes), torch.compile(fullgraph)
with the patch, and eval / no_grad / inference_mode / autocast."""
import threading

import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import torch_aclnn
from torch_aclnn.testing import node_name
from patching import _clean  # noqa: F401  (an autouse fixture)


def _graph_ops(t):
    """Names of the autograd nodes behind t."""
    seen, todo = set(), [t.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        todo.extend(f for f, _ in fn.next_functions)
    return {f.name() for f in seen}


def _unpool_inputs(dtype=torch.float64, batched=True):
    x = torch.randn((2, 3, 4, 4, 6) if batched else (3, 4, 4, 6), dtype=dtype)
    return F.max_pool3d(x, 2, return_indices=True)


# name in PatchStats, call, operator expected in the autograd graph, exact (bitwise) vs torch
ROUTED = [
    ("interpolate", lambda x: F.interpolate(x, scale_factor=2), "upsample_nearest3d", True),
    ("interpolate", lambda x: F.interpolate(x, size=(4, 7, 9), mode="nearest"), "upsample_nearest3d", True),
    ("interpolate", lambda x: F.interpolate(x, scale_factor=(1.5, 2.0, 0.7), mode="nearest-exact"),
     "upsample_nearest_exact3d", True),
    ("interpolate", lambda x: F.interpolate(x, scale_factor=1.3, recompute_scale_factor=True),
     "upsample_nearest3d", True),
    ("interpolate", lambda x: tnn.Upsample(size=5, mode="nearest-exact")(x), "upsample_nearest_exact3d", True),
    ("interpolate", lambda x: F.upsample_nearest(x, scale_factor=2), "upsample_nearest3d", True),  # deprecated
    ("elu", lambda x: F.elu(x), "elu", False),
    ("elu", lambda x: F.elu(x, 0.3), "elu", False),
    ("elu", lambda x: tnn.ELU(alpha=2.0)(x), "elu", False),
    ("selu", lambda x: F.selu(x), "elu", False),
    ("selu", lambda x: tnn.SELU()(x), "elu", False),
    ("celu", lambda x: F.celu(x, alpha=1.7), "elu", False),
    ("celu", lambda x: tnn.CELU()(x), "elu", False),
    ("smooth_l1_loss", lambda x: F.smooth_l1_loss(x, x.detach().flip(0)), "smooth_l1_loss", False),
    ("smooth_l1_loss", lambda x: F.smooth_l1_loss(x, x.detach().flip(0), reduction="none", beta=0.2),
     "smooth_l1_loss", False),
    ("smooth_l1_loss", lambda x: F.smooth_l1_loss(x, x.detach().flip(0), reduction="sum", beta=0.0),
     "smooth_l1_loss", False),
    ("smooth_l1_loss", lambda x: tnn.SmoothL1Loss(beta=0.5)(x, torch.zeros_like(x)), "smooth_l1_loss", False),
    ("smooth_l1_loss", lambda x: F.smooth_l1_loss(x, torch.ones_like(x, dtype=torch.float32)), "smooth_l1_loss",
     False),  # promoted, as in torch
    ("smooth_l1_loss", lambda x: F.smooth_l1_loss(x, x.detach().flip(0), reduce=False), "smooth_l1_loss", False),
    ("smooth_l1_loss", lambda x: tnn.SmoothL1Loss()(x, x.detach()[:1]), "smooth_l1_loss", False),  # broadcast
    ("huber_loss", lambda x: F.huber_loss(x, x.detach().flip(0), delta=0.4), "smooth_l1_loss", False),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), "leaky_relu", True),
    ("leaky_relu", lambda x: tnn.LeakyReLU()(x), "leaky_relu", True),
]


@pytest.mark.filterwarnings("ignore:.*upsample_nearest. is deprecated")
@pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated")
@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize("name,fn,op,exact", ROUTED, ids=[f"{r[0]}{i}" for i, r in enumerate(ROUTED)])
def test_routed(name, fn, op, exact):
    x = torch.randn(2, 3, 3, 4, 5, dtype=torch.float64)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    with torch_aclnn.patched(level="function") as stats:
        ya = fn(xa)
    yb = fn(xb)
    assert stats.routed == {name: 1} and not stats.passed
    assert node_name(op) in _graph_ops(ya), _graph_ops(ya)
    assert not any("torch_aclnn" in n for n in _graph_ops(yb))
    g = torch.randn_like(ya)
    ya.backward(g)
    yb.backward(g)
    check = torch.testing.assert_close if not exact else (lambda a, b: torch.testing.assert_close(a, b, rtol=0,
                                                                                                   atol=0))
    check(ya, yb)
    check(xa.grad, xb.grad)


@pytest.mark.parametrize("batched", [True, False])
def test_routed_max_unpool3d(batched):
    pooled, idx = _unpool_inputs(batched=batched)
    pa, pb = pooled.clone().requires_grad_(), pooled.clone().requires_grad_()
    with torch_aclnn.patched(level="function") as stats:
        ya = F.max_unpool3d(pa, idx, 2)
        za = tnn.MaxUnpool3d(2, stride=2)(pa, idx, output_size=ya.shape[-3:])
    yb = F.max_unpool3d(pb, idx, 2)
    assert stats.routed == {"max_unpool3d": 2}
    assert node_name("max_unpool3d") in _graph_ops(ya)
    torch.testing.assert_close(ya, yb, rtol=0, atol=0)
    torch.testing.assert_close(za, yb, rtol=0, atol=0)
    ya.sum().backward()
    yb.sum().backward()
    torch.testing.assert_close(pa.grad, pb.grad, rtol=0, atol=0)


def test_alias_imported_before_patch_is_routed():
    from torch.nn.functional import elu as imported_early

    with torch_aclnn.patched(level="function") as stats:
        imported_early(torch.randn(3))
    assert stats.routed == {"elu": 1}


# ---------------------------------------------------------------------------
# Pass-through: torch computes these, unchanged.

x5 = torch.randn(1, 2, 3, 4, 5)
x4 = torch.randn(1, 2, 4, 5)
x3 = torch.randn(1, 2, 5)
p5, i5 = F.max_pool3d(x5[..., :4], 2, return_indices=True)

PASSED = [
    ("interpolate", lambda: F.interpolate(x5, scale_factor=2, mode="area"), "mode='area'"),
    ("interpolate", lambda: F.interpolate(x4, scale_factor=2), "4-D input"),
    ("interpolate", lambda: F.interpolate(x4, scale_factor=2, mode="nearest-exact"), "4-D input"),
    ("interpolate", lambda: F.interpolate(x3, size=7), "3-D input"),
    ("interpolate", lambda: F.interpolate(x5.to(torch.uint8), scale_factor=2), "dtype torch.uint8"),
    ("interpolate", lambda: F.interpolate(x5.to("meta"), scale_factor=2), "device 'meta'"),
    ("elu", lambda: F.elu(x5.to("meta")), "device 'meta'"),
    ("max_unpool3d", lambda: F.max_unpool3d(p5.to("meta"), i5.to("meta"), 2), "device 'meta'"),
    ("elu", lambda: F.elu(x5.view([1] * 4 + list(x5.shape))), "9-D input"),
    ("huber_loss", lambda: F.huber_loss(x5, x5 + 1, weight=torch.ones_like(x5)), "weight given"),
    # 1 / alpha beyond float64: torch computes it, celu's contract refuses it
    ("celu", lambda: F.celu(x5.double(), 5e-324), "alpha=5e-324"),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,fn,why", PASSED, ids=[f"{p[0]}{i}" for i, p in enumerate(PASSED)])
def test_passed_through(name, fn, why):
    want = fn()
    with torch_aclnn.patched(level="function") as stats:
        got = fn()
    assert not stats.routed and list(stats.passed) == [name]
    assert stats.reasons and all(n == name and why in reason for n, reason in stats.reasons), stats
    if got.device.type != "meta":
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    else:
        assert got.shape == want.shape and got.dtype == want.dtype


def test_elu_underscore_is_not_touched():
    with torch_aclnn.patched(level="function") as stats:
        y = F.elu_(x5.clone())
    assert not stats.routed and not stats.passed
    torch.testing.assert_close(y, F.elu(x5), rtol=0, atol=0)


@pytest.mark.parametrize("fn,exc,match", [
    (lambda: F.interpolate(x5, size=4, scale_factor=2), ValueError, "only one of size or scale_factor"),
    (lambda: F.interpolate(x5), ValueError, "either size or scale_factor"),
    (lambda: F.interpolate(x5, scale_factor=(2, 2)), ValueError, "scale_factor"),
    (lambda: F.smooth_l1_loss(x5, x5, reduction="avg"), ValueError, "avg is not a valid value for reduction"),
    (lambda: F.celu(x5, alpha=0.0), RuntimeError, "ZeroDivisionError"),
    (lambda: F.elu(x5.long()), RuntimeError, "not implemented for 'Long'"),
    (lambda: F.max_unpool3d(p5.bool(), i5, 2), RuntimeError, "not implemented for 'Bool'"),
    (lambda: F.max_unpool3d(p5, i5[:, :1], 2), RuntimeError, "hape"),
])
def test_torch_errors_stay_torch_errors(fn, exc, match):
    """Arguments torch rejects are handed to torch, which raises its own error."""
    with pytest.raises(exc, match=match) as want:
        fn()
    with torch_aclnn.patched(level="function") as stats:
        with pytest.raises(exc, match=match) as got:
            fn()
    assert not stats.routed and type(got.value) is type(want.value) and str(got.value) == str(want.value)


def test_other_torch_calls_are_untouched():
    a = torch.randn(4, 4)
    with torch_aclnn.patched(level="function") as stats:
        b = (a @ a).relu().sum(0)
        c = F.conv3d(x5, torch.randn(2, 2, 1, 1, 1))
    assert not stats.routed and not stats.passed
    torch.testing.assert_close(b, (a @ a).relu().sum(0), rtol=0, atol=0)
    assert c.shape == x5.shape


# ---------------------------------------------------------------------------
# Life cycle


def test_patch_unpatch_and_global_stats():
    torch_aclnn.reset_patch_stats()
    torch_aclnn.patch(level="function")
    torch_aclnn.patch(level="function")  # a no-op
    assert torch_aclnn.is_patched(level="function")
    F.elu(torch.randn(3))
    F.interpolate(x5, scale_factor=2, mode="area")
    torch_aclnn.unpatch()
    torch_aclnn.unpatch()  # a no-op
    assert not torch_aclnn.is_patched(level="function")
    F.elu(torch.randn(3))
    stats = torch_aclnn.patch_stats()
    assert stats.routed == {"elu": 1} and stats.passed == {"interpolate": 1}
    assert stats.reasons == {("interpolate", "mode='area'"): 1}
    assert stats.as_dict() == {"routed": {"elu": 1}, "passed": {"interpolate": 1},
                               "reasons": {"interpolate: mode='area'": 1}}
    torch_aclnn.reset_patch_stats()
    assert stats.total_routed() == 0


def test_patched_nests_and_counts_its_own_block():
    torch_aclnn.reset_patch_stats()
    torch_aclnn.patch(level="function")
    with torch_aclnn.patched(level="function") as inner:
        F.selu(torch.randn(3))
    F.selu(torch.randn(3))
    assert inner.routed == {"selu": 1}
    assert torch_aclnn.patch_stats().routed == {"selu": 1}
    torch_aclnn.unpatch()


def test_unpatch_refuses_to_pop_another_mode():
    class Other(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    torch_aclnn.patch(level="function")
    with Other():
        with pytest.raises(RuntimeError, match="another TorchFunctionMode"):
            torch_aclnn.unpatch()
        with torch_aclnn.patched(level="function") as stats:  # composes with it
            F.elu(torch.randn(2))
        assert stats.routed == {"elu": 1}
    torch_aclnn.unpatch()


def test_patch_is_per_thread():
    torch_aclnn.patch(level="function")
    seen = {}

    def other():
        seen["patched"] = torch_aclnn.is_patched(level="function")
        with torch_aclnn.patched(level="function") as st:
            F.elu(torch.randn(2))
        seen["routed"] = st.routed

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == {"patched": False, "routed": {"elu": 1}}
    assert torch_aclnn.is_patched(level="function")


def test_checkpoint_recompute_needs_context_fn():
    """Modes are not active while backward runs, so a checkpointed block's
    recomputation uses torch unless the patch is handed in as its context."""
    import contextlib

    from torch.utils.checkpoint import checkpoint, set_checkpoint_early_stop

    def block(t):
        return F.elu(F.interpolate(t, scale_factor=2))

    xr = torch.randn(1, 2, 3, 4, 5, requires_grad=True)
    block(xr).sum().backward()
    for context_fn, routed in [(None, 1),
                               (lambda: (contextlib.nullcontext(), torch_aclnn.patched(stats, level="function")), 2)]:
        x = xr.detach().clone().requires_grad_()
        stats = torch_aclnn.PatchStats()
        kw = {"context_fn": context_fn} if context_fn else {}
        # (recompute the whole block)
        with torch_aclnn.patched(stats, level="function"), set_checkpoint_early_stop(False):
            y = checkpoint(block, x, use_reentrant=False, **kw)
            y.sum().backward()
        assert stats.routed == {"elu": routed, "interpolate": routed}
        torch.testing.assert_close(x.grad, xr.grad)


# ---------------------------------------------------------------------------
# A model: compile, eval, no_grad, inference_mode, autocast


class Net(tnn.Module):
    def __init__(self):
        super().__init__()
        self.conv = tnn.Conv3d(2, 4, 3, padding=1)
        self.act = tnn.ELU()
        self.up = tnn.Upsample(scale_factor=2)
        self.up2 = tnn.Upsample(scale_factor=0.5, mode="nearest-exact")
        self.act2 = tnn.CELU(0.5)
        self.tri = tnn.Upsample(scale_factor=1.5, mode="trilinear")
        self.loss = tnn.SmoothL1Loss(beta=0.5)

    def forward(self, x, target):
        h = self.up2(self.act2(self.up(F.selu(self.act(self.conv(x))))))
        return self.loss(self.tri(h).mean(dim=1, keepdim=True), target)


def _net_inputs():
    torch.manual_seed(0)
    return Net(), torch.randn(2, 2, 4, 4, 4), torch.randn(2, 1, 6, 6, 6)


def _grads(net):
    return {n: p.grad.clone() for n, p in net.named_parameters()}


class GraphRecorder:
    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(str(gm.graph))
        from torch._dynamo.backends.common import aot_autograd
        from torch._functorch.aot_autograd import make_boxed_func

        return aot_autograd(fw_compiler=lambda g, _: make_boxed_func(g.forward))(gm, example_inputs)


@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_fullgraph_with_patch(dynamic):
    net, x, t = _net_inputs()
    want = net(x, t)
    want.backward()
    want_grads = _grads(net)
    net.zero_grad()
    torch._dynamo.reset()
    rec = GraphRecorder()
    compiled = torch.compile(net, fullgraph=True, dynamic=dynamic, backend=rec)
    torch_aclnn.patch(level="function")
    torch_aclnn.reset_patch_stats()
    compiled_graphs = None
    for _ in range(2):
        net.zero_grad()
        got = compiled(x, t)
        got.backward()
        compiled_graphs = compiled_graphs or len(rec.graphs)
    torch_aclnn.unpatch()
    assert len(rec.graphs) == compiled_graphs  # counting did not recompile
    graph = rec.graphs[-1]
    for op in ("upsample_nearest3d", "upsample_nearest_exact3d", "upsample_trilinear3d", "elu", "smooth_l1_loss"):
        assert f"torch_aclnn.{op}" in graph, op
    stats = torch_aclnn.patch_stats()
    assert stats.routed == {"elu": 2, "selu": 2, "interpolate": 6, "celu": 2, "smooth_l1_loss": 2}, stats
    assert not stats.passed and not stats.reasons  # every call of the model is routed
    torch.testing.assert_close(got, want)
    for n, g in _grads(net).items():
        torch.testing.assert_close(g, want_grads[n], msg=n)


def test_count_false():
    torch_aclnn.reset_patch_stats()
    torch_aclnn.patch(count=False, level="function")
    y = F.elu(torch.randn(3, requires_grad=True))
    torch_aclnn.unpatch()
    assert "torch_aclnn" in y.grad_fn.name() and torch_aclnn.patch_stats().total_routed() == 0


def test_compiled_unpatched_recompiles_when_patched(level="function"):
    torch._dynamo.reset()
    rec = GraphRecorder()
    f = torch.compile(lambda x: F.elu(x) * 2, fullgraph=True, backend=rec)
    x = torch.randn(8)
    f(x)
    with torch_aclnn.patched(level="function") as stats:
        f(x)
    f(x)
    assert ["torch_aclnn.elu" in g for g in rec.graphs] == [False, True]
    assert stats.routed == {"elu": 1}


@pytest.mark.parametrize("context", ["eval", "no_grad", "inference_mode"])
def test_eval_no_grad_inference_mode(context):
    net, x, t = _net_inputs()
    net.eval()
    ctx = {"eval": torch.enable_grad, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}[context]
    with ctx():
        want = net(x, t)
        with torch_aclnn.patched(level="function") as stats:
            got = net(x, t)
    assert stats.total_routed() == 7
    torch.testing.assert_close(got, want)
    assert got.requires_grad == want.requires_grad


def test_autocast_bfloat16():
    net, x, t = _net_inputs()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h_want = F.elu(F.interpolate(net.conv(x), scale_factor=2))
        want = net(x, t)
        with torch_aclnn.patched(level="function") as stats:
            h_got = F.elu(F.interpolate(net.conv(x), scale_factor=2))
            got = net(x, t)
    assert stats.total_routed() == 9
    assert h_got.dtype == h_want.dtype == torch.bfloat16
    assert got.dtype == want.dtype == torch.float32          # smooth_l1_loss runs in float32, as aten's
    torch.testing.assert_close(h_got, h_want, rtol=1.6e-2, atol=1e-2)
    torch.testing.assert_close(got, want, rtol=1.6e-2, atol=1e-3)
    got.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in net.parameters())


def test_reasons_stay_bounded(monkeypatch):
    """Reasons can quote sizes: past MAX_REASONS distinct keys, new ones are pooled."""
    monkeypatch.setattr(torch_aclnn.PatchStats, "MAX_REASONS", 2)
    with torch_aclnn.patched(level="function") as stats:
        for shape, mode in (((1, 1, 2, 2, 2), "area"), ((1, 1, 2, 2), "bilinear"), ((1, 1, 2, 2), "bicubic"),
                            ((1, 1, 2), "linear")):
            F.interpolate(torch.randn(shape), scale_factor=2, mode=mode)
        F.interpolate(torch.randn(1, 1, 2, 2, 2), scale_factor=2, mode="area")  # a known key still counts
    assert stats.reasons == {("interpolate", "mode='area'"): 2, ("interpolate", "mode='bilinear'"): 1,
                             ("interpolate", "other reasons"): 2}
    assert stats.passed == {"interpolate": 5}


def test_default_level(monkeypatch):
    """patch() without a level: the dispatcher where this torch has its routes, else this level; and this level
    while torch_npu is loaded (the routes replace CPU and CUDA kernels only). patched(): this level."""
    assert torch_aclnn.default_patch_level() == ("dispatcher" if torch_aclnn._patch.ROUTED_OPERATORS else "function")
    x = torch.randn(2, 3, 4, 4, 4, dtype=torch.float64)
    with torch_aclnn.patched() as stats:
        assert torch_aclnn.is_patched("function") and not torch_aclnn.is_patched("dispatcher")
        F.elu(x)
    assert stats.routed == {"elu": 1}
    monkeypatch.setattr(torch, "npu", object(), raising=False)
    assert torch_aclnn.default_patch_level() == "function"
    torch_aclnn.reset_patch_stats()
    torch_aclnn.patch()
    assert torch_aclnn.is_patched("function") and not torch_aclnn.is_patched("dispatcher")
    F.elu(x)
    assert torch_aclnn.patch_stats().routed == {"elu": 1}


def test_patched_without_a_level_inside_compiled_code():
    """patched() without a level is this level, which dynamo traces: a block entered inside fullgraph code
    compiles, and the graph holds the operator."""
    rec = GraphRecorder()

    def f(x):
        with torch_aclnn.patched():
            return F.elu(x) * 2

    x = torch.randn(8)
    y = torch.compile(f, fullgraph=True, backend=rec)(x)
    assert ["torch_aclnn.elu" in g for g in rec.graphs] == [True]
    torch.testing.assert_close(y, F.elu(x) * 2)
    assert not torch_aclnn.is_patched()


@pytest.mark.skipif(bool(torch_aclnn._patch.ROUTED_OPERATORS), reason="this torch has what level='dispatcher' needs")
def test_dispatcher_level_needs_torch_2_9():
    with pytest.raises(RuntimeError, match=r"needs torch >= 2\.9"):
        torch_aclnn.patch(level="dispatcher")
    assert not torch_aclnn.is_patched("dispatcher")
