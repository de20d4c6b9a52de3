"""LeakyReLU family (docs/spec.md §11) tests beyond the generic OpInfo tests of
test_common.py: the worked example, the x == 0 and NaN rules, aten's bits in
every dtype and layout (non-contiguous, channels_last_3d) and thread count,
out= behaviour, the Python API's own errors, in-place use, autograd against
aten, torch.compile, and the nnU-Net-style block under patch() (torch's
outputs and gradients; bitwise repeats under deterministic algorithms)."""
import pytest
import torch
import torch.nn.functional as F

import torch_aclnn as ta
from torch_aclnn.testing import FLOATING, make_layout
from torch_aclnn.testing.core import assert_compiled_steps

ops = torch.ops.torch_aclnn
_INT = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _same_bits(a, b):
    """Bitwise equal, any NaN standing for any NaN (aten's scalar loop writes
    another float16/bfloat16 NaN pattern than its vector path, spec §11)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    assert torch.equal(nan_a, nan_b)
    a, b = a.masked_fill(nan_a, 0).contiguous(), b.masked_fill(nan_b, 0).contiguous()
    return torch.equal(a.view(_INT[a.element_size()]), b.view(_INT[b.element_size()]))


# ---------------------------------------------------------------------------
# Spec


def test_worked_example():
    g = torch.tensor([2.0, 3.0, 4.0, 5.0])
    assert torch.equal(ta.leaky_relu_backward(g, torch.tensor([1.0, 2.0, 3.0, 4.0]), 0.01, True), g)
    x = torch.tensor([-2.0, 0.0, 3.0, -0.5])
    torch.testing.assert_close(ta.leaky_relu_backward(g, x, 0.01, False), torch.tensor([0.02, 0.03, 4.0, 0.05]))
    torch.testing.assert_close(ta.leaky_relu(x), torch.tensor([-0.02, 0.0, 3.0, -0.005]))


@pytest.mark.parametrize("dtype", FLOATING)
def test_zero_and_nan_take_the_slope(dtype):
    g = torch.full((4,), 3.0, dtype=dtype)
    x = torch.tensor([0.0, -0.0, float("nan"), 1.0], dtype=dtype)
    for self_is_result in (False, True):
        got = ta.leaky_relu_backward(g, x, 0.5, self_is_result)
        assert got.tolist() == [1.5, 1.5, 1.5, 3.0]  # NaN in self: grad * slope, not NaN (as aten)
    y = ta.leaky_relu(x, -2.0)
    assert torch.isnan(y[2]) and y[3] == 1.0
    assert torch.signbit(y[:2]).tolist() == [True, False]  # 0 * -2 = -0, -0 * -2 = +0 (aten's bits)
    assert torch.isnan(ta.leaky_relu_backward(torch.full_like(g, float("nan")), x, 0.5, False)).all()


@pytest.mark.parametrize("dtype", FLOATING)
def test_aten_bits_every_layout_slope_and_thread_count(dtype):
    base = torch.randn(4, 3, 5, 6, 7, dtype=torch.float64).mul(3)
    base.view(-1)[:8] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-40, -1e-40, 1e30])
    x, g = base.to(dtype), torch.randn(base.shape, dtype=torch.float64).to(dtype)
    for layout in ("contiguous", "channels_last_3d", "permuted", "sliced"):
        xl, gl = make_layout(x, layout), make_layout(g, layout)
        for slope in (0.01, 0.2, -0.3, 0.0, 3, float("inf"), float("nan")):
            ours = ta.leaky_relu(xl, slope)
            assert _same_bits(ours, torch.ops.aten.leaky_relu(xl, slope)), (layout, slope)
            if layout != "sliced":
                assert ours.stride() == xl.stride()  # the input's layout kept
            for sir in (False, True) if slope >= 0 else (False,):  # (aten raises for NaN too)
                assert _same_bits(ta.leaky_relu_backward(gl, xl, slope, sir),
                                  torch.ops.aten.leaky_relu_backward(gl, xl, slope, sir)), (layout, slope, sir)
    big = torch.randn(300_001, dtype=torch.float64).to(dtype)
    many = ta.leaky_relu(big, 0.1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert torch.equal(ta.leaky_relu(big, 0.1), many)
        assert torch.equal(ta.leaky_relu(big[1:], 0.1), many[1:])  # another alignment
    finally:
        torch.set_num_threads(threads)


def test_grad_and_self_in_different_layouts():
    x = torch.randn(2, 3, 4, 5, 6)
    g = torch.randn(2, 3, 4, 5, 6).contiguous(memory_format=torch.channels_last_3d)
    got = ta.leaky_relu_backward(g, x, 0.3, False)
    assert torch.equal(got, torch.ops.aten.leaky_relu_backward(g, x, 0.3, False))
    assert got.stride() == g.stride()  # grad_output's layout
    e = torch.randn(1, 50).expand(40, 50)
    assert torch.equal(ta.leaky_relu(e), F.leaky_relu(e.contiguous()))


# ---------------------------------------------------------------------------
# out=


@pytest.mark.parametrize("self_is_result", [False, True])
def test_out_wider_dtype_and_strided(self_is_result):
    for go_dtype, out_dtype in ((torch.bfloat16, torch.float32), (torch.float16, torch.float64),
                                (torch.float32, torch.float64)):
        g, x = torch.randn(6, 8).to(go_dtype), torch.randn(6, 8).to(go_dtype)
        out = torch.empty(6, 8, dtype=out_dtype)
        assert ta.leaky_relu_backward(g, x, 0.2, self_is_result, out=out) is out
        assert torch.equal(out, ta.leaky_relu_backward(g, x, 0.2, self_is_result).to(out_dtype))
    g, x = torch.randn(6, 8), torch.randn(6, 8)
    base = torch.full((8, 12), float("nan"))
    out = base.t()[::2]
    assert ta.leaky_relu_backward(g, x, 0.2, False, out=out) is out
    assert torch.equal(out, ta.leaky_relu_backward(g, x, 0.2, False))
    assert torch.isnan(base.t()[1::2]).all()


def test_out_aliasing_an_input():
    g, x = torch.randn(7, 7), torch.randn(7, 7)
    expected = ta.leaky_relu_backward(g, x, 0.2, False)
    g2 = g.clone()
    assert ta.leaky_relu_backward(g2, x, 0.2, False, out=g2) is g2 and torch.equal(g2, expected)
    buf = x.t().contiguous()  # buf.t() has x's values; out is their memory seen transposed
    assert ta.leaky_relu_backward(g, buf.t(), 0.2, False, out=buf) is buf and torch.equal(buf, expected)


def test_out_refuses_autograd():
    g, x = torch.randn(3, requires_grad=True), torch.randn(3)
    with pytest.raises(RuntimeError, match=r"^leaky_relu_backward\(\): functions with out=\.\.\. arguments don't "
                                           r"support automatic differentiation"):
        ta.leaky_relu_backward(g, x, 0.2, False, out=torch.empty(3))


# ---------------------------------------------------------------------------
# The Python API's own rules (the operator's contract is tested generically)


@pytest.mark.parametrize("call,arg", [
    (lambda t: ta.leaky_relu(None), "input"),
    (lambda t: ta.leaky_relu(t, None), "negative_slope"),
    (lambda t: ta.leaky_relu_backward(None, t, 0.1, False), "grad_output"),
    (lambda t: ta.leaky_relu_backward(t, None, 0.1, False), "self"),
    (lambda t: ta.leaky_relu_backward(t, t, None, False), "negative_slope"),
    (lambda t: ta.leaky_relu_backward(t, t, 0.1, None), "self_is_result"),
])
def test_none_is_161001(call, arg):
    with pytest.raises(TypeError, match=rf"^\[torch_aclnn 161001\] \w+: {arg} is required, got None"):
        call(torch.randn(3))


def test_wrong_kinds_are_contract_errors():
    x = torch.randn(3)
    with pytest.raises(TypeError, match=r"^\[torch_aclnn 161002\] leaky_relu: negative_slope must be a real number"):
        ta.leaky_relu(x, "0.1")
    with pytest.raises(TypeError, match=r"^\[torch_aclnn 161002\] leaky_relu_backward: self_is_result must be a bool"):
        ta.leaky_relu_backward(x, x, 0.1, 1)
    with pytest.raises(RuntimeError, match=r"^\[torch_aclnn 161002\] leaky_relu_backward: .*meta"):
        ta.leaky_relu_backward(x, x.to("meta"), 0.1, False)
    assert torch.equal(ta.leaky_relu(x, 2), ta.leaky_relu(x, 2.0))  # an int slope is its value


def test_inplace_like_torch():
    x = torch.randn(4, 5, dtype=torch.float64)
    a, b = x.clone(), x.clone()
    assert ta.leaky_relu(a, 0.2, inplace=True) is a and F.leaky_relu(b, 0.2, inplace=True) is b
    assert ta.ops.leaky_relu.leaky_relu_(a) is a and F.leaky_relu_(b) is b
    assert a._version == b._version == 2 and torch.equal(a, b)
    # Differentiated from the result, as aten's leaky_relu_; a negative slope's backward raises.
    for slope in (0.2, 0.0):
        h = torch.randn(6, dtype=torch.float64, requires_grad=True)
        (d,) = torch.autograd.grad(ta.leaky_relu(h * 1, slope, inplace=True).sum(), h)
        assert torch.equal(d, torch.full_like(h, slope).masked_fill(h > 0, 1.0))
    h = torch.randn(6, requires_grad=True)
    y = ta.leaky_relu(h * 1, -0.5, inplace=True)
    with pytest.raises(ValueError, match=r"negative_slope must be >= 0 when self_is_result is True"):
        y.sum().backward()


# ---------------------------------------------------------------------------
# Autograd


@pytest.mark.parametrize("self_is_result", [False, True])
def test_autograd_matches_aten(self_is_result):
    """First and second derivatives of leaky_relu_backward w.r.t. both inputs equal aten's."""
    x = torch.randn(6, 7, dtype=torch.float64) * 3
    g, gg = torch.randn(6, 7, dtype=torch.float64), torch.randn(6, 7, dtype=torch.float64)
    s = torch.ops.aten.leaky_relu(x, 0.3) if self_is_result else x
    results = []
    for bwd in (ops.leaky_relu_backward, torch.ops.aten.leaky_relu_backward):
        go, so = g.clone().requires_grad_(), s.clone().requires_grad_()
        out = bwd(go, so, 0.3, self_is_result)
        dgo, dso = torch.autograd.grad(out, (go, so), gg, create_graph=True)
        d2 = torch.autograd.grad((dgo * dgo).sum() + dso.sum(), (go, so), allow_unused=True, materialize_grads=True)
        results.append((out, dgo, dso, *d2))
    for ours, theirs in zip(*results):
        assert torch.equal(ours, theirs)


