"""Property-based tests (hypothesis): every operator, forward and backward,
against the float64 spec references (torch_aclnn/testing/<family>.py) over random
shapes (size-1 and empty axes included), memory layouts (permuted, sliced,
expanded where the op reads through strides, channels_last_3d), dtypes,
scales (given / absent / mixed, non-integer, down-scaling), reductions,
betas (0 included), alphas (negative included) and index layouts (unique
indices from a random permutation; duplicates for the forward).

Tolerances: ``torch_aclnn.testing.tolerance(dtype)`` for every comparison
(exact for integer dtypes), stated once in ``_close``.

Profiles (env TORCH_ACLNN_HYPOTHESIS_PROFILE, default "ci"):
  ci    a fixed, derandomized set of examples, no example database, so CI is
        reproducible; sized so this file runs in well under a minute.
  fuzz  many more random examples (``make fuzz``).
"""
import math
import os

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from torch_aclnn.testing import FLOATING, tolerance
from torch_aclnn.testing import adaptive_avg_pool as AA
from torch_aclnn.testing import avg_pool as AP
from torch_aclnn.testing import elu as E
from torch_aclnn.testing import leaky_relu as LR
from torch_aclnn.testing import max_pool as MP
from torch_aclnn.testing import max_unpool as MU
from torch_aclnn.testing import smooth_l1 as S
from torch_aclnn.testing import upsample as U
from torch_aclnn.testing import upsample_trilinear as UT
from torch_aclnn.testing.max_unpool import DTYPES as UNPOOL_DTYPES

_COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), print_blob=True)
settings.register_profile("ci", max_examples=300, derandomize=True, database=None, **_COMMON)
settings.register_profile("fuzz", max_examples=2000, **_COMMON)
settings.load_profile(os.environ.get("TORCH_ACLNN_HYPOTHESIS_PROFILE", "ci"))

ops = torch.ops.torch_aclnn


# ---------------------------------------------------------------------------
# Helpers

def _close(out, ref, what="", magnitude=None):
    """The one comparison: float64 reference, the result dtype's tolerance.

    Where the kernel sums several terms (upsample backward, the reductions),
    `magnitude` is the reference of the same sum over the terms' absolute
    values, and rtol applies to it (the error of a float32 accumulation is
    relative to the sum of |terms|, not to a sum that cancels)."""
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    tol = tolerance(out.dtype)
    if out.dtype.is_floating_point:  # a value beyond the dtype's range is +-inf there
        rounded = ref.to(out.dtype).double()
        ref = torch.where(rounded.isinf() & ref.isfinite(), rounded, ref.double())
    if magnitude is None:
        torch.testing.assert_close(out.detach().double(), ref.double(), check_dtype=False, equal_nan=True,
                                   msg=lambda m: f"{what}: {m}", **tol)
        return
    o, r = out.detach().double(), ref.double()
    bad = ~((o - r).abs() <= tol["atol"] + tol["rtol"] * magnitude.double().abs()) & ~(o.isnan() & r.isnan())
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {o.numel()} mismatched; first at "
                           f"{bad.nonzero()[0].tolist()}: got {o[bad][0].item()}, reference {r[bad][0].item()}")


def _values(shape, dtype, seed, low=-4.0, high=4.0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.rand(shape, dtype=torch.float64, generator=g) * (high - low) + low).to(dtype)
    return torch.randint(int(low), int(high), shape, generator=g).to(dtype)


LAYOUTS = ("contiguous", "permuted", "sliced", "channels_last_3d", "expanded")


