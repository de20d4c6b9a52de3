"""Forward-mode AD and torch.func on every operator (docs/spec.md "Edge rules":
forward-mode AD): float64 gradcheck with forward and backward AD, batched
gradients (vmap over the backward and the jvp) and gradgradcheck (reverse
over reverse, forward over reverse) on the OpInfo samples, non-contiguous and
channels_last_3d included; torch.func.jvp and torch.autograd.forward_ad
against aten and finite differences; torch.func.grad / vjp / jacrev / jacfwd
/ hessian and vmap of grad against torch.autograd; vmap against the operator
called once per batch element (bitwise); the out= overloads under the
transforms; and the C++ Autograd kernel entering Python only where a gradient
or a tangent is needed."""

import pytest
import torch
import torch.autograd.forward_ad as fwAD

import torch_aclnn  # noqa: F401
from torch_aclnn.testing import OPS, first

from test_common import _python_calls  # (a helper: which Python functions a call enters)

ops = torch.ops.torch_aclnn
F64 = torch.float64
FLOAT_OPS = [name for name in OPS if F64 in OPS[name].dtypes]


def _grad_inputs(info, sample):
    return [sample.args[i] for i in info.grad_argnums if isinstance(sample.args[i], torch.Tensor)]


def _call_with(fn, info, sample, tensors):
    """fn's differentiable result (the first of several) with the sample's
    differentiable arguments replaced by `tensors`."""
    args = list(sample.args)
    for i, t in zip(info.grad_argnums, tensors):
        args[i] = t
    return first(fn(*args, **sample.kwargs))


def _samples(name, requires_grad=True):
    info = OPS[name]
    for s in info.samples("cpu", F64, requires_grad):
        inputs = _grad_inputs(info, s)
        if inputs and all(t.numel() > 0 for t in inputs):
            yield info, s, inputs


# ---------------------------------------------------------------------------
# gradcheck / gradgradcheck: forward and reverse mode against finite differences


def _check_samples(name, check):
    n = 0
    for info, s, inputs in _samples(name):
        assert check(lambda *ts: _call_with(info.op, info, s, ts), inputs), s
        n += 1
    assert n > 0


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_gradcheck_forward_and_backward_ad(name):
    _check_samples(name, lambda fn, inputs: torch.autograd.gradcheck(
        fn, inputs, check_forward_ad=True, check_backward_ad=True, check_batched_grad=True,
        check_batched_forward_grad=True, fast_mode=True))


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_gradgradcheck_forward_over_reverse(name):
    _check_samples(name, lambda fn, inputs: torch.autograd.gradgradcheck(
        fn, inputs, check_fwd_over_rev=True, check_rev_over_rev=True, fast_mode=True))


# ---------------------------------------------------------------------------
# jvp against aten and finite differences


@pytest.mark.parametrize("name", [n for n in FLOAT_OPS if OPS[n].aten is not None])
def test_jvp_matches_aten(name):
    """torch.func.jvp of the operator equals torch.func.jvp of its aten
    counterpart on the samples where the values agree bitwise, and
    torch.autograd.forward_ad gives the same tangent."""
    n = 0
    for info, s, inputs in _samples(name, requires_grad=False):
        if not s.exact_vs_aten:
            continue
        tangents = tuple(torch.randn_like(t) for t in inputs)
        out, tangent = torch.func.jvp(lambda *ts: _call_with(info.op, info, s, ts), tuple(inputs), tangents)
        ref_out, ref_tangent = torch.func.jvp(lambda *ts: _call_with(info.aten, info, s, ts), tuple(inputs), tangents)
        torch.testing.assert_close(out, ref_out, msg=lambda m: f"{s}: {m}")
        torch.testing.assert_close(tangent, ref_tangent, msg=lambda m: f"{s}: {m}")
        assert tangent.abs().sum() > 0, s  # never a silent zero tangent
        with fwAD.dual_level():
            duals = [fwAD.make_dual(t, tt) for t, tt in zip(inputs, tangents)]
            dual_out = fwAD.unpack_dual(_call_with(info.op, info, s, duals))
        assert torch.equal(dual_out.primal, out) and torch.equal(dual_out.tangent, tangent), s
        n += 1
    assert n > 0