def test_forward_ad_and_vmap():
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    t = torch.randn_like(x)
    _, ours = torch.func.jvp(lambda v: ta.leaky_relu(v, 0.2), (x,), (t,))
    _, theirs = torch.func.jvp(lambda v: F.leaky_relu(v, 0.2), (x,), (t,))
    assert torch.equal(ours, theirs)
    jac = torch.func.jacfwd(lambda v: ta.leaky_relu_backward(v, x, 0.2, False))(x)
    assert torch.equal(jac.reshape(60, 60).diagonal(), torch.full_like(x, 0.2).masked_fill(x > 0, 1.0).flatten())
    g = torch.randn(3, 4, 5, dtype=torch.float64)
    assert torch.equal(torch.vmap(lambda a, b: ta.leaky_relu_backward(a, b, 0.2, False))(g, x),
                       ta.leaky_relu_backward(g, x, 0.2, False))
    x9 = torch.randn(2, *[1] * 7, 3)  # 8 dims a sample, 9 with the batch: folded into the next one
    assert torch.equal(torch.vmap(lambda v: ta.leaky_relu(v, 0.2))(x9), F.leaky_relu(x9, 0.2))


def test_compiled_training_step():
    """compile(fullgraph, dynamic) of a small model using leaky_relu gives eager's loss and gradients."""

    def make():
        torch.manual_seed(1)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 4))

    def loss_fn(model, x, slope):
        return model[1](ta.leaky_relu(model[0](x), slope)).pow(2).mean()

    assert_compiled_steps(make, loss_fn, ((torch.randn(batch, 8), slope) for batch, slope in ((5, 0.01), (9, 0.2))))