def _arrange(data, t, layout, expand_axes=None):
    """t's values in `layout` (a random axis permutation in memory, a strided
    slice along a random axis, channels_last_3d, or stride 0 along an axis:
    that one changes the values to t's first slice along it, so callers pass
    the arranged tensor to the reference too). Falls back to contiguous where
    the rank cannot express the layout."""
    t = t.detach()
    if layout == "permuted" and t.dim() >= 2:
        perm = data.draw(st.permutations(range(t.dim())), label="memory order")
        inv = [perm.index(i) for i in range(t.dim())]
        return t.permute(perm).contiguous().permute(inv)
    if layout == "sliced" and t.dim() >= 1:
        ax = data.draw(st.integers(0, t.dim() - 1), label="sliced axis")
        step = data.draw(st.integers(2, 3), label="slice step")
        shape = list(t.shape)
        shape[ax] *= step
        base = torch.zeros(shape, dtype=t.dtype)
        view = base[(slice(None),) * ax + (slice(None, None, step),)]
        view.copy_(t)
        return view
    if layout == "channels_last_3d" and t.dim() == 5:
        return t.contiguous(memory_format=torch.channels_last_3d)
    if layout == "expanded" and t.dim() >= 1:
        axes = [a for a in (expand_axes if expand_axes is not None else range(t.dim())) if t.shape[a] > 0]
        if axes:
            ax = data.draw(st.sampled_from(axes), label="expanded axis")
            return t.narrow(ax, 0, 1).expand(t.shape)
    return t.contiguous()


def _sum_to(t, shape):
    """Reduce a broadcast gradient back to `shape` (autograd's rule)."""
    lead = t.dim() - len(shape)
    t = t.sum(list(range(lead))) if lead else t
    axes = [i for i, n in enumerate(shape) if n == 1 and t.shape[i] != 1]
    return t.sum(axes, keepdim=True) if axes else t


sizes = st.integers(0, 4)            # an axis that may be empty
pos_sizes = st.integers(1, 5)        # an axis that must be > 0
seeds = st.integers(0, 2 ** 31 - 1)
floats = st.sampled_from(FLOATING)


# ---------------------------------------------------------------------------
# upsample_nearest3d / upsample_nearest_exact3d (docs/spec.md §1, §2)

UPSAMPLE = [("nearest", ops.upsample_nearest3d, ops.upsample_nearest3d_backward),
            ("nearest-exact", ops.upsample_nearest_exact3d, ops.upsample_nearest_exact3d_backward)]


@st.composite
def upsample_sizes(draw):
    """(input_size, output_size, scales): scales absent, all given (output =
    floor(in * s), non-integer and down-scaling factors), or mixed (some None
    or 0.0: all ignored, so the given ones need not be consistent)."""
    n, c = draw(sizes), draw(sizes)
    spatial = [draw(pos_sizes) for _ in range(3)]
    mode = draw(st.sampled_from(["absent", "given", "mixed"]))
    if mode == "given":
        scales, out = [], []
        for i in range(3):
            s = draw(st.one_of(st.sampled_from([0.5, 1.0, 2.0, 3.0]),
                               st.floats(0.3, 3.5, allow_nan=False, allow_infinity=False)))
            o = math.floor(spatial[i] * s)
            assume(o > 0)
            scales.append(s)
            out.append(o)
    else:
        out = [draw(st.integers(1, 8)) for _ in range(3)]
        scales = [None, None, None]
        if mode == "mixed":
            scales = [draw(st.one_of(st.none(), st.just(0.0), st.floats(0.1, 4.0))) for _ in range(3)]
            assume(not all(s is not None and s > 0 for s in scales))
    return [n, c, *spatial], out, scales


@pytest.mark.parametrize("mode,fwd,bwd", UPSAMPLE, ids=["nearest", "exact"])
@given(data=st.data(), sz=upsample_sizes(), dtype=floats, layout=st.sampled_from(LAYOUTS), seed=seeds,
       grad=st.booleans())