def test_max_unpool3d_backward_tangent_of_self_is_zero():
    """self lends only its shape and dtype: a tangent on it alone gives a zero
    tangent (a defined one), and with grad_output's tangent the same as
    without."""
    g = torch.randn(1, 2, 2, 2, 2, dtype=F64)
    s = torch.randn(1, 2, 1, 2, 2, dtype=F64)
    idx = torch.tensor([0, 3, 5, 6, 1, 2, 4, 7]).view(1, 2, 1, 2, 2)
    fn = lambda g, s: ops.max_unpool3d_backward(g, s, idx, [2, 2, 2], [2, 2, 2], [0, 0, 0])  # noqa: E731
    _, tangent = torch.func.jvp(lambda s: fn(g, s), (s,), (torch.randn_like(s),))
    assert torch.equal(tangent, torch.zeros_like(s))
    tg = torch.randn_like(g)
    _, both = torch.func.jvp(fn, (g, s), (tg, torch.randn_like(s)))
    assert torch.equal(both, fn(tg, s))


def test_elu_jvp_reproducer():
    """torch.func.jvp of elu returned zero tangents: the C++ kernel saw no
    input requiring grad and never entered the formula."""
    x = torch.randn(7, dtype=F64)
    t = torch.randn(7, dtype=F64)
    out, tangent = torch.func.jvp(lambda x: torch.ops.torch_aclnn.elu(x, 1, 1, 1), (x,), (t,))
    ref_out, ref_tangent = torch.func.jvp(lambda x: torch.nn.functional.elu(x), (x,), (t,))
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(tangent, ref_tangent)
    assert tangent.abs().sum() > 0


def _small_cases():
    """(id, fn of the differentiable tensors, the tensors) small enough for full Jacobians
    and Hessians; every operator, both is_result modes, every reduction, beta == 0,
    broadcasting, 4-D max_unpool."""
    g = torch.Generator().manual_seed(3)

    def r(*shape, scale=1.0):
        return (torch.rand(shape, generator=g, dtype=F64) * 2 - 1) * scale

    # unique within each (n, c) plane (of 8 outputs), as max_pool3d produces
    idx5 = torch.stack([torch.randperm(8, generator=g)[:4] for _ in range(2)]).view(1, 2, 1, 2, 2)
    idx4 = torch.stack([torch.randperm(8, generator=g)[:4] for _ in range(2)]).view(2, 1, 2, 2)
    unpool = ([2, 2, 2], [2, 2, 2], [0, 0, 0])
    yield "upsample_nearest3d", lambda x: ops.upsample_nearest3d(x, [3, 3, 4]), (r(1, 2, 2, 2, 3),)
    yield "upsample_nearest3d scales", lambda x: ops.upsample_nearest3d(x, [4, 3, 5], 2.0, 1.5, 1.7), \
        (r(1, 2, 2, 2, 3),)
    yield "upsample_nearest_exact3d", lambda x: ops.upsample_nearest_exact3d(x, [3, 3, 4]), (r(1, 2, 2, 2, 3),)
    yield "upsample_nearest3d_backward", \
        lambda g_: ops.upsample_nearest3d_backward(g_, [3, 3, 4], [1, 2, 2, 2, 3]), (r(1, 2, 3, 3, 4),)
    yield "upsample_nearest_exact3d_backward", \
        lambda g_: ops.upsample_nearest_exact3d_backward(g_, [3, 3, 4], [1, 2, 2, 2, 3]), (r(1, 2, 3, 3, 4),)
    yield "elu", lambda x: ops.elu(x, 1.3, 1.1, 0.7), (r(9, scale=3),)
    yield "elu_backward is_result=False", lambda g_, x: ops.elu_backward(g_, 1.3, 1.1, 0.7, False, x), \
        (r(9), r(9, scale=3))
    yield "elu_backward is_result=True", lambda g_, y: ops.elu_backward(g_, 1.3, 1.1, 0.7, True, y), \
        (r(9), r(9, scale=3).clamp(min=-1.3 * 1.1 + 0.05))
    for reduction in (0, 1, 2):
        for beta in (1.0, 0.0):
            yield f"smooth_l1_loss r={reduction} beta={beta}", \
                lambda x, t, reduction=reduction, beta=beta: ops.smooth_l1_loss(x, t, reduction, beta), \
                (r(3, 4, scale=2), r(4, scale=2))
        go = r(3, 4) if reduction == 0 else r()
        yield f"smooth_l1_loss_backward r={reduction}", \
            lambda go, x, t, reduction=reduction: ops.smooth_l1_loss_backward(go, x, t, reduction, 1.0), \
            (go, r(3, 4, scale=2), r(4, scale=2))
    yield "max_unpool3d", lambda x: ops.max_unpool3d(x, idx5, *unpool), (r(1, 2, 1, 2, 2),)
    yield "max_unpool3d 4-D", lambda x: ops.max_unpool3d(x, idx4, *unpool), (r(2, 1, 2, 2),)
    self_ = r(1, 2, 1, 2, 2)  # lends only its shape and dtype
    yield "max_unpool3d_backward", \
        lambda g_: ops.max_unpool3d_backward(g_, self_, idx5, *unpool), (r(1, 2, 2, 2, 2),)


