"""torch_aclnn.patch(level="dispatcher") (csrc/aten_routes/routes.cpp): aten's CPU (and
CUDA) kernels of the mirrored aten operators replaced, process-wide. Every
routed operator computes torch's result and gradients (float64 gradcheck and
gradgradcheck through aten's own autograd formulas), on contiguous,
non-contiguous and channels_last_3d inputs, and really ran torch_aclnn's
kernel (the route's counts); calls outside the contract get torch's result or
torch's own error; the life cycle (patch / unpatch / patched, threads); what
it leaves alone; determinism; torch.compile. torch's OpInfo samples run under
it in tests/test_dropin.py."""
import threading

import pytest
import torch
import torch.nn.functional as F

import torch_aclnn
from torch_aclnn.testing import make_layout
from patching import _clean  # noqa: F401  (an autouse fixture)
from patching import raises_torchs_error

pytestmark = pytest.mark.skipif(not torch_aclnn._patch.ROUTED_OPERATORS,
                                reason="patch(level='dispatcher') needs torch >= 2.9 (test_patch.py checks its error)")

LAYOUTS = ("contiguous", "permuted", "channels_last_3d")  # (torch_aclnn.testing.make_layout's)


def _x(shape=(2, 3, 4, 4, 6), layout="contiguous", dtype=torch.float64):
    g = torch.Generator().manual_seed(0)
    return make_layout(torch.randn(shape, dtype=dtype, generator=g), layout).requires_grad_()


def _unpool(x):
    p, i = F.max_pool3d(x.detach(), 2, return_indices=True)
    return p.requires_grad_(), i


# (name, function of one float64 5-D input, the aten operators it must route: forward, backward)
CASES = [
    ("elu", lambda x: F.elu(x, 0.7), {"aten::elu", "aten::elu_backward"}),
    ("selu", F.selu, {"aten::elu", "aten::elu_backward"}),
    ("celu", lambda x: F.celu(x, 1.5), {"aten::elu", "aten::elu_backward"}),
    ("nearest", lambda x: F.interpolate(x, scale_factor=(2, 1.5, 0.5)),
     {"aten::upsample_nearest3d", "aten::upsample_nearest3d_backward"}),
    ("nearest-exact", lambda x: F.interpolate(x, size=(5, 3, 7), mode="nearest-exact"),
     {"aten::_upsample_nearest_exact3d", "aten::_upsample_nearest_exact3d_backward"}),
    ("trilinear", lambda x: F.interpolate(x, scale_factor=(2, 1.5, 0.5), mode="trilinear"),
     {"aten::upsample_trilinear3d", "aten::upsample_trilinear3d_backward"}),
    ("trilinear align_corners", lambda x: F.interpolate(x, size=(5, 3, 7), mode="trilinear", align_corners=True),
     {"aten::upsample_trilinear3d", "aten::upsample_trilinear3d_backward"}),
    ("smooth_l1 none", lambda x: F.smooth_l1_loss(x, torch.ones_like(x) * 0.3, reduction="none", beta=0.5),
     {"aten::smooth_l1_loss", "aten::smooth_l1_loss_backward"}),
    ("smooth_l1 mean", lambda x: F.smooth_l1_loss(x, torch.zeros_like(x), beta=0.5),
     {"aten::smooth_l1_loss", "aten::smooth_l1_loss_backward"}),
    ("smooth_l1 sum", lambda x: F.smooth_l1_loss(x, torch.zeros_like(x), reduction="sum"),
     {"aten::smooth_l1_loss", "aten::smooth_l1_loss_backward"}),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), {"aten::leaky_relu", "aten::leaky_relu_backward"}),
    ("adaptive_avg_pool3d", lambda x: F.adaptive_avg_pool3d(x, (3, 2, 4)),
     {"aten::_adaptive_avg_pool3d", "aten::_adaptive_avg_pool3d_backward"}),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name,fn,ops", CASES, ids=[c[0] for c in CASES])