def test_upsample_forward(mode, fwd, bwd, data, sz, dtype, layout, seed, grad):
    in_size, out_size, scales = sz
    x = _arrange(data, _values(in_size, dtype, seed), layout)
    x.requires_grad_(grad)
    out = fwd(x, out_size, *scales)
    ref = U.reference_forward(mode, x, out_size, *scales)
    _close(out, ref, "forward")
    assert out.dtype == dtype
    if grad:  # autograd of the forward: the backward's reference
        g = _values(out.shape, dtype, seed + 1)
        out.backward(g)
        _close(x.grad, U.reference_backward(mode, g, out_size, in_size, *scales), "autograd",
               U.reference_backward(mode, g.abs(), out_size, in_size, *scales))


@pytest.mark.parametrize("mode,fwd,bwd", UPSAMPLE, ids=["nearest", "exact"])
@given(data=st.data(), sz=upsample_sizes(), dtype=floats, layout=st.sampled_from(LAYOUTS), seed=seeds,
       use_out=st.booleans())
def test_upsample_backward(mode, fwd, bwd, data, sz, dtype, layout, seed, use_out):
    in_size, out_size, scales = sz
    g = _arrange(data, _values(in_size[:2] + out_size, dtype, seed), layout)
    ref = U.reference_backward(mode, g, out_size, in_size, *scales)
    if use_out:
        res = torch.full(in_size, float("nan"), dtype=dtype)
        bwd.grad_input(g, out_size, in_size, *scales, grad_input=res)
    else:
        res = bwd(g, out_size, in_size, *scales)
    _close(res, ref, "backward", U.reference_backward(mode, g.abs(), out_size, in_size, *scales))
    assert res.dtype == dtype


# ---------------------------------------------------------------------------
# elu / elu_backward (docs/spec.md §3)

shapes = st.lists(sizes, min_size=0, max_size=8).filter(lambda s: math.prod(s) <= 400)
params = st.one_of(st.integers(-3, 3), st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False))
input_scales = st.one_of(st.integers(-2, 2), st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False))


@given(data=st.data(), shape=shapes, dtype=floats, layout=st.sampled_from(LAYOUTS), seed=seeds,
       alpha=params, scale=params, input_scale=input_scales, grad=st.booleans())
def test_elu_forward(data, shape, dtype, layout, seed, alpha, scale, input_scale, grad):
    x = _arrange(data, _values(shape, dtype, seed), layout)
    x.requires_grad_(grad)
    out = ops.elu(x, alpha, scale, input_scale)
    _close(out, E.reference_forward(x, alpha, scale, input_scale), "forward")
    assert out.dtype == dtype
    if grad:
        g = _values(shape, dtype, seed + 1)
        out.backward(g)
        _close(x.grad, E.reference_backward(g, alpha, scale, input_scale, False, x), "autograd")


@given(data=st.data(), shape=shapes, dtype=floats, layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)),
       seed=seeds, alpha=params, scale=params, input_scale=input_scales, is_result=st.booleans(),
       use_out=st.booleans())
def test_elu_backward(data, shape, dtype, layouts, seed, alpha, scale, input_scale, is_result, use_out):
    if is_result:
        alpha = abs(alpha)  # is_result with alpha < 0 is a contract error
    g = _arrange(data, _values(shape, dtype, seed), layouts[0])
    x = _values(shape, dtype, seed + 1)
    if is_result:  # a forward output
        x = E.reference_forward(x, alpha, scale, input_scale).to(dtype)
    x = _arrange(data, x, layouts[1])
    ref = E.reference_backward(g, alpha, scale, input_scale, is_result, x)
    if use_out:
        res = torch.full(shape, float("nan"), dtype=dtype)
        ops.elu_backward.grad_input(g, alpha, scale, input_scale, is_result, x, grad_input=res)
    else:
        res = ops.elu_backward(g, alpha, scale, input_scale, is_result, x)
    magnitude = None
    if is_result:  # input_scale * (y + alpha * scale) cancels as y nears -alpha * scale
        gd, xd = g.double(), x.double()
        magnitude = torch.where(xd > 0, (gd * scale).abs(),
                                (gd * input_scale).abs() * (xd.abs() + abs(alpha * scale)))
    _close(res, ref, "backward", magnitude)