SMALL = list(_small_cases())
SMALL_IDS = [c[0] for c in SMALL]


@pytest.mark.parametrize("case", SMALL, ids=SMALL_IDS)
def test_jvp_matches_finite_differences(case):
    _, fn, inputs = case
    tangents = tuple(torch.randn_like(t) for t in inputs)
    _, tangent = torch.func.jvp(fn, inputs, tangents)
    eps = 1e-6
    plus = fn(*(t + eps * tt for t, tt in zip(inputs, tangents)))
    minus = fn(*(t - eps * tt for t, tt in zip(inputs, tangents)))
    torch.testing.assert_close(tangent, (plus - minus) / (2 * eps), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("case", SMALL, ids=SMALL_IDS)
def test_func_transforms_match_autograd(case):
    """torch.func.grad, vjp, jacrev, jacfwd and hessian equal what
    torch.autograd computes from the same formulas."""
    _, fn, inputs = case
    argnums = tuple(range(len(inputs)))
    out = fn(*inputs)
    w = torch.randn_like(out)
    scalar = lambda *ts: (fn(*ts) * w).sum()  # noqa: E731

    leaves = [t.clone().requires_grad_() for t in inputs]
    expected = torch.autograd.grad(scalar(*leaves), leaves)
    got = torch.func.grad(scalar, argnums=argnums)(*inputs)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b)

    _, vjp_fn = torch.func.vjp(fn, *inputs)
    for a, b in zip(vjp_fn(w), expected):
        torch.testing.assert_close(a, b)

    jac = torch.autograd.functional.jacobian(fn, inputs)
    jac_fwd = torch.autograd.functional.jacobian(fn, inputs, strategy="forward-mode", vectorize=True)
    for transform in (torch.func.jacrev, torch.func.jacfwd):
        got = transform(fn, argnums=argnums)(*inputs)
        for a, b in zip(got, jac):
            torch.testing.assert_close(a, b)
    for a, b in zip(jac_fwd, jac):
        torch.testing.assert_close(a, b)

    hess = torch.autograd.functional.hessian(scalar, inputs)
    got = torch.func.hessian(scalar, argnums=argnums)(*inputs)
    for row_got, row in zip(got, hess):
        for a, b in zip(row_got, row):
            torch.testing.assert_close(a, b)


@pytest.mark.parametrize("case", SMALL, ids=SMALL_IDS)
def test_per_sample_grads(case):
    """vmap(grad): per-sample gradients of a batch equal a loop of autograd calls."""
    _, fn, inputs = case
    batch = [tuple(t + 0.25 * k for t in inputs) for k in range(3)]
    stacked = tuple(torch.stack(ts) for ts in zip(*batch))
    w = torch.randn_like(fn(*inputs))
    scalar = lambda *ts: (fn(*ts) * w).sum()  # noqa: E731
    got = torch.func.vmap(torch.func.grad(scalar, argnums=tuple(range(len(inputs)))))(*stacked)
    for k, ts in enumerate(batch):
        leaves = [t.clone().requires_grad_() for t in ts]
        expected = torch.autograd.grad(scalar(*leaves), leaves)
        for a, b in zip(got, expected):
            torch.testing.assert_close(a[k], b)