def test_routed_result_and_gradients(name, fn, ops, layout):
    if name == "smooth_l1 none" and layout != "contiguous":
        pytest.skip("a non-contiguous 'none' stays aten's (tested below)")
    x = _x(layout=layout)
    want = fn(x)
    g = torch.ones_like(want)  # (in the result's layout, as a next layer's gradient would be)
    (want_grad,) = torch.autograd.grad(want, x, g)
    with torch_aclnn.patched(level="dispatcher") as stats:
        got = fn(x)
        (grad,) = torch.autograd.grad(got, x, g)
    assert set(stats.routed) == ops and not stats.passed, stats
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(grad, want_grad)
    assert got.stride() == want.stride() and grad.stride() == want_grad.stride()
    with torch_aclnn.patched(level="dispatcher") as stats:
        assert torch.autograd.gradcheck(fn, (x,))
        assert torch.autograd.gradgradcheck(fn, (x,))
    # (gradcheck's gradients are contiguous: beside another layout, elu_backward stays aten's)
    assert set(stats.routed) == ops if layout == "contiguous" or not name.endswith("elu") else stats.routed, stats


@pytest.mark.parametrize("layout", LAYOUTS)
def test_routed_max_unpool3d(layout):
    x = _x(layout=layout)
    p, i = _unpool(x)
    want = F.max_unpool3d(p, i, 2)
    with torch_aclnn.patched(level="dispatcher") as stats:
        got = F.max_unpool3d(p, i, 2)
        assert torch.autograd.gradcheck(lambda t: F.max_unpool3d(t, i, 2), (p,))
        assert torch.autograd.gradgradcheck(lambda t: F.max_unpool3d(t, i, 2), (p,))
    assert stats.routed.get("aten::max_unpool3d", 0) >= 1, stats
    assert torch.equal(got, want) and got.is_contiguous()


def test_adaptive_avg_pool3d_routes_all_but_the_mean():
    """Output size 1 is aten's mean (aten::adaptive_avg_pool3d never reaches
    _adaptive_avg_pool3d then) and an output size of 0 (the contract's row 7)
    gets torch's empty result; the rest is routed, bitwise torch's (float32), a
    channels_last 4-D input too, the gradient contiguous as aten's."""
    x = _x(dtype=torch.float32)
    with torch_aclnn.patched(level="dispatcher") as stats:
        F.adaptive_avg_pool3d(x, 1).sum().backward()
        empty = F.adaptive_avg_pool3d(x.detach(), (0, 2, 2))
    assert not stats.routed and empty.shape == (2, 3, 0, 2, 2), stats
    four = torch.randn(3, 4, 5, 6).contiguous(memory_format=torch.channels_last)
    with torch_aclnn.patched(level="dispatcher") as stats:
        got = F.adaptive_avg_pool3d(four, 2)
    assert stats.routed == {"aten::_adaptive_avg_pool3d": 1} and torch.equal(got, F.adaptive_avg_pool3d(four, 2))
    y = make_layout(x.detach(), "channels_last_3d").requires_grad_()
    want = F.adaptive_avg_pool3d(y, (3, 3, 5))
    (want_grad,) = torch.autograd.grad(want.square().sum(), y)
    with torch_aclnn.patched(level="dispatcher") as stats:
        got = F.adaptive_avg_pool3d(y, (3, 3, 5))
        (grad,) = torch.autograd.grad(got.square().sum(), y)
    assert stats.routed == {"aten::_adaptive_avg_pool3d": 1, "aten::_adaptive_avg_pool3d_backward": 1}, stats
    assert torch.equal(got, want) and torch.equal(grad, want_grad) and grad.stride() == want_grad.stride()


def test_max_pool3d_is_routed_only_where_patch_routes_it(monkeypatch):
    x = _x()
    with torch_aclnn.patched(level="dispatcher") as stats:
        F.max_pool3d(x, 2, return_indices=True)[0].sum().backward()
    assert not any(k.startswith("aten::max_pool3d") for k in stats.routed)  # (not on the CPU: _dropin)
    monkeypatch.setattr(torch_aclnn._dropin, "ROUTE_POOL_ON_CPU", True)
    want, want_idx = F.max_pool3d(x, 3, 2, 1, return_indices=True)
    (want_grad,) = torch.autograd.grad(want.sum(), x)
    with torch_aclnn.patched(level="dispatcher") as stats:
        got, idx = F.max_pool3d(x, 3, 2, 1, return_indices=True)
        (grad,) = torch.autograd.grad(got.sum(), x)
    assert set(stats.routed) == {"aten::max_pool3d_with_indices", "aten::max_pool3d_with_indices_backward"}
    assert torch.equal(got, want) and torch.equal(idx, want_idx) and torch.equal(grad, want_grad)


