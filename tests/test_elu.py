"""ELU family (docs/spec.md §3) tests beyond the generic OpInfo tests of test_common.py:
the worked example, the x == 0 rule, parity with torch.nn.functional and aten
(values in ulps, gradients, double gradients), layout independence, out=
behaviour, the Python API's own errors, and a compiled training step."""
import math

import pytest
import torch
import torch.nn.functional as F

import torch_aclnn as ta
from torch_aclnn.testing import FLOATING, make_layout
from torch_aclnn.testing.core import assert_compiled_steps
from torch_aclnn.testing.elu import SELU, ulp_distance, ulp_table

ops = torch.ops.torch_aclnn


def _signbit(t):
    return torch.signbit(t).tolist()


# ---------------------------------------------------------------------------
# Spec


def test_worked_example():
    g = torch.tensor([[-2.0, -1.0], [0.0, 1.0]])
    x = g.clone()
    got = ta.elu_backward(g, 1, 1, 1, True, x)
    assert torch.equal(got, torch.tensor([[2.0, -0.0], [0.0, 1.0]]))
    assert _signbit(got) == [[False, True], [False, False]]  # -1 * (-1 + 1) = -0
    got = ta.elu_backward(g, 1, 1, 1, False, x)
    torch.testing.assert_close(got, torch.tensor([[-0.27067056, -0.36787944], [0.0, 1.0]]))


@pytest.mark.parametrize("dtype", FLOATING)
def test_zero_takes_negative_branch(dtype):
    zero = torch.zeros(3, dtype=dtype)
    one = torch.ones(3, dtype=dtype)
    # The branches differ at x == 0 only when their slopes differ: 1 * scale
    # (positive) against input_scale * alpha * scale (negative) = 2.
    assert torch.equal(ta.elu_backward(one, 2.0, 1.0, 1.0, False, zero), 2 * one)
    assert torch.equal(ta.elu_backward(one, 2.0, 1.0, 1.0, True, zero), 2 * one)
    # The forward takes the positive branch at x = +-0 (aten's CPU rule, x >= 0): +-0 * scale.
    assert _signbit(ta.elu(zero, -1.0)) == [False] * 3
    assert _signbit(ta.elu(-zero, -1.0)) == [True] * 3
    assert _signbit(ta.elu(zero, 1.0)) == [False] * 3


# (alpha, scale, input_scale) where the negative branch at x = +-0 is not +-0 * scale:
# alpha * scale or input_scale infinite (0 * inf = NaN), negative coefficients (the sign of zero).
_ZERO_PARAMS = [(math.inf, 1.0, 1.0), (-math.inf, 1.0, 1.0), (1.0, 1.0, math.inf), (1.0, 1.0, -math.inf),
                (math.inf, 1.0, 0.0), (0.0, 1.0, math.inf), (1e30, 1e30, 1.0), (1.0, math.inf, 1.0),
                (-1.0, 1.0, 1.0), (1.0, -1.0, 1.0), (1.0, 1.0, -1.0), (2.0, 1.0, 0.5)]  # (1e30 ** 2: inf in float32)


def _bits_equal(a, b):
    """Bitwise, any NaN matching any NaN."""
    nan = a.isnan() & b.isnan()
    if a.dtype == torch.float64:
        a, b = a.view(torch.int64), b.view(torch.int64)
    elif a.dtype == torch.float32:
        a, b = a.view(torch.int32), b.view(torch.int32)
    else:
        a, b = a.view(torch.int16), b.view(torch.int16)
    return a.shape == b.shape and bool(((a == b) | nan).all())


@pytest.mark.parametrize("dtype", FLOATING)
def test_zero_with_infinite_coefficients_matches_aten(dtype):
    """x = +-0 with alpha * scale = +-inf or input_scale = +-inf: aten's 0 / -0
    (the negative branch gave 0 * inf = NaN), on the vectorised and strided
    paths; the backward at +-0 (the negative branch, as aten's) gives aten's
    bits there too."""
    x = torch.tensor([0.0, -0.0, -1.0, 1.0, 0.0, -0.0, 2.0, -0.5] * 9, dtype=dtype)
    strided = torch.zeros(2 * x.numel(), dtype=dtype)[::2].copy_(x)
    g = torch.linspace(-2, 2, x.numel(), dtype=dtype)
    for alpha, scale, input_scale in _ZERO_PARAMS:
        for xs in (x, strided, x[:1], x[1:2]):  # (at x = +-0: elsewhere aten's scalar tail may differ by an ulp)
            got, want = ops.elu(xs, alpha, scale, input_scale), torch.ops.aten.elu(xs, alpha, scale, input_scale)
            assert _bits_equal(got[xs == 0], want[xs == 0]), (alpha, scale, input_scale)
        zeros = x == 0
        assert not ops.elu(x, alpha, scale, input_scale)[zeros].isnan().any() or math.isinf(scale)
        for is_result in (False, True):
            if is_result and alpha < 0:
                continue
            got = ops.elu_backward(g, alpha, scale, input_scale, is_result, x)
            want = torch.ops.aten.elu_backward(g, alpha, scale, input_scale, is_result, x)
            assert _bits_equal(got[zeros], want[zeros]), (alpha, scale, input_scale, is_result)