# ---------------------------------------------------------------------------
# vmap rules: exact, against the operator once per batch element


def _vmap_cases():
    g = torch.Generator().manual_seed(5)

    def r(*shape, dtype=F64):
        return (torch.rand(shape, generator=g, dtype=F64) * 6 - 3).to(dtype)

    B = 3
    unpool = ([2, 2, 2], [2, 2, 2], [0, 0, 0])

    def idx(*lead):
        return torch.stack([torch.randperm(8, generator=g)[:4] for _ in range(max(1, int(torch.tensor(lead).prod())))]
                           ).view(*lead, 1, 2, 2)

    for name in ("upsample_nearest3d", "upsample_nearest_exact3d"):
        op, bop = getattr(ops, name), getattr(ops, name + "_backward")
        yield f"{name} bdim 0", lambda x, op=op: op(x, [3, 4, 5]), (r(B, 2, 2, 2, 3, 4),), (0,)
        # memory order N, D, H, W, batch, C: each batch element channels-last (strided)
        yield f"{name} bdim 2, channels last", lambda x, op=op: op(x, [3, 6, 5], 1.5, 2.0, 1.25), \
            (r(2, 2, 3, 4, B, 2).permute(0, 5, 4, 1, 2, 3),), (2,)
        yield f"{name}_backward bdim 0", lambda go, bop=bop: bop(go, [3, 4, 5], [2, 2, 2, 3, 4]), \
            (r(B, 2, 2, 3, 4, 5),), (0,)
        yield f"{name}_backward bdim -1", lambda go, bop=bop: bop(go, [3, 4, 5], [2, 2, 2, 3, 4]), \
            (r(2, 2, 3, 4, 5, B),), (-1,)
    yield "elu bdim 0", lambda x: ops.elu(x, 1.3, 1.1, 0.7), (r(B, 4, 5),), (0,)
    yield "elu bdim 1 sliced", lambda x: ops.elu(x, 1.3, 1.1, 0.7), (r(4, B, 10)[:, :, ::2],), (1,)
    yield "elu 0-dim", lambda x: ops.elu(x), (r(B),), (0,)
    yield "elu 8-D", lambda x: ops.elu(x, 0.5), (r(2, 1, 2, 1, 2, 1, 2, 3, B),), (-1,)
    for is_result in (False, True):
        yield f"elu_backward is_result={is_result} x unbatched", \
            lambda go, x, is_result=is_result: ops.elu_backward(go, 1.3, 1.1, 0.7, is_result, x), \
            (r(B, 4, 5), r(4, 5)), (0, None)
        yield f"elu_backward is_result={is_result} bdims differ", \
            lambda go, x, is_result=is_result: ops.elu_backward(go, 1.3, 1.1, 0.7, is_result, x), \
            (r(B, 4, 5), r(4, 5, B)), (0, 2)
    yield "elu_backward 8-D", lambda go, x: ops.elu_backward(go, 1.0, 1.0, 1.0, False, x), \
        (r(B, 2, 1, 2, 1, 2, 1, 2, 3), r(2, 1, 2, 1, 2, 1, 2, 3)), (0, None)
    for reduction in (0, 1, 2):
        yield f"smooth_l1_loss r={reduction} self batched, lower rank", \
            lambda x, t, reduction=reduction: ops.smooth_l1_loss(x, t, reduction, 1.0), \
            (r(B, 4), r(3, 4)), (0, None)
        yield f"smooth_l1_loss r={reduction} both batched", \
            lambda x, t, reduction=reduction: ops.smooth_l1_loss(x, t, reduction, 0.5), \
            (r(3, B, 4), r(B, 1, 4)), (1, 0)
        yield f"smooth_l1_loss r={reduction} mixed dtypes, 0-dim", \
            lambda x, t, reduction=reduction: ops.smooth_l1_loss(x, t, reduction, 1.0), \
            (r(B), r(5, dtype=torch.float32)), (0, None)
        go_shape = (B, 3, 4) if reduction == 0 else (B,)
        yield f"smooth_l1_loss_backward r={reduction}", \
            lambda go, x, t, reduction=reduction: ops.smooth_l1_loss_backward(go, x, t, reduction, 1.0), \
            (r(*go_shape), r(B, 3, 1), r(4)), (0, 0, None)
        yield f"smooth_l1_loss_backward r={reduction} target only", \
            lambda go, x, t, reduction=reduction: ops.smooth_l1_loss_backward(go, x, t, reduction, 1.0), \
            (r(*go_shape[1:]), r(3, 1), r(B, 4)), (None, None, 0)
    yield "smooth_l1_loss default arguments", lambda x, t: ops.smooth_l1_loss(x, t), (r(B, 4), r(4)), (0, None)
    yield "max_unpool3d both batched", lambda x, i: ops.max_unpool3d(x, i, *unpool), \
        (r(B, 2, 3, 1, 2, 2), idx(B, 2, 3)), (0, 0)
    yield "max_unpool3d indices unbatched, 4-D", lambda x, i: ops.max_unpool3d(x, i, *unpool), \
        (r(2, B, 1, 2, 2), idx(2)), (1, None)
    yield "max_unpool3d self unbatched", lambda x, i: ops.max_unpool3d(x, i, *unpool), \
        (r(2, 3, 1, 2, 2), idx(B, 2, 3)), (None, 0)
    yield "max_unpool3d_backward grad_output batched", \
        lambda go, s, i: ops.max_unpool3d_backward(go, s, i, *unpool), \
        (r(B, 2, 3, 2, 2, 2), r(2, 3, 1, 2, 2), idx(2, 3)), (0, None, None)
    yield "max_unpool3d_backward all batched", \
        lambda go, s, i: ops.max_unpool3d_backward(go, s, i, *unpool), \
        (r(2, 3, 2, 2, 2, B), r(B, 2, 3, 1, 2, 2), idx(B, 2, 3)), (-1, 0, 0)
    pool = ([2, 2, 1], [2, 1, 2], [1, 0, 0], [1], False)
    x, x1 = r(B, 2, 3, 4, 3, 4), r(2, 3, 4, 3, 4)
    i, i1 = torch.ops.aten.max_pool3d_with_indices(x.flatten(0, 1), *pool)[1].unflatten(0, (B, 2)), \
        torch.ops.aten.max_pool3d_with_indices(x1, *pool)[1]
    yield "max_pool3d_with_indices values", lambda s: ops.max_pool3d_with_indices(s, *pool)[0], (x,), (0,)
    yield "max_pool3d_with_indices indices, 4-D, bdim 1", lambda s: ops.max_pool3d_with_indices(s, *pool)[1], \
        (x[:, 0].movedim(0, 1),), (1,)
    yield "max_pool3d_with_indices_backward grad_output batched", \
        lambda go, s, ix: ops.max_pool3d_with_indices_backward(go, s, ix, *pool), \
        (r(B, *i1.shape), x1.contiguous(memory_format=torch.channels_last_3d), i1), (0, None, None)
    yield "max_pool3d_with_indices_backward all batched", \
        lambda go, s, ix: ops.max_pool3d_with_indices_backward(go, s, ix, *pool), \
        (r(*i.shape), x, i), (0, 0, 0)
    yield "adaptive_avg_pool3d 5-D", lambda s: ops.adaptive_avg_pool3d(s, [2, 3, 2]), (r(B, 2, 3, 4, 3, 4),), (0,)
    yield "adaptive_avg_pool3d 4-D, bdim 1", lambda s: ops.adaptive_avg_pool3d(s, [2, 2, 2]), (r(3, B, 4, 3, 4),), (1,)
    yield "adaptive_avg_pool3d_backward grad_output batched", \
        lambda go, s: ops.adaptive_avg_pool3d_backward(go, s), \
        (r(B, 2, 3, 2, 3, 2), x1.contiguous(memory_format=torch.channels_last_3d)), (0, None)
    yield "adaptive_avg_pool3d_backward all batched", lambda go, s: ops.adaptive_avg_pool3d_backward(go, s), \
        (r(2, 3, 2, 3, B, 2), x), (-2, 0)