def test_max_pool3d_backward_indices(monkeypatch):
    """int32 indices (which the contract takes) get torch's error; an index
    outside its window gets torch_aclnn's IndexError, never aten's CPU kernel
    (which reads through it)."""
    monkeypatch.setattr(torch_aclnn._dropin, "ROUTE_POOL_ON_CPU", True)
    a = torch.ops.aten
    x = _x().detach()
    out, idx = a.max_pool3d_with_indices(x, [2])
    g = torch.ones_like(out)
    with pytest.raises(RuntimeError) as want:
        a.max_pool3d_with_indices_backward(g, x, [2], [2], [0], [1], False, idx.int())
    bad = idx.clone()
    bad.view(-1)[3] = 10 ** 6
    with torch_aclnn.patched(level="dispatcher") as stats:
        with pytest.raises(RuntimeError) as got:
            a.max_pool3d_with_indices_backward(g, x, [2], [2], [0], [1], False, idx.int())
        with pytest.raises(IndexError, match=r"^\[torch_aclnn 161002\] max_pool3d_with_indices_backward"):
            a.max_pool3d_with_indices_backward(g, x, [2], [2], [0], [1], False, bad)
    assert str(got.value) == str(want.value)
    assert stats.passed == {"aten::max_pool3d_with_indices_backward": 1}, stats


def test_keys_follow_the_pool_rule_of_the_moment(monkeypatch):
    x = _x().detach()
    with torch_aclnn.patched(level="dispatcher"):
        monkeypatch.setattr(torch_aclnn._dropin, "ROUTE_POOL_ON_CPU", True)
        with torch_aclnn.patched(level="dispatcher") as inner:
            F.max_pool3d(x, 2, return_indices=True)
    assert inner.routed == {"aten::max_pool3d_with_indices": 1}


def test_counts_read_while_a_block_ends_elsewhere(monkeypatch):
    """A block that ends in another thread while its counts are being read
    waits for the read (which would otherwise see half of the block's end)."""
    from torch_aclnn import _patch

    real = torch_aclnn._C
    pending = {}

    class Hooked:  # ends the block in another thread in the middle of a read
        def __getattr__(self, name):
            attr = getattr(real, name)
            if name != "_aten_route_counts" or "block" not in pending:
                return attr

            def counts():
                out = attr()
                block = pending.pop("block")
                pending["thread"] = threading.Thread(target=block.__exit__, args=(None, None, None))
                pending["thread"].start()
                pending["thread"].join(0.5)  # (it waits for the reader to finish)
                return out
            return counts

    stats = torch_aclnn.PatchStats()
    block = torch_aclnn.patched(stats, level="dispatcher")
    block.__enter__()
    F.elu(torch.randn(3))
    monkeypatch.setattr(_patch, "_C", Hooked)
    pending["block"] = block
    assert stats.routed == {"aten::elu": 1}
    pending["thread"].join()
    assert stats.routed == {"aten::elu": 1} and not torch_aclnn.is_patched("dispatcher")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_lower_precisions(dtype):
    x = _x(dtype=dtype)
    for fn in (F.elu, lambda t: F.interpolate(t, scale_factor=2), lambda t: F.smooth_l1_loss(t, t * 0.5)):
        want = fn(x)
        with torch_aclnn.patched(level="dispatcher") as stats:
            got = fn(x)
        assert stats.total_routed() == 1
        torch.testing.assert_close(got, want)