# ---------------------------------------------------------------------------
# smooth_l1_loss / smooth_l1_loss_backward (docs/spec.md §4)

@st.composite
def broadcast_pair(draw):
    """A broadcast shape and two shapes that broadcast to it (leading axes
    dropped, axes set to 1), at most 120 elements."""
    full = draw(st.lists(sizes, min_size=0, max_size=5).filter(lambda s: math.prod(s) <= 120))

    def part():
        drop = draw(st.integers(0, len(full)))
        return [1 if draw(st.integers(0, 3)) == 0 else n for n in full[drop:]]
    return full, part(), part()


betas = st.one_of(st.just(0.0), st.sampled_from([0.5, 1.0, 2.0]), st.floats(0.0, 5.0, allow_nan=False))
reductions = st.sampled_from([0, 1, 2])


@given(data=st.data(), shapes_=broadcast_pair(), dtypes=st.tuples(floats, floats), layouts=st.tuples(
       st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)), seed=seeds, reduction=reductions, beta=betas,
       grad=st.booleans())
def test_smooth_l1_forward(data, shapes_, dtypes, layouts, seed, reduction, beta, grad):
    full, s_shape, t_shape = shapes_
    x = _arrange(data, _values(s_shape, dtypes[0], seed), layouts[0])
    y = _arrange(data, _values(t_shape, dtypes[1], seed + 1), layouts[1])
    x.requires_grad_(grad)
    out = ops.smooth_l1_loss(x, y, reduction, beta)
    assert out.dtype == torch.result_type(x, y)  # torch's promotion (0-dim tensors rank lower)
    # Mixed dtypes: the operands are converted to the promoted dtype first
    # (torch's rule, which the float64 reference takes as given).
    xr, yr = x.detach().to(out.dtype), y.to(out.dtype)
    _close(out, S.reference_forward(xr, yr, reduction, beta), "forward")  # losses are >= 0: no cancellation
    if grad:
        g = _values(out.shape, out.dtype, seed + 2)
        out.backward(g)
        ref = S.reference_backward(g, xr, yr, reduction, beta)
        # computed in out.dtype, then rounded to x's: the coarser one's tolerance
        coarse = max((x.dtype, out.dtype), key=lambda d: tolerance(d)["rtol"])
        # x.grad sums B over the broadcast axes: tolerance relative to the sum of |B|
        _close(x.grad.to(coarse), _sum_to(ref, s_shape), "autograd", _sum_to(ref.abs(), s_shape))


@given(data=st.data(), shapes_=broadcast_pair(), dtype=floats, layouts=st.tuples(
       st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)), seed=seeds,
       reduction=reductions, beta=betas, use_out=st.booleans())
def test_smooth_l1_backward(data, shapes_, dtype, layouts, seed, reduction, beta, use_out):
    full, s_shape, t_shape = shapes_
    g_shape = full if reduction == 0 else []
    g = _arrange(data, _values(g_shape, dtype, seed), layouts[0])
    x = _arrange(data, _values(s_shape, dtype, seed + 1), layouts[1])
    y = _arrange(data, _values(t_shape, dtype, seed + 2), layouts[2])
    # grad_input's shape is broadcast(grad_output, self, target)
    out_shape = torch.broadcast_shapes(g.shape, x.shape, y.shape)
    ref = S.reference_backward(g, x.expand(out_shape), y.expand(out_shape), reduction, beta) \
        if reduction != 1 else S.reference_backward(g, x, y, reduction, beta).expand(out_shape)
    if use_out:
        res = torch.full(out_shape, float("nan"), dtype=dtype)
        ops.smooth_l1_loss_backward.grad_input(g, x, y, reduction, beta, grad_input=res)
    else:
        res = ops.smooth_l1_loss_backward(g, x, y, reduction, beta)
    _close(res, ref, "backward")