def test_functional_infinite_alpha_matches_torch():
    """F.elu / F.celu with alpha = inf in float64, and the modules, give torch's
    values (0 and -0 at x = +-0), directly, through torch_aclnn.nn and under patch()."""
    x = torch.tensor([0.0, -0.0, -1.0, 2.0] * 4, dtype=torch.float64)
    inf = math.inf
    assert _bits_equal(ta.elu(x, alpha=inf), F.elu(x, alpha=inf))
    assert _bits_equal(ta.elu(x, alpha=-inf), F.elu(x, alpha=-inf))
    assert _bits_equal(ta.celu(x, alpha=inf), F.celu(x, alpha=inf))
    assert _bits_equal(ta.nn.ELU(alpha=inf)(x), torch.nn.ELU(alpha=inf)(x))
    with ta.patched() as stats:
        got = F.elu(x, alpha=inf)
    assert stats.total_routed() > 0
    assert _bits_equal(got, F.elu(x, alpha=inf))


@pytest.mark.parametrize("dtype", FLOATING)
def test_nan_propagates(dtype):
    nan = torch.full((5,), float("nan"), dtype=dtype)
    assert torch.isnan(ta.elu(nan)).all()
    g = torch.ones(5, dtype=dtype)
    for is_result in (False, True):
        assert torch.isnan(ta.elu_backward(g, 1.0, 1.0, 1.0, is_result, nan)).all()
        assert torch.isnan(ta.elu_backward(nan, 1.0, 1.0, 1.0, is_result, g)).all()


# ---------------------------------------------------------------------------
# Parity with torch.nn.functional / aten

# Max ulp distance to aten measured by ulp_table() on this machine (AVX512,
# torch 2.13): 0 on dense tensors except in aten's scalar tail, where aten
# uses std::exp / std::expm1 instead of Sleef; there and on strided tensors
# (aten's scalar loop everywhere) at most 2 ulp in float32/float64 and 1 ulp
# in float16 (bfloat16: 0). is_result=True has no transcendental: always 0.
ULP_BOUND = {"float32": 2, "float64": 2, "float16": 1, "bfloat16": 1}


def test_ulp_distance_to_aten():
    table = ulp_table(n=20_011)
    for (dtype, layout), row in table.items():
        assert row["backward(is_result=True)"] == 0, (dtype, layout, row)
        for kind, ulps in row.items():
            assert ulps <= ULP_BOUND[dtype], (dtype, layout, kind, ulps)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_exp_on_packed_lanes_is_bitwise_aten(dtype):
    """Dense runs of whole 256-element blocks evaluate exp/expm1 only on the
    lanes with x <= 0 or NaN, packed side by side (AVX-512 builds): every
    element must still be bitwise aten's vectorised result, whatever the mix
    of signs in a vector or block (all positive, all negative, alternating,
    random, special values), and the same as our unpacked per-vector path (a
    strided view of the same values). A test of the CPU kernels, on the CPU
    under any default device (aten's CUDA kernel differs at x = NaN, where
    the spec gives NaN: tests/test_cuda.py covers that)."""
    with torch.device("cpu"):
        _check_packed_lanes(dtype)