# Calls outside the contract: torch's own kernel, and its result or error.
PASSED = [
    ("aten::elu", lambda: F.elu(torch.randn(3, dtype=torch.float32), alpha=float("inf"))),
    ("aten::elu", lambda: F.elu(torch.randn(*[1] * 9))),                         # 9 dims
    ("aten::upsample_nearest3d", lambda: F.interpolate(torch.randn(1, 0, 2, 2, 2), scale_factor=2)),
    ("aten::smooth_l1_loss", lambda: F.smooth_l1_loss(_x().detach().transpose(1, 2), _x().detach().transpose(1, 2),
                                                      reduction="none")),       # keeps the layout
    ("aten::smooth_l1_loss", lambda: torch.ops.aten.smooth_l1_loss(torch.randn(4, dtype=torch.float64),
                                                                   torch.randn(1), 2, 1.0)),  # broadcast, promoted
    ("aten::smooth_l1_loss", lambda: torch.ops.aten.smooth_l1_loss(torch.tensor(0.5), torch.randn(4, 3).t(), 0,
                                                                   1.0)),  # 'none' follows target's layout
    ("aten::smooth_l1_loss", lambda: torch.ops.aten.smooth_l1_loss(torch.randn(3, 4), torch.zeros(3, 4), 1, 0.0)),
    ("aten::smooth_l1_loss_backward", lambda: torch.ops.aten.smooth_l1_loss_backward(
        torch.tensor(1.0), torch.randn(4, 5), torch.randn(4, 5, dtype=torch.float64), 1, 1.0)),  # keeps self's dtype
    ("aten::smooth_l1_loss_backward", lambda: torch.ops.aten.smooth_l1_loss_backward(
        torch.tensor(1.0), torch.randn(5), torch.randn(4, 5), 1, 1.0)),                       # a larger target
    ("aten::smooth_l1_loss_backward", lambda: torch.ops.aten.smooth_l1_loss_backward(
        torch.tensor(1.0), torch.randn(5), torch.zeros(5), 1, 0.0)),                          # beta 0
    ("aten::upsample_nearest3d", lambda: torch.ops.aten.upsample_nearest3d(
        torch.randn(2, 3, 4, 5, 6), [8, 10, 12], None, 3.0, None)),                          # scales not a set
    ("aten::upsample_nearest3d_backward", lambda: torch.ops.aten.upsample_nearest3d_backward(
        torch.randn(2, 3, 8, 10, 12), [8, 10, 12], [2, 3, 4, 5, 6], None, 3.0, None)),
    # a scale <= 0 on one axis: aten takes the sizes there and the positive scales elsewhere
    ("aten::upsample_nearest3d", lambda: torch.ops.aten.upsample_nearest3d(
        torch.arange(27.).reshape(1, 1, 3, 3, 3), [6, 6, 6], 2.1, 2.1, 0.0)),
    ("aten::_upsample_nearest_exact3d", lambda: torch.ops.aten._upsample_nearest_exact3d(
        torch.randn(1, 2, 3, 5, 7), [7, 11, 9], -1.0, 2.3, 1.4)),
    ("aten::upsample_nearest3d_backward", lambda: torch.ops.aten.upsample_nearest3d_backward(
        torch.randn(1, 2, 7, 11, 9), [7, 11, 9], [1, 2, 3, 5, 7], 2.4, 0.0, 1.4)),
    ("aten::_upsample_nearest_exact3d_backward", lambda: torch.ops.aten._upsample_nearest_exact3d_backward(
        torch.randn(1, 2, 7, 11, 9), [7, 11, 9], [1, 2, 3, 5, 7], 2.4, 2.3, -3.0)),
    ("aten::elu_backward", lambda: torch.ops.aten.elu_backward(
        torch.ones(4, 5), 1.0, 1.0, 1.0, False, torch.randn(5, 4).t())),                     # layouts differ
    ("aten::leaky_relu", lambda: F.leaky_relu(torch.randn(3), float("inf"))),          # inf slope
    ("aten::leaky_relu", lambda: F.leaky_relu(torch.randn(3), True)),                  # a bool slope
    ("aten::leaky_relu", lambda: F.leaky_relu(torch.randn(*[1] * 9))),                 # 9 dims
    ("aten::leaky_relu_backward", lambda: torch.ops.aten.leaky_relu_backward(
        torch.ones(4, 5), torch.randn(5, 4).t(), 0.2, False)),                           # layouts differ
    ("aten::upsample_trilinear3d", lambda: F.interpolate(torch.randn(1, 0, 2, 2, 2), scale_factor=2,
                                                         mode="trilinear")),                 # empty C: torch's error
    ("aten::upsample_trilinear3d", lambda: torch.ops.aten.upsample_trilinear3d(
        torch.randn(2, 3, 4, 5, 6), [8, 10, 12], False, 3.0, None, None)),                  # a scale off the sizes
    ("aten::upsample_trilinear3d_backward", lambda: torch.ops.aten.upsample_trilinear3d_backward(
        torch.randn(2, 3, 8, 10, 12).int(), [8, 10, 12], [2, 3, 4, 5, 6], False)),          # not floating
    ("aten::max_unpool3d", lambda: torch.ops.aten.max_unpool3d(torch.ones(1, 1, 2, 2, 2), torch.zeros(
        1, 1, 2, 2, 2, dtype=torch.int64), [1, 2, 2], [1, 1, 1], [0, 0, 0])),  # a smaller output (any winner)
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("op,fn", PASSED, ids=[f"{p[0]}{i}" for i, p in enumerate(PASSED)])
def test_outside_the_contract_is_torchs(op, fn):
    def outcome():
        torch.manual_seed(0)  # (the same inputs both times)
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - compared with torch's
            return e
    want = outcome()
    with torch_aclnn.patched(level="dispatcher") as stats:
        got = outcome()
    assert stats.passed.get(op, 0) >= 1 and op not in stats.routed, stats
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
    else:
        torch.testing.assert_close(got, want, equal_nan=True)
        assert got.stride() == want.stride()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradient_layouts_are_torchs(layout):
    """Gradients keep torch's strides: elu's where the incoming gradient is
    expanded (torch follows self's layout), upsample's (torch's is contiguous
    in every layout)."""
    x = _x(layout=layout)
    for fn in (lambda t: F.elu(t).sum(), lambda t: F.selu(t).mean(),
               lambda t: (F.interpolate(t, scale_factor=2) * make_layout(torch.ones(2, 3, 8, 8, 12), layout)).sum()):
        (want,) = torch.autograd.grad(fn(x), x)
        with torch_aclnn.patched(level="dispatcher") as stats:
            (got,) = torch.autograd.grad(fn(x), x)
        assert stats.routed, stats
        torch.testing.assert_close(got, want)
        assert got.stride() == want.stride(), (layout, got.stride(), want.stride())


def test_switching_while_other_threads_run():
    """Blocks end while other threads are inside a routed kernel: the kernels
    stay registered, switched off, so nothing is freed under them."""
    x = torch.randn(2, 3, 16, 16, 16)
    want = F.elu(x)
    stop = threading.Event()
    errors = []

    def worker():
        try:
            while not stop.is_set():
                torch.testing.assert_close(F.elu(x), want)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for _ in range(3000):
            with torch_aclnn.patched(level="dispatcher"):
                pass
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors


def test_a_failed_switch_leaves_nothing_half_done(monkeypatch):
    from torch_aclnn import _patch

    class Broken:
        def __getattr__(self, name):
            if name == "_route_aten":
                def fail(keys):
                    raise RuntimeError("[torch_aclnn] no routes here")
                return fail
            return getattr(torch_aclnn._C, name)

    monkeypatch.setattr(_patch, "_C", Broken)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="no routes here"):
            torch_aclnn.patch(level="dispatcher")
        assert not torch_aclnn.is_patched("dispatcher")
    torch_aclnn.unpatch(level="dispatcher")
    monkeypatch.undo()
    torch_aclnn.reset_patch_stats()
    torch_aclnn.patch(level="dispatcher")
    F.elu(torch.randn(3))
    torch_aclnn.unpatch(level="dispatcher")
    assert torch_aclnn.patch_stats().routed == {"aten::elu": 1}