VMAP = list(_vmap_cases())


@pytest.mark.parametrize("case", VMAP, ids=[c[0] for c in VMAP])
def test_vmap_equals_loop(case):
    _, fn, args, in_dims = case
    got = torch.func.vmap(fn, in_dims=in_dims)(*args)
    size = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    expected = torch.stack([fn(*(a.select(d, b) if d is not None else a for a, d in zip(args, in_dims)))
                            for b in range(size)])
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert torch.equal(got, expected)


@pytest.mark.parametrize("case", [c for c in VMAP if c[0] in (
    "elu bdim 0", "smooth_l1_loss r=1 both batched", "max_unpool3d both batched", "upsample_nearest3d bdim 0")],
    ids=lambda c: c[0])
def test_vmap_empty_batch(case):
    """A batch of 0: the result's shape and dtype, as the loop over a batch of 1 gives them."""
    _, fn, args, in_dims = case
    empty = [a.narrow(d, 0, 0) if d is not None else a for a, d in zip(args, in_dims)]
    one = [a.narrow(d, 0, 1) if d is not None else a for a, d in zip(args, in_dims)]
    got = torch.func.vmap(fn, in_dims=in_dims)(*empty)
    like = torch.func.vmap(fn, in_dims=in_dims)(*one)
    assert got.shape == (0, *like.shape[1:]) and got.dtype == like.dtype