# ---------------------------------------------------------------------------
# max_unpool3d / max_unpool3d_backward (docs/spec.md §5)

@st.composite
def unpool_case(draw, allow_duplicates):
    """(self shape, output_size, indices, unique): 4-D or 5-D, N may be 0,
    prod(output_size) >= D*H*W; unique indices are a random permutation's
    prefix per plane, duplicates are drawn with replacement."""
    five = draw(st.booleans())
    lead = [draw(st.integers(0, 3))] + ([draw(st.integers(1, 4))] if five else [])
    spatial = [draw(st.integers(1, 3)) for _ in range(3)]
    out = [draw(st.integers(1, 5)) for _ in range(3)]
    assume(math.prod(out) >= math.prod(spatial))
    unique = not allow_duplicates or draw(st.booleans())
    g = torch.Generator().manual_seed(draw(seeds))
    S, oS, P = math.prod(spatial), math.prod(out), math.prod(lead)
    if unique:
        idx = torch.stack([torch.randperm(oS, generator=g)[:S] for _ in range(P)]) if P else \
            torch.empty(0, S, dtype=torch.int64)
    else:
        idx = torch.randint(0, oS, (P, S), generator=g)
    return lead + spatial, out, idx.reshape(*lead, *spatial), unique


_stride_pad = st.tuples(st.lists(st.integers(1, 3), min_size=3, max_size=3),
                        st.lists(st.integers(0, 2), min_size=3, max_size=3))


@given(data=st.data(), case=unpool_case(allow_duplicates=True), dtype=st.sampled_from(UNPOOL_DTYPES),
       layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)), seed=seeds, sp=_stride_pad,
       grad=st.booleans())
def test_max_unpool_forward(data, case, dtype, layouts, seed, sp, grad):
    shape, out_size, idx, unique = case
    x = _arrange(data, _values(shape, dtype, seed), layouts[0])
    # indices expanded only over N: each (n, c) plane keeps its own indices
    i = _arrange(data, idx, layouts[1], expand_axes=[0])
    grad = grad and unique and dtype.is_floating_point
    x.requires_grad_(grad)
    out = ops.max_unpool3d(x, i, out_size, *sp)
    assert out.dtype == dtype
    _close(out, MU.reference_forward(x, i, out_size, *sp), "forward")
    if grad and not (layouts[1] == "expanded" and x.shape[0] > 1):
        g = _values(out.shape, dtype, seed + 1)
        out.backward(g)
        _close(x.grad, MU.reference_backward(g, x, i, out_size, *sp), "autograd")


@given(data=st.data(), case=unpool_case(allow_duplicates=True), dtype=st.sampled_from(UNPOOL_DTYPES),
       layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)),
       seed=seeds, sp=_stride_pad, use_out=st.booleans())
def test_max_unpool_backward(data, case, dtype, layouts, seed, sp, use_out):
    shape, out_size, idx, _ = case
    g = _arrange(data, _values(shape[:-3] + out_size, dtype, seed), layouts[0])
    s = _arrange(data, _values(shape, dtype, seed + 1), layouts[1])  # only its shape and dtype are read
    i = _arrange(data, idx, layouts[2], expand_axes=[0])
    ref = MU.reference_backward(g, s, i, out_size, *sp)
    if use_out:  # the out= tensor must be contiguous (§5 row 1)
        res = torch.full(shape, 7, dtype=dtype)
        ops.max_unpool3d_backward.grad_input(g, s, i, out_size, *sp, grad_input=res)
    else:
        res = ops.max_unpool3d_backward(g, s, i, out_size, *sp)
    assert res.dtype == dtype
    _close(res, ref, "backward")


# ---------------------------------------------------------------------------
# max_pool3d_with_indices / max_pool3d_with_indices_backward (docs/spec.md §9)