def test_bad_unpool_index_is_torchs_error():
    p, i = _unpool(_x())
    i = i.clone()
    i.view(-1)[5] = 10 ** 6
    stats = raises_torchs_error(lambda: F.max_unpool3d(p, i, 2), "dispatcher")
    assert stats.passed == {"aten::max_unpool3d": 1}


def test_compiled_and_deterministic_at_both_levels():
    """Tracing max_unpool3d hits aten's own refusal under use_deterministic_algorithms(True); at both levels
    compiled code puts torch_aclnn's operator into the graph instead (docs/patch.md)."""
    p, i = _unpool(_x())
    want = F.max_unpool3d(p, i, 2)
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    got = {}
    try:
        for level in ("dispatcher", "function"):
            torch._dynamo.reset()
            f = torch.compile(lambda p, i: F.max_unpool3d(p, i, 2), backend="aot_eager")
            with torch_aclnn.patched(level=level):
                got[level] = f(p, i)
    finally:
        torch.use_deterministic_algorithms(before)
        torch._dynamo.reset()
    assert torch.equal(got["dispatcher"], want) and torch.equal(got["function"], want)


def test_deterministic_where_aten_refuses():
    p, i = _unpool(_x())
    want = F.max_unpool3d(p, i, 2)
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match="max_unpooling3d_forward_out does not have a deterministic"):
            F.max_unpool3d(p, i, 2)
        with torch_aclnn.patched(level="dispatcher"):
            got = F.max_unpool3d(p, i, 2)
    finally:
        torch.use_deterministic_algorithms(before)
    assert torch.equal(got, want)