def test_vmap_contract_error_is_the_unbatched_one():
    """A call outside the contract under vmap raises what the unbatched call raises."""
    x = torch.randn(3, 2, 2, 2, 2)  # 4-D per batch element
    with pytest.raises(ValueError) as unbatched:
        ops.upsample_nearest3d(x[0], [4, 4, 4])
    with pytest.raises(ValueError) as batched:
        torch.func.vmap(lambda x: ops.upsample_nearest3d(x, [4, 4, 4]))(x)
    assert str(batched.value) == str(unbatched.value)
    assert str(batched.value).startswith("[torch_aclnn 161002] upsample_nearest3d: ")


# ---------------------------------------------------------------------------
# out= overloads under the transforms: aten's behaviour


def _elu_out(g, x, out):
    ops.elu_backward.grad_input(g, 1.0, 1.0, 1.0, False, x, grad_input=out)
    return out


def _aten_elu_out(g, x, out):
    torch.ops.aten.elu_backward.grad_input(g, 1.0, 1.0, 1.0, False, x, grad_input=out)
    return out


@pytest.mark.parametrize("fn", [_elu_out, _aten_elu_out], ids=["torch_aclnn", "aten"])
def test_out_overload_under_transforms(fn):
    g, x = torch.randn(4, dtype=F64), torch.randn(4, dtype=F64)
    name = "torch_aclnn::elu_backward.grad_input" if fn is _elu_out else "aten::elu_backward.grad_input"
    with pytest.raises(RuntimeError, match=r"^elu_backward\(\): functions with out=\.\.\. arguments don't support"):
        torch.func.grad(lambda g: fn(g, x, torch.empty(4, dtype=F64)).sum())(g)
    with pytest.raises(NotImplementedError, match=r"^Trying to use forward AD with elu_backward_out"):
        torch.func.jvp(lambda g: fn(g, x, torch.empty(4, dtype=F64)), (g,), (g,))
    with pytest.raises(RuntimeError, match=rf"^Batching rule not implemented for {name}; the fallback path "
                                           r"doesn't work on out= or view ops"):
        torch.func.vmap(lambda g, o: fn(g, x, o))(torch.randn(2, 4, dtype=F64), torch.empty(2, 4, dtype=F64))
    # Writing a tensor created inside the transform, from inputs it does not differentiate: allowed.
    got = torch.func.grad(lambda x_: (x_ * fn(g, x, torch.empty(4, dtype=F64))).sum())(x)
    torch.testing.assert_close(got, ops.elu_backward(g, 1.0, 1.0, 1.0, False, x))