@st.composite
def pool_case(draw):
    """(self shape, kernel_size, stride, padding, dilation, ceil_mode): 4-D or 5-D, N may be 0,
    every window with a tap inside self (padding <= kernel_size / 2; dilation 2 without padding)."""
    five = draw(st.booleans())
    lead = [draw(st.integers(0, 2))] + ([draw(st.integers(1, 3))] if five else [])
    k = [draw(st.integers(1, 3)) for _ in range(3)]
    s = [draw(st.integers(1, 3)) for _ in range(3)]
    d = [draw(st.integers(1, 2)) for _ in range(3)]
    p = [0 if d[a] > 1 else draw(st.integers(0, k[a] // 2)) for a in range(3)]
    ceil = draw(st.booleans())
    spatial = [draw(st.integers(1, 6)) for _ in range(3)]
    assume(all(MP._pooled_size(spatial[a], k[a], s[a], p[a], d[a], ceil) >= 1 for a in range(3)))
    return lead + spatial, k, s, p, d, ceil


@given(data=st.data(), case=pool_case(), dtype=floats, layout=st.sampled_from(LAYOUTS), seed=seeds,
       grad=st.booleans())
def test_max_pool_forward(data, case, dtype, layout, seed, grad):
    shape, *window = case
    x = _arrange(data, _values(shape, dtype, seed), layout)
    x.requires_grad_(grad)
    values, indices = ops.max_pool3d_with_indices(x, *window)
    ref_values, ref_indices = MP.reference_forward(x, *window)
    _close(values, ref_values, "forward")
    assert values.dtype == dtype and torch.equal(indices, ref_indices)
    if grad:
        g = _values(values.shape, dtype, seed + 1)
        values.backward(g)
        _close(x.grad, MP.reference_backward(g, x, ref_indices, *window), "autograd",
               MP.reference_backward(g.abs(), x, ref_indices, *window))


@given(data=st.data(), case=pool_case(), dtype=floats, index_dtype=st.sampled_from([torch.int32, torch.int64]),
       layouts=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)), seed=seeds, use_out=st.booleans())
def test_max_pool_backward(data, case, dtype, index_dtype, layouts, seed, use_out):
    shape, *window = case
    x = _values(shape, dtype, seed)
    _, idx = MP.reference_forward(x, *window)
    g = _arrange(data, _values(idx.shape, dtype, seed + 1), layouts[0])
    i = _arrange(data, idx.to(index_dtype), layouts[1], expand_axes=[])
    ref = MP.reference_backward(g, x, i, *window)
    if use_out:
        res = torch.full(shape, float("nan"), dtype=dtype)
        ops.max_pool3d_with_indices_backward.grad_input(g, x, i, *window, grad_input=res)
    else:
        res = ops.max_pool3d_with_indices_backward(g, x, i, *window)
    assert res.dtype == dtype
    _close(res, ref, "backward", MP.reference_backward(g.abs(), x, i, *window))


# ---------------------------------------------------------------------------
# leaky_relu (docs/spec.md §11)

slopes = st.one_of(st.integers(-3, 3), st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False))


@given(data=st.data(), shape=shapes, dtype=floats, layout=st.sampled_from(LAYOUTS), seed=seeds, slope=slopes,
       grad=st.booleans())
def test_leaky_relu_forward(data, shape, dtype, layout, seed, slope, grad):
    x = _arrange(data, _values(shape, dtype, seed), layout)
    x.requires_grad_(grad)
    out = ops.leaky_relu(x, slope)
    _close(out, LR.reference_forward(x, slope), "forward")
    if grad:
        g = _values(out.shape, dtype, seed + 1)
        out.backward(g)
        _close(x.grad, LR.reference_backward(g, x, slope, False), "autograd")


@given(data=st.data(), shape=shapes, dtype=floats, layout=st.sampled_from(LAYOUTS), seed=seeds, slope=slopes,
       is_result=st.booleans(), use_out=st.booleans())