def _check_packed_lanes(dtype):
    n = 1024
    specials = torch.tensor([float("nan"), -0.0, 0.0, float("inf"), -float("inf"), -1e-45, 1e-45, -200.0,
                             -88.5, -1e-8, 3.0, -3.0, float("-nan"), 1e30, -1e30, -0.5])
    parts = [torch.rand(n) + 0.1, -torch.rand(n) * 10, torch.randn(n) * 4,
             torch.tensor([1.0, -1.0]).repeat(n // 2) * torch.rand(n) * 5,
             specials.repeat(n // specials.numel())[torch.randperm(n)],
             torch.cat([torch.randn(n - 5), specials[:5]])]
    x = torch.cat(parts).to(dtype)  # 6 blocks; aten is vectorised over all of them (n is a multiple of 64)
    g = torch.randn(x.numel()).to(dtype)
    wide = torch.empty(2 * x.numel(), dtype=dtype)
    xs, gs = wide[::2], wide.clone()[::2]  # strided: the per-vector path
    xs.copy_(x)
    gs.copy_(g)
    bits = torch.int16 if dtype != torch.float32 else torch.int32

    def same(a, b):  # bitwise, any NaN matching any NaN
        return (a.view(bits) == b.view(bits)) | (a.isnan() & b.isnan())

    for alpha, scale, input_scale in ((1.0, 1.0, 1.0), (1.3, 1.1, 0.7)):
        ours_b = ta.elu_backward(g, alpha, scale, input_scale, False, x)
        assert same(ours_b, torch.ops.aten.elu_backward(g, alpha, scale, input_scale, False, x)).all()
        assert same(ta.elu_backward(gs, alpha, scale, input_scale, False, xs), ours_b).all()
        ours_f = ta.elu(x, alpha, scale=scale, input_scale=input_scale)
        # aten's x >= 0 rule gives +0 at x = +-0 where ours (x > 0) keeps expm1's -0 (docs/spec.md §3)
        assert (same(ours_f, torch.ops.aten.elu(x, alpha, scale, input_scale)) | (x == 0)).all()
        assert same(ta.elu(xs, alpha, scale=scale, input_scale=input_scale), ours_f).all()


def test_ulp_distance_helper():
    a = torch.tensor([1.0, -0.0, float("nan"), -1.0])
    b = torch.tensor([1.0, 0.0, float("nan"), -1.0])
    assert ulp_distance(a, b) == 0
    assert ulp_distance(torch.nextafter(a, torch.tensor(2.0)), b) == 1  # the NaN stays NaN
    tiny = torch.tensor([torch.finfo(torch.float32).tiny * 2**-23])  # smallest subnormal
    assert ulp_distance(tiny, -tiny) == 2
    big = torch.tensor([1e308], dtype=torch.float64)
    assert ulp_distance(big, -big) > 2**61


@pytest.mark.parametrize("dtype", FLOATING)
def test_python_api_matches_functional(dtype):
    # 256 dense elements (one thread, a multiple of every vector width): aten
    # takes its vectorised path everywhere, so the results are bitwise equal.
    x = torch.randn(4, 64, dtype=torch.float64).mul(3).to(dtype)
    pairs = [
        (ta.elu(x), F.elu(x)),
        (ta.elu(x, 0.3), F.elu(x, alpha=0.3)),
        (ta.elu(x, 2), F.elu(x, 2.0)),
        (ta.selu(x), F.selu(x)),
        (ta.celu(x), F.celu(x)),
        (ta.celu(x, 0.25), F.celu(x, alpha=0.25)),
        (ta.celu(x, -1.5), F.celu(x, alpha=-1.5)),
        (ta.elu(x, 1.3, scale=1.1, input_scale=0.7), torch.ops.aten.elu(x, 1.3, 1.1, 0.7)),
    ]
    for ours, theirs in pairs:
        assert ours.dtype == dtype and torch.equal(ours, theirs)


def test_selu_constants_match_aten():
    assert SELU == (ta.ops.elu.SELU_ALPHA, ta.ops.elu.SELU_SCALE, 1.0)
    x = torch.linspace(-5, 5, 128, dtype=torch.float64)
    assert torch.equal(ta.selu(x), F.selu(x))


@pytest.mark.parametrize("is_result", [False, True])
def test_autograd_matches_aten(is_result):
    """First and second derivatives of elu, and of elu_backward w.r.t. both
    inputs, equal aten's (whose double backward aten derives itself)."""
    params = (1.3, 1.1, 0.7)
    x = torch.randn(6, 7, dtype=torch.float64) * 3
    g = torch.randn(6, 7, dtype=torch.float64)
    gg = torch.randn(6, 7, dtype=torch.float64)
    s = torch.ops.aten.elu(x, *params) if is_result else x
    results = []
    for bwd in (ops.elu_backward, torch.ops.aten.elu_backward):
        go, so = g.clone().requires_grad_(), s.clone().requires_grad_()
        out = bwd(go, *params, is_result, so)
        dgo, dso = torch.autograd.grad(out, (go, so), gg, create_graph=True)
        d2 = torch.autograd.grad((dso * dso).sum() + (dgo * dgo).sum(), (go, so), allow_unused=True,
                                 materialize_grads=True)
        results.append((out, dgo, dso, *d2))
    for ours, theirs in zip(*results):
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)


def test_forward_autograd_matches_functional():
    x = torch.randn(5, 9, dtype=torch.float64) * 3
    # aten's CeluBackward0 rounds input_scale = 1 / alpha to float32
    # (1.0 / alpha.toFloat()); ours keeps it in double, like aten's elu with
    # the same parameters, which is what celu is compared with here.
    celu_as_elu = lambda t: torch.ops.aten.elu(t, 1.7, 1.0, 1.0 / 1.7)  # noqa: E731
    for ours_fn, theirs_fn in ((lambda t: ta.elu(t, 0.4), lambda t: F.elu(t, 0.4)), (ta.selu, F.selu),
                               (lambda t: ta.celu(t, 1.7), celu_as_elu)):
        grads = []
        for fn in (ours_fn, theirs_fn):
            xx = x.clone().requires_grad_()
            (d,) = torch.autograd.grad(fn(xx).sin().sum(), xx, create_graph=True)
            (d2,) = torch.autograd.grad(d.pow(2).sum(), xx)
            grads.append((d, d2))
        torch.testing.assert_close(grads[0], grads[1], rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# Kernel properties: every element takes the same vectorised path, so the
# result depends neither on layout nor on the number of threads.


def _views(t):
    """The same values in several memory layouts, as (name, tensor)."""
    yield "contiguous", t
    yield "permuted", make_layout(t, "permuted")
    yield "sliced", make_layout(t, "sliced")
    step = torch.empty(t.shape[0] * 3, *t.shape[1:], dtype=t.dtype)[::3]
    step.copy_(t)
    yield "row stride 3", step


@pytest.mark.parametrize("dtype", FLOATING)
def test_layout_and_thread_independent(dtype):
    x = (torch.randn(37, 129, dtype=torch.float64) * 3).to(dtype)
    g = torch.randn(37, 129, dtype=torch.float64).to(dtype)
    expect_f = ta.elu(x, 1.3, scale=1.1, input_scale=0.7)
    expect_b = [ta.elu_backward(g, 1.3, 1.1, 0.7, r, x.abs() if r else x) for r in (False, True)]
    for (name, xv), (_, gv) in zip(_views(x), _views(g)):
        assert torch.equal(ta.elu(xv, 1.3, scale=1.1, input_scale=0.7), expect_f), name
        for r in (False, True):
            xr = make_layout(x.abs(), "sliced") if r else xv  # also: grad and x in different layouts
            assert torch.equal(ta.elu_backward(gv, 1.3, 1.1, 0.7, r, xr), expect_b[r]), (name, r)
    big = (torch.randn(300_001, dtype=torch.float64) * 3).to(dtype)
    many = ta.elu(big)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert torch.equal(ta.elu(big), many)
        assert torch.equal(ta.elu(big[1:]), many[1:])  # another alignment
    finally:
        torch.set_num_threads(threads)


def test_expanded_inputs():
    x = torch.randn(1, 50).expand(40, 50)
    g = torch.randn(40, 1).expand(40, 50)
    assert torch.equal(ta.elu(x), ta.elu(x.contiguous()))
    assert torch.equal(ta.elu_backward(g, 1.0, 1.0, 1.0, False, x),
                       ta.elu_backward(g.contiguous(), 1.0, 1.0, 1.0, False, x.contiguous()))


def test_result_layout_follows_input():
    x = torch.randn(2, 3, 4, 5, 6).contiguous(memory_format=torch.channels_last_3d)
    assert ta.elu(x).stride() == x.stride()
    assert ta.elu_backward(x, 1, 1, 1, False, x.contiguous()).stride() == x.stride()
    assert ta.elu(make_layout(x, "sliced")).is_contiguous()


# ---------------------------------------------------------------------------
# out=


def _bwd_args(dtype=torch.float32, shape=(6, 8)):
    g = torch.randn(shape, dtype=torch.float64).to(dtype)
    x = (torch.randn(shape, dtype=torch.float64) * 3).to(dtype)
    return g, x


@pytest.mark.parametrize("is_result", [False, True])
def test_out_wider_dtype(is_result):
    for go_dtype, out_dtype in ((torch.bfloat16, torch.float32), (torch.float16, torch.float32),
                                (torch.bfloat16, torch.float64), (torch.float32, torch.float64)):
        g, x = _bwd_args(go_dtype)
        x = x.abs() if is_result else x
        out = torch.empty(g.shape, dtype=out_dtype)
        got = ta.elu_backward(g, 1.3, 1.1, 0.7, is_result, x, out=out)
        assert got is out
        # Rounded in grad_output's dtype, then widened exactly.
        assert torch.equal(out, ta.elu_backward(g, 1.3, 1.1, 0.7, is_result, x).to(out_dtype))


def test_out_strided_written_in_place():
    g, x = _bwd_args()
    expected = ta.elu_backward(g, 1.0, 1.0, 1.0, False, x)
    base = torch.full((8, 6 * 2), float("nan"))
    out = base.t()[::2]  # (6, 8), strides (1, 12)
    assert ta.elu_backward(g, 1.0, 1.0, 1.0, False, x, out=out) is out
    assert torch.equal(out, expected)
    assert torch.isnan(base.t()[1::2]).all()  # nothing outside the view was touched


def test_out_aliasing_inputs():
    g, x = _bwd_args()
    expected = ta.elu_backward(g, 1.0, 1.0, 1.0, False, x)
    # out is grad_output itself (same strides): computed in place.
    g2 = g.clone()
    assert ta.elu_backward(g2, 1.0, 1.0, 1.0, False, x, out=g2) is g2
    assert torch.equal(g2, expected)
    # out is the memory of self_or_result, seen transposed: through a temporary.
    sq_g, sq_x = _bwd_args(shape=(7, 7))
    sq_expected = ta.elu_backward(sq_g, 1.0, 1.0, 1.0, False, sq_x)
    buf = sq_x.t().contiguous()  # buf.t() has sq_x's values
    assert ta.elu_backward(sq_g, 1.0, 1.0, 1.0, False, buf.t(), out=buf) is buf
    assert torch.equal(buf, sq_expected)
    # out partially overlaps grad_output: also through a temporary.
    storage = torch.randn(20)
    gv, ov = storage[:16].view(4, 4), storage[4:20].view(4, 4)
    xs = torch.randn(4, 4)
    expected = ta.elu_backward(gv.clone(), 1.0, 1.0, 1.0, False, xs)
    ta.elu_backward(gv, 1.0, 1.0, 1.0, False, xs, out=ov)
    assert torch.equal(ov, expected)


def test_out_internal_overlap_rejected():
    g, x = _bwd_args(shape=(4, 5))
    out = torch.empty(1, 5).expand(4, 5)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        ta.elu_backward(g, 1.0, 1.0, 1.0, False, x, out=out)


def test_out_refuses_autograd():
    g, x = _bwd_args()
    with pytest.raises(RuntimeError, match=r"^elu_backward\(\): functions with out=\.\.\. arguments don't support "
                                           r"automatic differentiation, but one of the arguments requires grad"):
        ta.elu_backward(g.requires_grad_(), 1.0, 1.0, 1.0, False, x, out=torch.empty_like(g))
    with torch.no_grad():
        ta.elu_backward(g, 1.0, 1.0, 1.0, False, x, out=torch.empty_like(g))


@pytest.mark.parametrize("is_result", [False, True])
def test_opcheck_out_overload(is_result):
    """opcheck of the out= overload, including a transposed out."""
    g, x = _bwd_args(torch.float64)
    for out in (torch.empty_like(g), torch.empty(8, 6, dtype=torch.float64).t()):
        torch.library.opcheck(ops.elu_backward.grad_input, (g, 1.3, 1.1, 0.7, is_result, x.abs()),
                              {"grad_input": out})


def test_out_empty():
    g = torch.empty(0, 3)
    out = torch.empty(0, 3)
    assert ta.elu_backward(g, 1.0, 1.0, 1.0, True, g, out=out) is out


# ---------------------------------------------------------------------------
# The Python API's own rules (the operator's contract is tested generically)


@pytest.mark.parametrize("call,arg", [
    (lambda t: ta.elu(None), "input"),
    (lambda t: ta.elu(t, None), "alpha"),
    (lambda t: ta.elu(t, scale=None), "scale"),
    (lambda t: ta.selu(None), "input"),
    (lambda t: ta.celu(None), "input"),
    (lambda t: ta.celu(t, None), "alpha"),
    (lambda t: ta.elu_backward(None, 1, 1, 1, False, t), "grad_output"),
    (lambda t: ta.elu_backward(t, None, 1, 1, False, t), "alpha"),
    (lambda t: ta.elu_backward(t, 1, None, 1, False, t), "scale"),
    (lambda t: ta.elu_backward(t, 1, 1, None, False, t), "input_scale"),
    (lambda t: ta.elu_backward(t, 1, 1, 1, None, t), "is_result"),
    (lambda t: ta.elu_backward(t, 1, 1, 1, False, None), "self_or_result"),
])
def test_none_is_161001(call, arg):
    with pytest.raises(TypeError, match=rf"^\[torch_aclnn 161001\] \w+: {arg} is required, got None"):
        call(torch.randn(3))


@pytest.mark.parametrize("fn,twin", [(ta.elu, torch.nn.functional.elu), (ta.selu, torch.nn.functional.selu),
                                     (ta.celu, torch.nn.functional.celu)])
def test_inplace_like_torch(fn, twin):
    x = torch.randn(4, 5, dtype=torch.float64)
    a, b = x.clone(), x.clone()
    assert fn(a, inplace=True) is a and twin(b, inplace=True) is b
    assert a._version == b._version == 1
    torch.testing.assert_close(a, b)


def test_celu_alpha_zero():
    with pytest.raises(ValueError, match=r"^\[torch_aclnn 161002\] celu: alpha must not be 0"):
        ta.celu(torch.randn(3), 0.0)


def test_celu_non_real_alpha_is_a_celu_error():
    with pytest.raises(TypeError, match=r"^\[torch_aclnn 161002\] celu: alpha must be a real number"):
        ta.celu(torch.randn(3), 1j)


def test_scalar_kinds():
    """Python int and float scalars are accepted and mean the same value. A
    finite value beyond float32's range is refused for tensors computed in
    float32 (as aten refuses to convert it); float64 tensors take it, and
    +-inf is a value like any other."""
    x = torch.randn(64)
    assert torch.equal(ta.elu(x, 2, scale=3, input_scale=1), ta.elu(x, 2.0, scale=3.0, input_scale=1.0))
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] elu: alpha must fit in float32"):
            ta.elu(torch.tensor([-1.0, 0.0], dtype=dtype), 1e300)
        with pytest.raises(ValueError, match=r"elu_backward: input_scale must fit in float32"):
            ta.elu_backward(torch.ones(2, dtype=dtype), 1.0, 1.0, -1e39, False, torch.zeros(2, dtype=dtype))
    got = ta.elu(torch.tensor([-1.0, 0.0], dtype=torch.float64), 1e300)
    assert torch.equal(got, torch.tensor([1e300 * math.expm1(-1.0), 0.0], dtype=torch.float64))
    assert torch.isinf(ta.elu(torch.tensor([-1.0]), float("inf"))).all()


# ---------------------------------------------------------------------------
# torch.compile


def test_compiled_training_step():
    """A small model using elu, selu and celu: compile(fullgraph, dynamic) of
    the forward and loss, then backward through AOTAutograd's compiled
    backward, gives eager's loss and gradients, over new sizes and alphas."""

    def make():
        torch.manual_seed(1)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 16), torch.nn.Linear(16, 4))

    def loss_fn(model, x, alpha):
        h = ta.elu(model[0](x), alpha)
        h = ta.celu(ta.selu(model[1](h)), 0.5)
        return model[2](h).pow(2).mean()

    assert_compiled_steps(make, loss_fn, ((torch.randn(batch, 8), alpha) for batch, alpha in ((5, 0.7), (9, 1.3))))


def test_compiled_double_backward():
    def f(x, g):
        (d,) = torch.autograd.grad(ta.elu(x, 0.8).sum(), x, create_graph=True)
        return ta.elu_backward(g, 0.8, 1.0, 1.0, False, x) * d

    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    g = torch.randn(4, 6, dtype=torch.float64)
    torch.testing.assert_close(torch.compile(f, backend="aot_eager", dynamic=True)(x, g), f(x, g))


@pytest.mark.parametrize("shape", [(3,), (0, 4), (2, 3, 4, 5, 6, 7, 2, 2)])
def test_meta_shapes(shape):
    x = torch.empty(shape, device="meta")
    assert ta.elu(x).shape == shape
    assert ta.elu_backward(x, 1, 1, 1, True, x).shape == shape