def test_life_cycle_and_counts():
    x = _x().detach()
    torch_aclnn.reset_patch_stats()
    torch_aclnn.patch(level="dispatcher")
    torch_aclnn.patch(level="dispatcher")  # a no-op
    assert torch_aclnn.is_patched("dispatcher") and not torch_aclnn.is_patched("function")
    F.elu(x)
    with torch_aclnn.patched(level="dispatcher") as block:  # nests, counts its own block
        F.elu(x)
        F.elu(x)
    assert torch_aclnn.is_patched("dispatcher")
    torch_aclnn.unpatch(level="dispatcher")
    assert not torch_aclnn.is_patched("dispatcher")
    F.elu(x)  # aten's again: counted nowhere
    assert block.routed == {"aten::elu": 2}
    assert torch_aclnn.patch_stats().routed == {"aten::elu": 3}
    with pytest.raises(ValueError, match="level must be one of .* or None"):
        torch_aclnn.patch(level="aten")


def test_the_default_level():
    """patch() without a level routes here (torch >= 2.9, no torch_npu) at this level; patched() does not."""
    assert torch_aclnn.default_patch_level() == "dispatcher"
    x = _x().detach()
    torch_aclnn.reset_patch_stats()
    torch_aclnn.patch()
    assert torch_aclnn.is_patched("dispatcher") and not torch_aclnn.is_patched("function")
    F.elu(x)
    torch_aclnn.unpatch()
    assert not torch_aclnn.is_patched()
    assert torch_aclnn.patch_stats().routed == {"aten::elu": 1}
    with torch_aclnn.patched() as stats:
        assert torch_aclnn.is_patched("function") and not torch_aclnn.is_patched("dispatcher")
    with torch_aclnn.patched(level=None) as stats:  # None: patch()'s default
        assert torch_aclnn.is_patched("dispatcher") and not torch_aclnn.is_patched("function")
        F.elu(x)
    assert stats.routed == {"aten::elu": 1}


def test_the_backward_is_routed_while_the_routes_are_on():
    """aten's autograd formulas stay: a backward run after the routes are off is aten's (docs/patch.md)."""
    x = _x()
    with torch_aclnn.patched(level="dispatcher") as inside:
        F.elu(x).backward(torch.ones_like(x))
    with pytest.warns(UserWarning, match="1 result.*still hold the autograd graph"):
        with torch_aclnn.patched(level="dispatcher") as forward_only:
            y = F.elu(x)
    y.backward(torch.ones_like(x))
    assert inside.routed == {"aten::elu": 1, "aten::elu_backward": 1}
    assert forward_only.routed == {"aten::elu": 1}