# ---------------------------------------------------------------------------
# The C++ Autograd kernel: Python only where a gradient or a tangent is needed


def _entered_formula(fn):
    return any(f.endswith("_autograd.py") and name == "setup_context" for f, name in _python_calls(fn))


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_formula_entered_for_a_tangent_only(name):
    info, s, inputs = next(_samples(name, requires_grad=False))
    call = lambda ts: _call_with(info.op, info, s, ts)  # noqa: E731
    with fwAD.dual_level():
        assert not _entered_formula(lambda: call(inputs))  # no tangent, no gradient: straight to the kernel
        duals = [fwAD.make_dual(t, torch.ones_like(t)) for t in inputs]
        with torch.no_grad():  # forward AD does not depend on grad mode
            assert _entered_formula(lambda: call(duals))
            out = call(duals)
        assert fwAD.unpack_dual(out).tangent is not None


# ---------------------------------------------------------------------------
# Every broadcast pattern of the operators that broadcast (smooth_l1_loss: self,
# target; smooth_l1_loss_backward: grad_output, self, target), every reduction


_PATTERNS = {"full": (2, 3), "row": (3,), "column": (2, 1), "0-dim": ()}


def _broadcast_cases():
    g = torch.Generator().manual_seed(11)

    def r(shape, scale=1.0):  # away from |d| == beta, where the derivative jumps
        return ((torch.rand(shape, generator=g, dtype=F64) * 2 - 1) * scale).requires_grad_()

    for reduction in (0, 1, 2):
        for ps in _PATTERNS:
            for pt in _PATTERNS:
                yield f"smooth_l1_loss r={reduction} self {ps} target {pt}", \
                    lambda x, t, reduction=reduction: ops.smooth_l1_loss(x, t, reduction, 1.0), \
                    (r(_PATTERNS[ps], 2), r(_PATTERNS[pt], 2))
                for pg in _PATTERNS:
                    yield f"smooth_l1_loss_backward r={reduction} grad_output {pg} self {ps} target {pt}", \
                        lambda go, x, t, reduction=reduction: ops.smooth_l1_loss_backward(go, x, t, reduction, 1.0), \
                        (r(_PATTERNS[pg]), r(_PATTERNS[ps], 2), r(_PATTERNS[pt], 2))


BROADCAST = list(_broadcast_cases())


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_broadcast_patterns_gradcheck(reduction):
    """Forward and reverse mode, and both second-order checks, against finite
    differences on every broadcast pattern (each tensor full, a row, a column
    or 0-dim)."""
    cases = [c for c in BROADCAST if f" r={reduction} " in c[0]]
    assert len(cases) == 16 + 64
    for name, fn, inputs in cases:
        assert torch.autograd.gradcheck(fn, inputs, check_forward_ad=True, check_backward_ad=True,
                                        fast_mode=True), name
        assert torch.autograd.gradgradcheck(fn, inputs, check_fwd_over_rev=True, check_rev_over_rev=True,
                                            fast_mode=True), name


def test_smooth_l1_backward_mean_jvp_when_grad_output_broadcasts_further():
    """'mean' divides by numel(broadcast(self, target)), also in the tangent
    when grad_output adds dimensions of its own (it was divided by the count
    of all three)."""
    go = torch.ones(2, 3, dtype=F64)
    a = torch.tensor([.3, -.2, .1], dtype=F64)
    b = torch.zeros(3, dtype=F64)
    f = lambda a: ops.smooth_l1_loss_backward(go, a, b, 1, 1.0)  # noqa: E731
    _, tangent = torch.func.jvp(f, (a,), (torch.ones(3, dtype=F64),))
    torch.testing.assert_close(tangent, torch.full((2, 3), 1 / 3, dtype=F64))
    jac = torch.func.jacrev(f)(a)
    torch.testing.assert_close(tangent, jac.sum(-1))