@pytest.mark.parametrize("shape", [(3,), (0, 4), (2, 3, 4, 5, 6, 7, 2, 2)])
def test_meta_shapes(shape):
    x = torch.empty(shape, device="meta")
    assert ta.leaky_relu(x).shape == shape
    assert ta.leaky_relu_backward(x, x, 0.1, True).shape == shape


# ---------------------------------------------------------------------------
# Drop-in: the nnU-Net-style block Conv3d -> InstanceNorm3d -> LeakyReLU(0.01, inplace=True)


def _block():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv3d(2, 4, 3, padding=1), torch.nn.InstanceNorm3d(4, affine=True),
                               torch.nn.LeakyReLU(0.01, inplace=True), torch.nn.Conv3d(4, 2, 1))


def _step(model, x):
    x = x.clone().requires_grad_()
    y = model(x)
    y.square().mean().backward()
    grads = [x.grad] + [p.grad for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return y.detach(), grads


@pytest.mark.parametrize("fn", [lambda t: F.leaky_relu(t, 0.01, inplace=True), lambda t: F.leaky_relu_(t, 0.3),
                                lambda t: F.leaky_relu_(t[1:], 0.3)], ids=["inplace=True", "leaky_relu_", "a view"])
def test_inplace_routed_by_patch(fn):
    x = torch.randn(4, 5, dtype=torch.float64)
    runs = []
    for patch in (True, False):
        h = x.clone().requires_grad_()
        t = h * 2
        if patch:
            with ta.patched() as stats:
                fn(t)
            assert stats.total_routed() == 1 and not stats.passed, stats
        else:
            fn(t)
        (d,) = torch.autograd.grad(t, h, torch.ones_like(t))
        runs.append((t.detach(), d, t._version))
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])
    assert runs[0][2] == runs[1][2]
    leaf = torch.randn(3, requires_grad=True)  # torch's rule and error: a leaf
    with ta.patched() as stats:
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            F.leaky_relu_(leaf)
    assert stats.passed == {"leaky_relu_": 1}


