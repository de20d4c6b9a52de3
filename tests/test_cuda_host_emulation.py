"""The CUDA kernels' per-element code, run on the host (no GPU needed): here
upsample (nearest, nearest-exact, trilinear) and adaptive_avg_pool; the
pooling kernels, the elementwise functors and the deferred index checks in
tests/test_cuda_host_{pooling,elementwise,deferred}.py.

csrc/cuda/<family>.cuh holds what one CUDA thread computes for one element
(C10_HOST_DEVICE; atomics only behind __CUDA_ARCH__, with a sequential host
form). tests/cuda_host/<family>.h, built with the host compiler (one
module, tests/cuda_host/module.cpp: tests/conftest.py's emulation fixture),
runs that code for every element with the launch set-up of the kernels, in
both index widths (32-bit with fast division, 64-bit) and every walk order
the kernels take. The results must
equal the CPU kernels' (or, for the ELU functors, aten's scalar CPU
formula's) bit for bit. The same module drives the deferred index checks
(csrc/common/deferred.cpp) with checks whose result arrives after a number of polls.

Not covered here (a GPU run of the generic tests covers it): the launches
(grid, stream, guard), the dispatch and out= plumbing of csrc/cuda/*.cu, the
elementwise driver's vector and strided paths, the smooth_l1 reduction,
device arithmetic differing from the host's (CUDA's exp/expm1), and the
index checks' flag copy and event (csrc/cuda/flag.cuh).
"""
import math
import random

import pytest
import torch

from torch_aclnn.testing import OPS
from torch_aclnn.testing.core import FLOATING, LAYOUTS, make_tensor
from torch_aclnn.testing.upsample import source_indices


@pytest.fixture(scope="module")
def upsample(emulation):
    return emulation.upsample


EXACT = {"upsample_nearest3d": False, "upsample_nearest3d_backward": False,
         "upsample_nearest_exact3d": True, "upsample_nearest_exact3d_backward": True}
# (channels_last result, 64-bit indexing, the result's element offset in its
# buffer: 1 misaligns every pack, as an out= tensor may).
VARIANTS = [(cl, wide, 0) for cl in (False, True) for wide in (False, True)] + [(False, False, 1), (True, False, 1)]


def _emulate(emu, name, args):
    """fn(channels_last, wide) running the emulated kernel on the op's args."""
    exact = EXACT[name]
    if name.endswith("_backward"):
        g, out, insz, *scales = args
        sd, sh, sw = (scales + [None] * 3)[:3]
        return lambda cl, wide, offset: emu.backward(g, list(out), list(insz), sd, sh, sw, exact, cl, wide, offset)
    x, out, *scales = args
    sd, sh, sw = (scales + [None] * 3)[:3]
    return lambda cl, wide, offset: emu.forward(x, list(out), sd, sh, sw, exact, cl, wide)


def _check(emu, name, args, desc):
    expected = getattr(torch.ops.torch_aclnn, name)(*args)
    run = _emulate(emu, name, args)
    for cl, wide, offset in VARIANTS:
        got = run(cl, wide, offset)
        assert got.shape == expected.shape, desc
        assert torch.equal(got, expected), f"{desc} channels_last={cl} wide={wide} offset={offset}: " \
            f"max diff {(got.double() - expected.double()).abs().max()}"


@pytest.mark.parametrize("name", list(EXACT))
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_upsample_samples(upsample, name, dtype):
    """Every OpInfo sample (all layouts, scales, empty batch)."""
    for s in OPS[name].samples("cpu", dtype):
        _check(upsample, name, s.args, s.desc)


def _random_case(rng):
    insz = [rng.randint(0, 3), rng.randint(0, 3)] + [rng.randint(1, 7) for _ in range(3)]
    if rng.random() < 0.5:
        return insz, [rng.randint(1, 17) for _ in range(3)], (None, None, None)
    while True:
        scales = [rng.choice([0.3, 0.5, 0.6, 0.75, 1.0, 1.1, 1.3, 1.5, 1.7, 2.0, 2.5, 3.0, 3.3, 4.0, 7.1])
                  for _ in range(3)]
        out = [int(insz[2 + i] * scales[i]) for i in range(3)]
        if min(out) > 0:
            return insz, out, tuple(scales)