def test_leaky_relu_backward(data, shape, dtype, layout, seed, slope, is_result, use_out):
    slope = abs(slope) if is_result else slope  # (self_is_result needs negative_slope >= 0: §11 row 8)
    x = _arrange(data, _values(shape, dtype, seed), layout)
    g = _values(shape, dtype, seed + 1)
    ref = LR.reference_backward(g, x, slope, is_result)
    if use_out:
        res = torch.full(shape, float("nan"), dtype=dtype)
        ops.leaky_relu_backward.grad_input(g, x, slope, is_result, grad_input=res)
    else:
        res = ops.leaky_relu_backward(g, x, slope, is_result)
    _close(res, ref, "backward")


# ---------------------------------------------------------------------------
# upsample_trilinear3d (docs/spec.md §10)

@st.composite
def trilinear_case(draw):
    """(input shape, output size, align_corners, scales): per axis a scale that is absent or the
    sizes' own ratio (a given scale is used axis by axis)."""
    inp = [draw(st.integers(0, 2)), draw(st.integers(1, 2))] + [draw(st.integers(1, 4)) for _ in range(3)]
    out = [draw(st.integers(1, 6)) for _ in range(3)]
    scales = [draw(st.sampled_from([None, o / i])) for o, i in zip(out, inp[2:])]
    return inp, out, draw(st.booleans()), scales


@given(data=st.data(), case=trilinear_case(), dtype=floats, layout=st.sampled_from(LAYOUTS), seed=seeds,
       grad=st.booleans())
def test_upsample_trilinear_forward(data, case, dtype, layout, seed, grad):
    inp, out, corners, scales = case
    x = _arrange(data, _values(inp, dtype, seed, -1.0, 1.0), layout)
    x.requires_grad_(grad)
    res = ops.upsample_trilinear3d(x, out, corners, *scales)
    _close(res, UT.reference_forward(x, out, corners, *scales), "forward",
           UT.reference_forward(x.abs(), out, corners, *scales))
    if grad:
        g = _values(res.shape, dtype, seed + 1, -1.0, 1.0)
        res.backward(g)
        _close(x.grad, UT.reference_backward(g, out, inp, corners, *scales), "autograd",
               UT.reference_backward(g.abs(), out, inp, corners, *scales))


@given(data=st.data(), case=trilinear_case(), dtype=floats, layout=st.sampled_from(LAYOUTS), seed=seeds,
       use_out=st.booleans())
def test_upsample_trilinear_backward(data, case, dtype, layout, seed, use_out):
    inp, out, corners, scales = case
    g = _arrange(data, _values(inp[:2] + out, dtype, seed, -1.0, 1.0), layout)
    ref = UT.reference_backward(g, out, inp, corners, *scales)
    if use_out:
        res = torch.full(inp, float("nan"), dtype=dtype)
        ops.upsample_trilinear3d_backward.grad_input(g, out, inp, corners, *scales, grad_input=res)
    else:
        res = ops.upsample_trilinear3d_backward(g, out, inp, corners, *scales)
    _close(res, ref, "backward", UT.reference_backward(g.abs(), out, inp, corners, *scales))


# ---------------------------------------------------------------------------
# avg_pool3d (docs/spec.md §12)