@pytest.mark.parametrize("alpha", [float("nan"), -0.5])
def test_elu_backward_of_a_result_needs_alpha_at_least_0(alpha):
    """aten's elu_backward raises with is_result for an alpha not >= 0, NaN included (in-place ELU's backward);
    the route hands such a call to it."""
    x = torch.randn(6, dtype=torch.float64)
    y, g = F.elu(x, alpha=1.0), torch.randn(6, dtype=torch.float64)
    with pytest.raises(RuntimeError) as want:
        torch.ops.aten.elu_backward(g, alpha, 1.0, 1.0, True, y)
    with torch_aclnn.patched(level="dispatcher") as stats:
        with pytest.raises(RuntimeError) as got:
            torch.ops.aten.elu_backward(g, alpha, 1.0, 1.0, True, y)
    assert str(got.value) == str(want.value) and stats.passed == {"aten::elu_backward": 1}


@pytest.mark.parametrize("slope", [float("nan"), -0.5])
def test_leaky_relu_backward_of_a_result_needs_slope_at_least_0(slope):
    """aten's leaky_relu_backward raises with self_is_result for a slope not >= 0, NaN included (in-place
    LeakyReLU's backward); the route hands such a call to it."""
    x = torch.randn(6, dtype=torch.float64)
    y, g = F.leaky_relu(x, 0.1), torch.randn(6, dtype=torch.float64)
    with pytest.raises(RuntimeError) as want:
        torch.ops.aten.leaky_relu_backward(g, y, slope, True)
    with torch_aclnn.patched(level="dispatcher") as stats:
        with pytest.raises(RuntimeError) as got:
            torch.ops.aten.leaky_relu_backward(g, y, slope, True)
    assert str(got.value) == str(want.value) and stats.passed == {"aten::leaky_relu_backward": 1}


def test_inplace_leaky_relu_backward_is_routed():
    """F.leaky_relu(inplace=True) runs aten::leaky_relu_ (not replaced); its backward,
    leaky_relu_backward(self_is_result=True), is routed."""
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    want_y = F.leaky_relu(x.clone(), 0.01, inplace=True)
    (want,) = torch.autograd.grad(want_y, x, torch.ones_like(want_y))
    with torch_aclnn.patched(level="dispatcher") as stats:
        y = F.leaky_relu(x.clone(), 0.01, inplace=True)
        (got,) = torch.autograd.grad(y, x, torch.ones_like(y))
    assert stats.routed == {"aten::leaky_relu_backward": 1}, stats
    assert torch.equal(y, want_y) and torch.equal(got, want)


def test_unpatch_without_a_level_undoes_both():
    torch_aclnn.patch(level="function")
    torch_aclnn.patch(level="dispatcher")
    torch_aclnn.unpatch(level="function")
    assert torch_aclnn.is_patched("dispatcher") and not torch_aclnn.is_patched("function")
    torch_aclnn.patch(level="function")
    with torch.overrides.TorchFunctionMode():  # entered after patch(): unpatch() refuses and undoes nothing
        with pytest.raises(RuntimeError, match="another TorchFunctionMode"):
            torch_aclnn.unpatch()
        assert torch_aclnn.is_patched("dispatcher") and torch_aclnn.is_patched("function")
    torch_aclnn.unpatch()
    assert not torch_aclnn.is_patched("dispatcher") and not torch_aclnn.is_patched("function")


def test_both_levels_at_once():
    """The mode routes the F call to torch_aclnn's operator; what reaches aten (the F
    calls it passes on) meets the routes."""
    x = _x().detach()
    with torch_aclnn.patched(level="function") as mode, torch_aclnn.patched(level="dispatcher") as aten:
        F.elu(x)
        F.interpolate(x, scale_factor=2, mode="nearest", recompute_scale_factor=True, antialias=False)
        F.elu(x, inplace=True)  # routed by the mode; aten::elu_ is not replaced
    assert mode.routed == {"elu": 2, "interpolate": 1} and not aten.routed


def test_process_wide():
    x = _x().detach()
    seen = {}

    def other():
        seen["patched"] = torch_aclnn.is_patched("dispatcher")
        F.elu(x)

    with torch_aclnn.patched(level="dispatcher") as stats:
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["patched"] and stats.routed == {"aten::elu": 1}


def test_concurrent_blocks_in_threads():
    x = _x().detach()
    want = F.elu(x)
    errors = []

    def worker():
        try:
            for _ in range(20):
                with torch_aclnn.patched(level="dispatcher"):
                    assert torch.equal(F.elu(x), want)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not torch_aclnn.is_patched("dispatcher")