def test_upsample_random(upsample):
    """Random sizes, scales, layouts and dtypes, forward and backward."""
    rng = random.Random(0)
    for _ in range(150):
        insz, out, scales = _random_case(rng)
        dtype, layout = rng.choice(FLOATING), rng.choice(LAYOUTS)
        for exact in (False, True):
            fwd, bwd = ("upsample_nearest_exact3d", "upsample_nearest_exact3d_backward") if exact else \
                ("upsample_nearest3d", "upsample_nearest3d_backward")
            x = make_tensor(insz, dtype, layout=layout)
            _check(upsample, fwd, (x, out, *scales), f"{fwd} {insz}->{out} s={scales} {layout} {dtype}")
            g = make_tensor(insz[:2] + out, dtype, layout=layout)
            _check(upsample, bwd, (g, out, insz, *scales), f"{bwd} {out}->{insz} s={scales} {layout} {dtype}")


def _w_fold(exact, iw, ow, scale):
    """L where every W input index owns the outputs [L*i, L*i + L), else 0."""
    src = source_indices("nearest-exact" if exact else "nearest", iw, ow, scale, scale is not None).tolist()
    L = ow // iw
    return L if ow % iw == 0 and all(src[d] == d // L for d in range(ow)) else 0


def _widest_w_window(exact, iw, ow, scale):
    """The most W outputs one input index owns, by the spec's mapping."""
    src = source_indices("nearest-exact" if exact else "nearest", iw, ow, scale,
                         scale is not None).tolist()
    return max((src.count(i) for i in set(src)), default=0)


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_upsample_packed_backward(upsample, dtype):
    """The packed NCDHW backward whose W windows are a fold by 1, 2 or 4 with
    dense aligned rows (kFold) is taken exactly where it applies, and is
    bitwise equal to the CPU kernel; a misaligned or strided grad_output, or
    user scales that move the W windows, take the row kernel (kRow), and rows
    that are not whole packs the one-element kernel."""
    rng = random.Random(2)
    v = 16 // dtype.itemsize  # elements per 16-byte pack
    taken = moved_folds = 0
    for _ in range(40):
        L = rng.choice([1, 2, 3, 4])
        iw = v * rng.randint(1, 3) + rng.choice([0, 0, 0, 1])
        insz = [rng.randint(1, 2), rng.randint(1, 3), rng.randint(1, 4), rng.randint(1, 4), iw]
        out = [rng.randint(1, 9), rng.randint(1, 9), L * iw]
        whole = iw % v == 0
        row = ("row", 2 if L <= 2 else 0) if whole else ("element", 0)
        for exact, bwd in ((False, "upsample_nearest3d_backward"), (True, "upsample_nearest_exact3d_backward")):
            g = make_tensor(insz[:2] + out, dtype)
            want = L in (1, 2, 4) and whole
            assert upsample.backward_path(g, out, insz, None, None, None, exact, False, 0) == \
                (("fold", L) if want else row), (insz, out, exact)
            taken += want
            _check(upsample, bwd, (g, out, insz), f"{bwd} {out}->{insz} {dtype}")
            # Not kFold: a grad_output starting one element off alignment, a
            # strided W axis, user scales that move the W windows.
            shifted = make_tensor([g.numel() + 1], dtype)[1:].view(g.shape)
            strided = make_tensor(insz[:2] + out[:2] + [2 * out[2]], dtype)[..., ::2]
            for other in (shifted, strided):
                assert upsample.backward_path(other, out, insz, None, None, None, exact, False, 0) == row
                _check(upsample, bwd, (other, out, insz), f"{bwd} {out}->{insz} {dtype} strided")
            moved, out_m = (1.0, 1.0, L + 0.5 / iw), insz[2:4] + [L * iw]
            g_m = make_tensor(insz[:2] + out_m, dtype)
            # Whether the W windows are still a fold by L (nearest-exact's
            # half-pixel offset absorbs small shifts), by the spec's mapping.
            src = source_indices("nearest-exact" if exact else "nearest", iw, L * iw, moved[2], True).tolist()
            fold = all(src[d] == d // L for d in range(L * iw))
            widest = _widest_w_window(exact, iw, L * iw, moved[2])
            moved_row = ("row", 2 if widest <= 2 else 0) if whole else ("element", 0)
            assert upsample.backward_path(g_m, out_m, insz, *moved, exact, False, 0) == \
                (("fold", L) if want and fold else moved_row)
            moved_folds += not fold
            _check(upsample, bwd, (g_m, out_m, insz, *moved), f"{bwd} {out_m}->{insz} s={moved} {dtype}")
    assert taken > 10 and moved_folds > 10


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_upsample_row_and_channel_packs(upsample, dtype):
    """The packed backwards for any windows: a pack of an NCDHW row (kRow,
    each element's own W window) and a pack of channels_last_3d channels
    (kChannels, one 16-byte load per tap), each with its W taps unrolled to 2
    where no W window is wider, else a loop. Taken exactly where their packs
    are whole and aligned, bitwise equal to the CPU kernel; grad_output with
    strided or misaligned channels takes the one-element kernel."""
    rng = random.Random(3)
    v = 16 // dtype.itemsize
    seen = set()
    for _ in range(60):
        exact = rng.random() < 0.5
        bwd = "upsample_nearest_exact3d_backward" if exact else "upsample_nearest3d_backward"
        C = v * rng.randint(1, 2) + rng.choice([0, 0, 0, 1])
        iw = v * rng.randint(1, 2) + rng.choice([0, 0, 0, 1])
        insz = [rng.randint(1, 2), C, rng.randint(1, 4), rng.randint(1, 4), iw]
        scales = tuple(rng.choice([0.5, 0.6, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0]) for _ in range(3))
        out = [int(insz[2 + i] * scales[i]) for i in range(3)]
        if rng.random() < 0.5 or min(out) == 0:
            scales, out = (None, None, None), [rng.randint(1, 9), rng.randint(1, 9), rng.randint(1, 3 * iw)]
        taps = 2 if _widest_w_window(exact, iw, out[2], scales[2]) <= 2 else 0
        for cl in (False, True):
            g = make_tensor(insz[:2] + out, dtype, layout="channels_last_3d" if cl else "contiguous")
            path = upsample.backward_path(g, out, insz, *scales, exact, cl, 0)
            if cl:
                want = ("channels", taps) if C % v == 0 else ("element", 0)
            elif iw % v == 0 and _w_fold(exact, iw, out[2], scales[2]) in (1, 2, 4) and \
                    all(st % v == 0 for st, n in zip(g.stride()[:4], g.shape[:4]) if n > 1):
                want = ("fold", _w_fold(exact, iw, out[2], scales[2]))
            else:
                want = ("row", taps) if iw % v == 0 else ("element", 0)
            assert path == want, (insz, out, scales, exact, cl)
            seen.add(path)
            # A result one element into its buffer (as an out= tensor may be):
            # no pack of it is aligned, so the one-element kernel.
            assert upsample.backward_path(g, out, insz, *scales, exact, cl, 1) == ("element", 0)
            _check(upsample, bwd, (g, out, insz, *scales), f"{bwd} {out}->{insz} s={scales} {dtype} cl={cl}")
        if C % v == 0:
            # grad_output's channels not dense (a channel slice), dense but
            # with positions C + 1 apart (the first C of C + 1 channels), or
            # one element off alignment: the one-element kernel.
            wide = make_tensor(insz[:1] + [2 * C] + out, dtype, layout="channels_last_3d")[:, ::2]
            first = make_tensor(insz[:1] + [C + 1] + out, dtype, layout="channels_last_3d")[:, :C]
            flat = make_tensor([math.prod(insz[:2] + out) + 1], dtype)[1:]
            shifted = flat.view(insz[0], *out, C).permute(0, 4, 1, 2, 3)
            for other in (wide, first, shifted):
                assert upsample.backward_path(other, out, insz, *scales, exact, True, 0) == ("element", 0)
                _check(upsample, bwd, (other, out, insz, *scales), f"{bwd} {out}->{insz} {dtype} other")
    assert {("row", 2), ("row", 0), ("channels", 2), ("channels", 0), ("element", 0)} <= seen, seen


def test_upsample_rows_past_the_scan(upsample):
    """A W axis of more than 2^16 outputs is not scanned on the host: no fold,
    and its windows count as wider than 2 (a plain loop), with the same bits."""
    for exact, bwd in ((False, "upsample_nearest3d_backward"), (True, "upsample_nearest_exact3d_backward")):
        for iw in (32768, 32772):  # (W upsampled by 2: 65536 outputs, scanned; 65544, not)
            insz, out = [1, 1, 1, 1, iw], [1, 1, 2 * iw]
            g = make_tensor(insz[:2] + out, torch.float32)
            want = ("fold", 2) if 2 * iw <= 2 ** 16 else ("row", 0)
            assert upsample.backward_path(g, out, insz, None, None, None, exact, False, 0) == want
            _check(upsample, bwd, (g, out, insz), f"{bwd} W {iw}")


def test_upsample_window_table(upsample):
    """The device-built windows are the exact preimages of the spec's src(dst)
    (the float32 reference of torch_aclnn.testing.upsample), per axis."""
    rng = random.Random(1)
    for _ in range(300):
        insz, out, scales = _random_case(rng)
        use = all(s is not None and s > 0 for s in scales)
        for exact, mode in ((False, "nearest"), (True, "nearest-exact")):
            win = upsample.window_table(out, insz, *scales, exact).tolist()
            base = 0
            for axis in range(3):
                n_in = insz[2 + axis]
                src = source_indices(mode, n_in, out[axis], scales[axis], use).tolist()
                for i in range(n_in):
                    pre = [d for d in range(out[axis]) if src[d] == i]
                    lo, hi = win[base + i], win[base + n_in + i]
                    assert list(range(lo, hi)) == pre, (insz, out, scales, mode, axis, i, lo, hi, pre)
                base += 2 * n_in


# ---------------------------------------------------------------------------
# upsample_trilinear3d[_backward] (csrc/cuda/upsample_trilinear.cuh)

@pytest.fixture(scope="module")
def trilinear(emulation):
    return emulation.upsample_trilinear


def _check_trilinear(emu, name, args, desc):
    """Every walk order and index width of the emulated kernel: the CPU kernel's bits."""
    expected = getattr(torch.ops.torch_aclnn, name)(*args)
    for cl in (False, True):
        for wide in (False, True):
            if name.endswith("_backward"):
                g, out, insz, align, *scales = args
                got = emu.backward(g, list(out), list(insz), align, *(scales + [None] * 3)[:3], cl, wide)
            else:
                x, out, align, *scales = args
                got = emu.forward(x, list(out), align, *(scales + [None] * 3)[:3], cl, wide)
            assert got.shape == expected.shape, desc
            assert torch.equal(got, expected), f"{desc} channels_last={cl} wide={wide}: " \
                f"max diff {(got.double() - expected.double()).abs().max()}"


@pytest.mark.parametrize("name", ["upsample_trilinear3d", "upsample_trilinear3d_backward"])
@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_upsample_trilinear_samples(trilinear, name, dtype):
    """Every OpInfo sample (layouts, align_corners, per-axis scales, out == in
    with a scale, empty batch): bitwise the CPU kernel."""
    for s in OPS[name].samples("cpu", dtype):
        _check_trilinear(trilinear, name, s.args, s.desc)


def test_upsample_trilinear_random(trilinear):
    """Random sizes, scales (some axes only), align_corners, layouts and dtypes."""
    rng = random.Random(1)
    for _ in range(40):
        insz, out, scales = _random_case(rng)
        scales = tuple(s if rng.random() < 0.7 else None for s in scales)
        align = rng.random() < 0.3
        dtype, layout = rng.choice(FLOATING), rng.choice(LAYOUTS)
        x = make_tensor(insz, dtype, layout=layout)
        _check_trilinear(trilinear, "upsample_trilinear3d", (x, out, align, *scales),
                         f"forward {insz}->{out} align={align} s={scales} {layout} {dtype}")
        g = make_tensor(insz[:2] + out, dtype, layout=layout)
        _check_trilinear(trilinear, "upsample_trilinear3d_backward", (g, out, insz, align, *scales),
                         f"backward {out}->{insz} align={align} s={scales} {layout} {dtype}")
# avg_pool3d and its backward (csrc/cuda/avg_pool.cuh): the CUDA kernels'


# ---------------------------------------------------------------------------
# adaptive_avg_pool3d and its backward (csrc/cuda/adaptive_avg_pool.cuh)

@pytest.fixture(scope="module")
def adaptive(emulation):
    return emulation.adaptive_avg_pool


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_adaptive_avg_pool_samples(adaptive, dtype):
    """Every OpInfo sample, every walk order (contiguous, channels_last_3d), both index
    widths, at an offset into a NaN-filled buffer: the CPU kernels' bits."""
    for name in ("adaptive_avg_pool3d", "adaptive_avg_pool3d_backward"):
        for s in OPS[name].samples("cpu", dtype):
            expected = getattr(torch.ops.torch_aclnn, name)(*s.args)
            for cl, wide, offset in VARIANTS:
                if name == "adaptive_avg_pool3d":
                    got = adaptive.forward(s.args[0], list(s.args[1]), cl, wide, offset)
                else:
                    got = adaptive.backward(*s.args, cl, wide, offset)
                assert got.shape == expected.shape and torch.equal(got, expected), \
                    f"{name} {s.desc} cl={cl} wide={wide} offset={offset}"


def test_adaptive_avg_pool_random(adaptive):
    """Random shapes and output sizes (smaller, equal and larger than the input on each
    axis), NaN terms included: the CPU kernels' bits, NaN payloads aside."""
    rng = random.Random(5)
    for _ in range(12):
        shape = [rng.randint(1, 2), rng.randint(1, 9)] + [rng.randint(1, 9) for _ in range(3)]
        size = [rng.randint(1, 11) for _ in range(3)]
        dtype = rng.choice(FLOATING)
        if rng.random() < 0.3:
            shape = shape[1:]  # 4-D (C, D, H, W)
        layout = rng.choice(LAYOUTS if len(shape) == 5 else ("contiguous", "permuted", "sliced"))
        x = make_tensor(shape, dtype, layout=layout)
        g = make_tensor([*shape[:-3], *size], dtype, layout=layout)
        if g.is_contiguous():
            g.view(-1)[::7] = float("nan")
        fwd = torch.ops.torch_aclnn.adaptive_avg_pool3d(x, size)
        bwd = torch.ops.torch_aclnn.adaptive_avg_pool3d_backward(g, x)
        for cl, wide, offset in VARIANTS:
            got = adaptive.forward(x, size, cl, wide, offset)
            torch.testing.assert_close(got, fwd, rtol=0, atol=0, equal_nan=True)
            got = adaptive.backward(g, x, cl, wide, offset)
            torch.testing.assert_close(got, bwd, rtol=0, atol=0, equal_nan=True,
                                       msg=lambda m: f"{shape} -> {size} {dtype} {layout} cl={cl}: {m}")