def test_nnunet_block_under_patch_matches_torch():
    model = _block()
    x = torch.randn(2, 2, 6, 5, 7)
    want_y, want_grads = _step(model, x)
    with ta.patched() as stats:
        y, grads = _step(model, x)
    assert stats.routed == {"leaky_relu": 1}, stats
    torch.testing.assert_close(y, want_y)
    for got, want in zip(grads, want_grads, strict=True):
        torch.testing.assert_close(got, want)
    assert torch.equal(y, want_y)  # the activation's arithmetic is aten's: the same bits
    converted = ta.nn.convert(_block())
    assert type(converted[2]) is ta.nn.LeakyReLU and converted[2].inplace
    y, grads = _step(converted, x)
    assert torch.equal(y, want_y)


def test_nnunet_block_deterministic_repeats():
    old = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        model, x = _block(), torch.randn(2, 2, 6, 5, 7)
        ta.patch()
        try:
            first = _step(model, x)
            second = _step(model, x)
        finally:
            ta.unpatch()
    finally:
        torch.use_deterministic_algorithms(old)
    for a, b in zip([first[0], *first[1]], [second[0], *second[1]], strict=True):
        assert torch.equal(a, b)


def test_export_keeps_the_operators():
    model = torch.nn.Sequential(torch.nn.Conv3d(2, 2, 3, padding=1), ta.nn.LeakyReLU(0.01))
    x = torch.randn(1, 2, 3, 4, 5)
    ep = torch.export.export(model, (x,))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert "torch_aclnn.leaky_relu.default" in targets, targets
    assert torch.equal(ep.module()(x), model(x))