@pytest.mark.parametrize("context", ["no_grad", "inference_mode"])
def test_no_grad_and_inference_mode(context):
    x = _x().detach()
    want = F.elu(x)
    with torch_aclnn.patched(level="dispatcher") as stats, getattr(torch, context)():
        got = F.elu(x)
    assert stats.routed == {"aten::elu": 1} and torch.equal(got, want)


def test_compile_routes_the_functions():
    """Code compiled while the routes are on holds torch_aclnn's operators for
    the routed torch.nn.functional calls, as the function level's does
    (torch_aclnn/_compiled_routes.py; tests/test_patch_compiled.py)."""
    x = _x().detach()

    def fn(t):
        return F.smooth_l1_loss(F.interpolate(F.elu(t), scale_factor=2), torch.zeros(1, dtype=t.dtype).expand(
            2, 3, 8, 8, 12))

    want = fn(x)
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    with torch_aclnn.patched(level="dispatcher") as stats:
        got = compiled(x)
    assert stats.routed == {"elu": 1, "interpolate": 1, "smooth_l1_loss": 1}
    torch.testing.assert_close(got, want)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_routes_and_deterministic_pool_backward():
    x = _x(dtype=torch.float32).detach().cuda().requires_grad_()
    want, want_idx = F.max_pool3d(x, 2, return_indices=True)
    (want_grad,) = torch.autograd.grad(want.sum(), x)
    with torch_aclnn.patched(level="dispatcher") as stats:
        got, idx = F.max_pool3d(x, 2, return_indices=True)
        (grad,) = torch.autograd.grad(got.sum(), x)
        up = F.max_unpool3d(got, idx, 2)
    assert {"aten::max_pool3d_with_indices", "aten::max_pool3d_with_indices_backward",
            "aten::max_unpool3d"} <= set(stats.routed)
    assert torch.equal(got, want) and torch.equal(idx, want_idx) and torch.equal(grad, want_grad)
    assert torch.equal(up, F.max_unpool3d(want, want_idx, 2))


def test_checkpoint_recompute_is_routed():
    """The forward that checkpoint recomputes during backward meets the routes too
    (no context_fn, unlike the mode)."""
    from torch.utils.checkpoint import checkpoint

    x = _x()
    with torch_aclnn.patched(level="dispatcher") as stats:
        y = checkpoint(lambda t: F.elu(F.elu(t)), x, use_reentrant=False)
        y.backward(torch.ones_like(y))
    # two forwards, then the first recomputed (checkpoint stops once it has what backward needs)
    assert stats.routed == {"aten::elu": 3, "aten::elu_backward": 2}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_avg_pool3d_is_routed_with_torchs_results(layout):
    """aten::avg_pool3d and its backward on the CPU too (torch_aclnn's gather is
    deterministic and aten's CPU kernels have no float16/bfloat16): torch's bits in
    float64, contiguous results in every layout, as aten's."""
    x = _x((2, 3, 5, 6, 7), layout)
    for args in ((2,), (3, 2, 1, True, False), ((3, 2, 3), (2, 1, 2), (1, 0, 1), True, True, 5)):
        want = F.avg_pool3d(x, *args)
        g = torch.randn(want.shape, dtype=want.dtype, generator=torch.Generator().manual_seed(1))
        (want_grad,) = torch.autograd.grad(want, x, g)
        with torch_aclnn.patched(level="dispatcher") as stats:
            got = F.avg_pool3d(x, *args)
            (grad,) = torch.autograd.grad(got, x, g)
        assert stats.routed == {"aten::avg_pool3d": 1, "aten::avg_pool3d_backward": 1}, stats
        assert torch.equal(got, want) and torch.equal(grad, want_grad) and got.is_contiguous()
    with torch_aclnn.patched(level="dispatcher") as stats:
        with pytest.raises(RuntimeError, match="divisor must be not zero"):
            F.avg_pool3d(x, 2, divisor_override=0)
        torch.autograd.gradcheck(lambda t: F.avg_pool3d(t, 3, 2, 1, True, False), (x,))
    assert stats.passed == {"aten::avg_pool3d": 1}, stats
    assert stats.routed.get("aten::avg_pool3d_backward", 0) > 0