@st.composite
def avg_pool_case(draw):
    """(self shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override): 4-D or
    5-D, kernel at most the size and padding at most half the kernel on every axis (§12 rows 7, 9)."""
    five = draw(st.booleans())
    lead = [draw(st.integers(0, 2))] + ([draw(st.integers(1, 3))] if five else [])
    spatial = [draw(st.integers(1, 6)) for _ in range(3)]
    k = [draw(st.integers(1, n)) for n in spatial]
    s = [draw(st.integers(1, 3)) for _ in range(3)]
    p = [draw(st.integers(0, kk // 2)) for kk in k]
    divisor = draw(st.sampled_from([None, None, 1, 3, -2]))
    return lead + spatial, k, s, p, draw(st.booleans()), draw(st.booleans()), divisor


@given(data=st.data(), case=avg_pool_case(), dtype=st.sampled_from(AP.DTYPES), layout=st.sampled_from(LAYOUTS),
       seed=seeds, grad=st.booleans())
def test_avg_pool_forward(data, case, dtype, layout, seed, grad):
    shape, *window = case
    x = _arrange(data, _values(shape, dtype, seed), layout)
    x.requires_grad_(grad)
    out = ops.avg_pool3d(x, *window)
    _close(out, AP.reference_forward(x, *window), "forward", AP.reference_forward(x.abs(), *window))
    if grad:
        g = _values(out.shape, dtype, seed + 1)
        out.backward(g)
        _close(x.grad, AP.reference_backward(g, x, *window), "autograd", AP.reference_backward(g.abs(), x, *window))


@given(data=st.data(), case=avg_pool_case(), dtype=st.sampled_from(AP.DTYPES), layout=st.sampled_from(LAYOUTS),
       seed=seeds, use_out=st.booleans())
def test_avg_pool_backward(data, case, dtype, layout, seed, use_out):
    shape, *window = case
    x = _values(shape, dtype, seed)
    g = _arrange(data, _values(AP.reference_forward(x, *window).shape, dtype, seed + 1), layout)
    ref = AP.reference_backward(g, x, *window)
    if use_out:
        res = torch.full(shape, float("nan"), dtype=dtype)
        ops.avg_pool3d_backward.grad_input(g, x, *window, grad_input=res)
    else:
        res = ops.avg_pool3d_backward(g, x, *window)
    _close(res, ref, "backward", AP.reference_backward(g.abs(), x, *window))


# ---------------------------------------------------------------------------
# adaptive_avg_pool3d (docs/spec.md §13)

@st.composite
def adaptive_case(draw):
    """(self shape, output_size): 4-D or 5-D, the first axis possibly empty."""
    five = draw(st.booleans())
    lead = [draw(st.integers(0, 2))] + ([draw(st.integers(1, 3))] if five else [])
    return lead + [draw(st.integers(1, 6)) for _ in range(3)], [draw(st.integers(1, 5)) for _ in range(3)]


@given(data=st.data(), case=adaptive_case(), dtype=st.sampled_from(AA.DTYPES), layout=st.sampled_from(LAYOUTS),
       seed=seeds, grad=st.booleans())
def test_adaptive_avg_pool_forward(data, case, dtype, layout, seed, grad):
    shape, size = case
    x = _arrange(data, _values(shape, dtype, seed), layout)
    x.requires_grad_(grad)
    out = ops.adaptive_avg_pool3d(x, size)
    _close(out, AA.reference_forward(x, size), "forward", AA.reference_forward(x.abs(), size))
    if grad:
        g = _values(out.shape, dtype, seed + 1)
        out.backward(g)
        _close(x.grad, AA.reference_backward(g, x), "autograd", AA.reference_backward(g.abs(), x))


@given(data=st.data(), case=adaptive_case(), dtype=st.sampled_from(AA.DTYPES), layout=st.sampled_from(LAYOUTS),
       seed=seeds, use_out=st.booleans())
def test_adaptive_avg_pool_backward(data, case, dtype, layout, seed, use_out):
    shape, size = case
    x = _values(shape, dtype, seed)
    g = _arrange(data, _values(shape[:-3] + size, dtype, seed + 1), layout)
    ref = AA.reference_backward(g, x)
    if use_out:
        res = torch.full(shape, float("nan"), dtype=dtype)
        ops.adaptive_avg_pool3d_backward.grad_input(g, x, grad_input=res)
    else:
        res = ops.adaptive_avg_pool3d_backward(g, x)
    _close(res, ref, "backward", AA.reference_backward(g.abs(), x))
