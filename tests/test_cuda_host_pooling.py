"""The pooling kernels' per-element CUDA code (max_unpool3d, max_pool3d,
avg_pool3d), run on the host against the CPU kernels, bit for bit (the
emulation module, built by tests/conftest.py)."""
import math
import random
import re

import pytest
import torch
import torch.nn.functional as F

from torch_aclnn.testing import OPS
from torch_aclnn.testing.core import FLOATING, LAYOUTS, make_layout, make_tensor


# ---------------------------------------------------------------------------
# MaxUnpool3d: the two-pass deterministic scatter (claim by atomicMax, fill),
# the gather, and the out-of-range flag, against the CPU kernels. Every
# walk order the kernels can take and both index widths.

@pytest.fixture(scope="module")
def max_unpool(emulation):
    return emulation.max_unpool


@pytest.mark.parametrize("dtype", OPS["max_unpool3d"].dtypes, ids=str)
def test_max_unpool_samples(max_unpool, dtype):
    """Every OpInfo sample (duplicates, every layout, 4-D, empty, expanded)."""
    for s in OPS["max_unpool3d"].samples("cpu", dtype):
        x, idx, out, *_ = s.args
        expected = torch.ops.torch_aclnn.max_unpool3d(*s.args)
        for wide in (False, True):
            for walk, cells in ((-1, True), (-1, False), (0, False), (1, False)):
                got, flag, _ = max_unpool.forward(x, idx, list(out), wide, walk, cells)
                assert flag == max_unpool.NONE and torch.equal(got, expected), \
                    f"{s.desc} wide={wide} walk={walk} cells={cells}"
                assert got.stride() == expected.stride(), s.desc
    for s in OPS["max_unpool3d_backward"].samples("cpu", dtype):
        g, x, idx, out, *_ = s.args
        expected = torch.ops.torch_aclnn.max_unpool3d_backward(*s.args)
        for wide in (False, True):
            for cl in (False, True):
                for packs in (False, True):
                    got, flag, _ = max_unpool.backward(g, x, idx, list(out), cl, wide, packs, 0)
                    assert flag == max_unpool.NONE and torch.equal(got, expected), \
                        f"{s.desc} wide={wide} cl={cl} packs={packs}"


def _first_bad(idx, o_s):
    """The smallest logical position (n, c, d, h, w order) of an index outside [0, o_s)."""
    flat = idx.contiguous().view(-1)
    bad = ((flat < 0) | (flat >= o_s)).nonzero()
    return int(bad[0]) if bad.numel() else None


def test_max_unpool_out_of_range(max_unpool):
    """An out-of-range index is never used: the flag holds the smallest
    logical position (the one the IndexError names); the forward claims
    nothing for it, the backward writes 0 there; everything else is the
    CPU kernels' result on the valid indices."""
    gen = torch.Generator().manual_seed(3)
    taken = 0  # (calls through the packed gather)
    for shape, out in (((2, 3, 2, 3, 4), [3, 4, 3]), ((3, 2, 2, 4), [2, 3, 3]), ((1, 5, 1, 2, 2), [2, 2, 2])):
        o_s = out[0] * out[1] * out[2]
        for layout in ("contiguous", "channels_last_3d", "permuted"):
            for trial in range(4):
                idx = torch.randint(0, o_s, shape, generator=gen)
                flat = idx.view(-1)
                pos = torch.randperm(flat.numel(), generator=gen)[:1 + trial]
                flat[pos] = torch.tensor([o_s, -1, 2 ** 62, -(2 ** 40)])[:pos.numel()]
                want = _first_bad(idx, o_s)
                valid = (idx >= 0) & (idx < o_s)
                safe = torch.where(valid, idx, torch.zeros_like(idx))
                i = make_layout(idx, layout)
                x = make_tensor(shape, torch.float32, layout=layout)
                for wide in (False, True):
                    got, flag, _ = max_unpool.forward(x, i, out, wide, -1, True)
                    assert flag == want, (shape, layout, flag, want)
                    # The valid elements scatter as the CPU kernel scatters them.
                    keep = torch.where(valid, x, torch.zeros_like(x))
                    ref = torch.ops.torch_aclnn.max_unpool3d(keep, make_layout(safe, layout), out, [1, 1, 1],
                                                             [0, 0, 0])
                    claimed = torch.ops.torch_aclnn.max_unpool3d(
                        valid.to(torch.float32), make_layout(safe, layout), out, [1, 1, 1], [0, 0, 0])
                    mask = claimed != 0  # output elements some valid index claims
                    assert torch.equal(got[mask], ref[mask]), (shape, layout)
                    g = make_tensor(list(shape[:-3]) + out, torch.float32, layout=layout)
                    for cl, packs in ((False, False), (False, True), (True, False), (True, True)):
                        gi, flag, packed = max_unpool.backward(g, x, i, out, cl, wide, packs, 0)
                        taken += packed
                        assert flag == want, (shape, layout, flag, want)
                        ref = torch.ops.torch_aclnn.max_unpool3d_backward(g, x, make_layout(safe, layout), out,
                                                                          [1, 1, 1], [0, 0, 0])
                        assert torch.equal(gi, torch.where(valid, ref, torch.zeros_like(ref))), (shape, layout)
    assert taken > 0


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float16, torch.float32, torch.float64], ids=str)
def test_max_unpool_gather_packs(max_unpool, dtype):
    """The packed backward (a run of 2-8 adjacent grad_input elements per
    thread, its indices read as 16-byte loads) is taken exactly where a
    plane's positions (NCDHW) or its channels (channels_last_3d) split into
    whole, aligned packs with dense indices, and gives the one-element
    kernel's result and flag, out-of-range indices included."""
    v = {1: 8, 2: 8, 4: 4, 8: 2}[dtype.itemsize]
    gen = torch.Generator().manual_seed(11)
    taken = 0
    for trial in range(24):
        C = v * (1 + trial % 2) + (1 if trial % 6 == 5 else 0)
        shape = (2, C, 2, 2, v * (1 + trial % 3) + (1 if trial % 4 == 3 else 0))
        out = [4, 4, 2 * shape[-1]]
        o_s = out[0] * out[1] * out[2]
        idx = torch.randint(0, o_s, shape, generator=gen)
        if trial % 3 == 0:
            flat = idx.view(-1)
            flat[torch.randperm(flat.numel(), generator=gen)[:2]] = torch.tensor([o_s, -1])
        want_flag = _first_bad(idx, o_s)
        want_flag = max_unpool.NONE if want_flag is None else want_flag
        valid = (idx >= 0) & (idx < o_s)
        safe = torch.where(valid, idx, torch.zeros_like(idx))
        x = make_tensor(shape, dtype)
        for layout in ("contiguous", "channels_last_3d"):
            cl = layout == "channels_last_3d"
            g = make_tensor([2, C] + out, dtype, layout=layout)
            i = make_layout(idx, layout)
            # The same indices one element off 16-byte alignment: never packed.
            flat = torch.empty(idx.numel() + 1, dtype=torch.int64)[1:]
            shifted = flat.view(i.permute(0, 2, 3, 4, 1).shape if cl else shape)
            shifted.copy_(i.permute(0, 2, 3, 4, 1) if cl else i)
            shifted = shifted.permute(0, 4, 1, 2, 3) if cl else shifted
            ref = torch.ops.torch_aclnn.max_unpool3d_backward(g, x, make_layout(safe, layout), out, [1, 1, 1],
                                                              [0, 0, 0])
            ref = torch.where(valid, ref, torch.zeros_like(ref))
            # Dense along the packed axis and aligned, but with N (NCDHW) or
            # the positions (channels_last_3d) one element further apart than
            # dense: packs of the second n or position would be misaligned.
            sizes = list(i.shape)
            st = list(i.stride())
            if cl:
                st[2:5] = [s + s // C for s in st[2:5]]
                st[0] = st[2] * sizes[2]
            else:
                st[0] += 1
            apart = torch.empty(sizes[0] * st[0], dtype=torch.int64).as_strided(sizes, st)
            apart.copy_(i)
            for ix, can, offset in ((i, True, 0), (shifted, False, 0), (apart, False, 0), (i, False, 1)):
                for wide in (False, True):
                    gi, flag, packed = max_unpool.backward(g, x, ix, out, cl, wide, True, offset)
                    run = C if cl else shape[2] * shape[3] * shape[4]
                    assert packed == (can and run % v == 0), (shape, layout, can, offset)
                    taken += packed
                    assert flag == want_flag, (shape, layout, flag, want_flag)
                    assert torch.equal(gi, ref), (shape, layout, can, wide)
    assert taken > 20


def test_max_unpool_cells(max_unpool):
    """The one-pass forward: where the output's D, H, W are multiples of the
    input's, indices that each lie in their own cell (max pooling with
    kernel_size == stride) are unpooled by the cell pass alone; one index
    outside its cell, a repeated index or an out-of-range one makes the two
    passes run, with the CPU kernel's result and flag either way (the output
    starts as NaN, so an element no pass writes shows)."""
    gen = torch.Generator().manual_seed(5)
    cases = (((2, 3, 4, 6, 8), (2, 2, 2)), ((1, 4, 3, 6, 6), (1, 2, 3)), ((3, 4, 6, 2), (2, 1, 2)),
             ((1, 2, 8, 4, 4), (4, 4, 4)))
    for shape, k in cases:
        src = torch.randn(shape, generator=gen)
        pooled, idx = F.max_pool3d(src, k, stride=k, return_indices=True)
        out = list(shape[-3:])
        for layout in ("contiguous", "channels_last_3d", "permuted"):
            if layout == "channels_last_3d" and len(shape) == 4:
                continue
            x = make_layout(pooled, layout)
            moved = idx.clone().view(-1)
            moved[-1] = 0  # the first cell's, never the last element's
            repeated = idx.clone().view(-1)
            repeated[1] = repeated[0]  # two inputs of one plane, one target
            bad = idx.clone().view(-1)
            bad[1] = -1
            for indices, two_pass in ((idx, False), (moved.view(idx.shape), True),
                                      (repeated.view(idx.shape), True), (bad.view(idx.shape), True)):
                indices = make_layout(indices, layout)
                valid = indices >= 0
                safe = torch.where(valid, indices, torch.zeros_like(indices))
                keep = torch.where(valid, x, torch.zeros_like(x))
                want = torch.ops.torch_aclnn.max_unpool3d(keep, safe, out, list(k), [0, 0, 0])
                for wide in (False, True):
                    got, flag, ran = max_unpool.forward(x, indices, out, wide, -1, True)
                    assert ran == two_pass, (shape, k, layout)
                    assert flag == (max_unpool.NONE if bool(valid.all()) else 1), (shape, k, layout)
                    if bool(valid.all()):
                        assert torch.equal(got, want) and got.stride() == want.stride(), (shape, k, layout)
                    else:  # everything the valid indices claim, as the CPU kernel scatters it
                        mask = torch.ops.torch_aclnn.max_unpool3d(valid.to(x.dtype), safe, out, list(k),
                                                                  [0, 0, 0]) != 0
                        assert torch.equal(got[mask], want[mask]), (shape, k, layout)
    # A cell of more than 64 elements: the two passes, whatever the indices.
    src = torch.randn(1, 1, 5, 5, 5, generator=gen)
    pooled, idx = F.max_pool3d(src, 5, return_indices=True)
    got, flag, ran = max_unpool.forward(pooled, idx, [5, 5, 5], False, -1, True)
    assert ran and flag == max_unpool.NONE
    assert torch.equal(got, torch.ops.torch_aclnn.max_unpool3d(pooled, idx, [5, 5, 5], [5, 5, 5], [0, 0, 0]))


# ---------------------------------------------------------------------------
# MaxPool3d backward: the deterministic gather (one thread per grad_input
# element over the windows that cover it) and the row-12 check flag, against
# the CPU kernel's scatter: bitwise equal in every dtype, both index widths,
# every walk order.

MAX_POOL = "max_pool3d_with_indices_backward"


@pytest.fixture(scope="module")
def max_pool(emulation):
    return emulation.max_pool


def _max_pool_check(max_pool, args, desc):
    g, x, idx, kernel, stride, padding, dilation, ceil_mode = args
    expected = torch.ops.torch_aclnn.max_pool3d_with_indices_backward(*args)
    window = (list(kernel), list(stride), list(padding), list(dilation), ceil_mode)
    for wide in (False, True):
        got, flag = max_pool.backward(g, x, idx, *window, wide)
        assert flag == max_pool.NONE, f"{desc} wide={wide}: flag {flag}"
        assert torch.equal(got, expected), f"{desc} wide={wide}: " \
            f"max diff {(got.double() - expected.double()).abs().max()}"
        assert got.stride() == expected.stride(), desc
        # out= straight into either dense 5-D layout (the other walk order).
        for cl in (False, True):
            got, flag = max_pool.backward_layout(g, x, idx, *window, cl, wide)
            assert flag == max_pool.NONE and torch.equal(got, expected), f"{desc} wide={wide} cl={cl}"


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_max_pool_samples(max_pool, dtype):
    """Every OpInfo sample (overlapping windows, dilation, ceil_mode, 4-D,
    every layout, int32 indices, empty batch)."""
    for s in OPS[MAX_POOL].samples("cpu", dtype):
        _max_pool_check(max_pool, s.args, s.desc)


def _pool_indices(shape, kernel, stride, padding, dilation, ceil_mode, gen):
    x = torch.rand(shape, dtype=torch.float64, generator=gen)
    five = x if len(shape) == 5 else x.unsqueeze(1)
    _, idx = torch.nn.functional.max_pool3d(five, kernel, stride, padding, dilation, ceil_mode,
                                            return_indices=True)
    return idx if len(shape) == 5 else idx.squeeze(1)


def _random_window(rng):
    kernel = [rng.randint(1, 4) for _ in range(3)]
    stride = [rng.randint(1, 4) for _ in range(3)]
    padding = [rng.randint(0, k // 2) for k in kernel]
    dilation = [rng.randint(1, 3) for _ in range(3)]
    return kernel, stride, padding, dilation, rng.random() < 0.5


def test_max_pool_random(max_pool):
    """Random shapes, windows (overlapping, dilated, ceil_mode), layouts,
    dtypes and index dtypes; indices from aten's max_pool3d."""
    rng = random.Random(5)
    gen = torch.Generator().manual_seed(5)
    done = 0
    while done < 80:
        kernel, stride, padding, dilation, ceil_mode = _random_window(rng)
        shape = [rng.randint(1, 2), rng.randint(1, 4)] + [rng.randint(1, 8) for _ in range(3)]
        if rng.random() < 0.25:
            shape = [shape[0]] + shape[2:]
        try:
            idx = _pool_indices(shape, kernel, stride, padding, dilation, ceil_mode, gen)
        except RuntimeError:  # pooled size < 1
            continue
        # A window with no tap inside the input on some axis (dilation can
        # step over the input from the padding): aten's forward gives it -inf
        # and an index outside the window, which row 12 refuses.
        if not all(any(_in_window(x, o, kernel[a], stride[a], padding[a], dilation[a])
                       for x in range(shape[-3 + a])) for a in range(3) for o in range(idx.shape[-3 + a])):
            continue
        dtype, layout = rng.choice(FLOATING), rng.choice(LAYOUTS if len(shape) == 5 else
                                                         [la for la in LAYOUTS if la != "channels_last_3d"])
        if rng.random() < 0.5:
            idx = idx.int()
        g = make_tensor(list(idx.shape), dtype, layout=layout)
        x = make_tensor(shape, dtype, layout=rng.choice([layout, "contiguous"]))
        args = (g, x, make_layout(idx, rng.choice([layout, "contiguous"])), kernel, stride, padding, dilation,
                ceil_mode)
        _max_pool_check(max_pool, args, f"{shape} k={kernel} s={stride} p={padding} d={dilation} "
                                        f"ceil={ceil_mode} {layout} {dtype} {idx.dtype}")
        done += 1


def _in_window(x, o, k, s, p, d):
    """The contract's row 12 on one axis (csrc/contracts/max_pool.h: in_window)."""
    t = x - (o * s - p)
    return t >= 0 and t % d == 0 and t // d < k


def test_max_pool_gather_taps(max_pool):
    """Per axis, the pooled positions the gather visits for an input position
    (its [lo, end) range kept by the dilation's alignment) are exactly those
    whose window has it as a tap, in increasing order, in both widths."""
    rng = random.Random(6)
    for _ in range(400):
        k, s, d = rng.randint(1, 7), rng.randint(1, 5), rng.randint(1, 4)
        p = rng.randint(0, k // 2)
        size = rng.randint(1, 20)
        ceil_mode = rng.random() < 0.5
        top = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
        if top < 0:
            continue
        pooled = top // s + 1
        if ceil_mode and (pooled - 1) * s >= size + p:
            pooled -= 1
        for x in range(size):
            want = [o for o in range(pooled) if _in_window(x, o, k, s, p, d)]
            for wide in (False, True):
                assert max_pool.taps(x, pooled, k, s, p, d, wide) == want, (x, size, pooled, k, s, p, d, wide)


def test_max_pool_wide_windows(max_pool):
    """A window too large for 32-bit window math (the contract's largest
    kernel_size, stride and padding: below 2^31, and kernel_size / 2) takes
    the 64-bit kernels (the 32-bit ones refuse it) and still equals the CPU
    kernel."""
    gen = torch.Generator().manual_seed(7)
    for kernel, stride, padding in (([2 ** 31 - 1], [2 ** 31 - 1], [2 ** 30 - 1]),
                                    ([3, 2 ** 31 - 1, 2], [1, 2, 3], [1, 2 ** 30 - 1, 0])):
        shape = (2, 2, 3, 4, 3)
        pooled = list(shape[:2])
        for i in range(3):
            k, s, p = (v[i] if len(v) == 3 else v[0] for v in (kernel, stride, padding))
            o = (shape[2 + i] + 2 * p - (k - 1) - 1) // s + 1
            pooled.append(o)
        # Every index a position of its own window: the windows here cover
        # the whole plane on the huge axes; on the others take the window's
        # first tap inside the input.
        idx = torch.empty(pooled, dtype=torch.int64)
        for od in range(pooled[2]):
            for oh in range(pooled[3]):
                for ow in range(pooled[4]):
                    pos = []
                    for i, o in enumerate((od, oh, ow)):
                        k, s, p = (v[i] if len(v) == 3 else v[0] for v in (kernel, stride, padding))
                        taps = [z for z in range(shape[2 + i]) if _in_window(z, o, k, s, p, 1)]
                        pos.append(taps[torch.randint(len(taps), (1,), generator=gen).item()])
                    idx[:, :, od, oh, ow] = (pos[0] * shape[3] + pos[1]) * shape[4] + pos[2]
        g = make_tensor(pooled, torch.float32)
        x = make_tensor(list(shape), torch.float32)
        args = (g, x, idx, kernel, stride, padding, [1], False)
        expected = torch.ops.torch_aclnn.max_pool3d_with_indices_backward(*args)
        got, flag = max_pool.backward(g, x, idx, kernel, stride, padding, [1], False, True)
        assert flag == max_pool.NONE and torch.equal(got, expected), (kernel, stride, padding)
        with pytest.raises(RuntimeError, match="32-bit kernels do not cover"):
            max_pool.backward(g, x, idx, kernel, stride, padding, [1], False, False)


def _cpu_bad_position(args):
    """The logical position (n*C + c)*oS + o the CPU kernel's IndexError
    names, or None when it raises none."""
    g, x = args[0], args[1]
    try:
        torch.ops.torch_aclnn.max_pool3d_with_indices_backward(*args)
        return None
    except IndexError as e:
        where = [int(v) for v in re.search(r"indices\[([0-9, ]+)\] = ", str(e)).group(1).split(",")]
    if x.dim() == 4:
        where.insert(1, 0)
    n, c, od, oh, ow = where
    C = x.shape[1] if x.dim() == 5 else 1
    oD, oH, oW = g.shape[-3:]
    return (n * C + c) * (oD * oH * oW) + (od * oH + oh) * oW + ow


def test_max_pool_bad_indices(max_pool):
    """An index outside its window (out of the plane, negative, or another
    window's position inside the plane) sets the flag to the logical position
    of the first one, the position the CPU kernel's IndexError names,
    whatever the layout, index dtype and width."""
    gen = torch.Generator().manual_seed(8)
    rng = random.Random(8)
    raised = 0
    cases = (((2, 3, 4, 4, 6), [2], [2], [0], [1], False), ((1, 2, 5, 7, 6), [3], [2], [1], [1], False),
             ((3, 4, 6, 5), [2, 3, 1], [2, 3, 1], [0], [1], False),
             ((1, 3, 6, 7, 5), [2, 2, 2], [1, 2, 1], [1, 0, 1], [2, 1, 2], True))
    for shape, kernel, stride, padding, dilation, ceil_mode in cases:
        idx0 = _pool_indices(shape, kernel, stride, padding, dilation, ceil_mode, gen)
        S = shape[-1] * shape[-2] * shape[-3]
        layouts = LAYOUTS if len(shape) == 5 else [la for la in LAYOUTS if la != "channels_last_3d"]
        for trial in range(8):
            idx = idx0.clone()
            flat = idx.view(-1)
            pos = torch.randperm(flat.numel(), generator=gen)[:1 + trial % 3]
            for q in pos.tolist():
                kind = rng.choice(("out", "negative", "other window"))
                if kind == "out":
                    flat[q] = rng.choice([S, S + 7, 2 ** 40])
                elif kind == "negative":
                    flat[q] = rng.choice([-1, -S, -(2 ** 40)])
                else:  # a position of the plane outside the window (another window's)
                    flat[q] = (int(flat[q]) + S // 2 + 1) % S if S > 1 else S
            for index_dtype in (torch.int64, torch.int32):
                if index_dtype == torch.int32 and idx.abs().max() >= 2 ** 31:
                    continue
                i = make_layout(idx.to(index_dtype), rng.choice(layouts))
                g = make_tensor(list(idx.shape), torch.float32, layout=rng.choice(layouts))
                x = make_tensor(list(shape), torch.float32)
                args = (g, x, i, kernel, stride, padding, dilation, ceil_mode)
                want = _cpu_bad_position(args)
                raised += want is not None
                for wide in (False, True):
                    _, flag = max_pool.backward(g, x, i, kernel, stride, padding, dilation, ceil_mode, wide)
                    assert flag == (max_pool.NONE if want is None else want), \
                        (shape, kernel, trial, index_dtype, wide, flag, want)
    assert raised > 30


# ---------------------------------------------------------------------------
# MaxPool3d forward: one thread per pooled element in the result's memory
# order running the contract's window_max, against the CPU kernel: values
# (bit for bit, NaN, -inf and signed zeros included) and indices equal, the
# same strides, in every dtype and both index widths.

MAX_POOL_FORWARD = "max_pool3d_with_indices"
_BITS = {torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16,
         torch.bfloat16: torch.int16}


def _max_pool_forward_check(max_pool, args, desc, widths=(False, True)):
    x, kernel, stride, padding, dilation, ceil_mode = args
    values, indices = torch.ops.torch_aclnn.max_pool3d_with_indices(*args)
    for wide in widths:
        got_values, got_indices = max_pool.forward(x, list(kernel), list(stride), list(padding), list(dilation),
                                                   ceil_mode, wide)
        where = f"{desc} wide={wide}"
        assert got_values.dtype == values.dtype and got_indices.dtype == torch.int64, where
        assert got_values.shape == values.shape and got_indices.shape == indices.shape, where
        assert got_values.stride() == values.stride() and got_indices.stride() == indices.stride(), where
        assert torch.equal(got_indices, indices), f"{where}: indices differ at " \
            f"{(got_indices != indices).nonzero()[:5].tolist()}"
        bits = _BITS[values.dtype]
        assert torch.equal(got_values.view(bits), values.view(bits)), f"{where}: values differ at " \
            f"{(got_values.view(bits) != values.view(bits)).nonzero()[:5].tolist()}"


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_max_pool_forward_samples(max_pool, dtype):
    """Every OpInfo sample of the forward (overlapping windows, dilation,
    ceil_mode, 4-D, every layout, ties and -inf windows, empty batch)."""
    n = 0
    for s in OPS[MAX_POOL_FORWARD].samples("cpu", dtype):
        _max_pool_forward_check(max_pool, s.args, s.desc)
        n += 1
    assert n > 10


def _special_values(shape, dtype, rng, gen):
    """Small integers (many ties, signed zeros) with NaN, +inf and -inf mixed
    in at random rates (up to whole windows of -inf or NaN)."""
    x = torch.randint(-2, 3, shape, generator=gen).to(torch.float64)
    x = torch.where(torch.rand(shape, generator=gen) < 0.5, x, -x)  # -0.0 as well as 0.0
    for value in (math.nan, math.inf, -math.inf):
        rate = rng.choice((0.0, 0.05, 0.3, 0.9))
        x = torch.where(torch.rand(shape, generator=gen) < rate, torch.full_like(x, value), x)
    return x.to(dtype)


def test_max_pool_forward_random(max_pool):
    """Random shapes (4-D and 5-D), windows (overlapping, dilated, padded,
    ceil_mode), layouts and dtypes, over values with NaN, +-inf and ties.
    Calls the contract refuses (a pooled size < 1, or a window whose taps
    all miss the input: a window starting in the padding whose dilation
    steps over it) are skipped, after checking that the emulation's
    contract refuses them too."""
    rng = random.Random(9)
    gen = torch.Generator().manual_seed(9)
    done = refused = 0
    while done < 150:
        kernel, stride, padding, dilation, ceil_mode = _random_window(rng)
        if rng.random() < 0.2:
            stride = []
        shape = [rng.randint(1, 2), rng.randint(1, 5)] + [rng.randint(1, 7) for _ in range(3)]
        if rng.random() < 0.25:
            shape = [shape[0]] + shape[2:]
        dtype = rng.choice(FLOATING)
        layout = rng.choice(LAYOUTS if len(shape) == 5 else [la for la in LAYOUTS if la != "channels_last_3d"])
        x = make_layout(_special_values(shape, dtype, rng, gen), layout)
        args = (x, kernel, stride, padding, dilation, ceil_mode)
        desc = f"{shape} k={kernel} s={stride} p={padding} d={dilation} ceil={ceil_mode} {layout} {dtype}"
        try:
            torch.ops.torch_aclnn.max_pool3d_with_indices(*args)
        except ValueError:
            with pytest.raises(ValueError):
                max_pool.forward(x, kernel, stride, padding, dilation, ceil_mode, True)
            refused += 1
            continue
        _max_pool_forward_check(max_pool, args, desc)
        done += 1
    assert refused > 0


def test_max_pool_forward_wide_windows(max_pool):
    """A pooling whose window arithmetic leaves forward_fits_32bit's bound
    ((pooled-1)*stride + (kernel-1)*dilation < 2^31; ceil_mode, a stride and a
    dilation near the input's size, the input a stride-0 expansion of one
    element) takes the 64-bit kernel (the conservative bound refuses the
    32-bit one, though the tensors and the backward's window arithmetic fit)
    and equals the CPU kernel: ties everywhere, so every index is its
    window's first tap."""
    A = 3 * 2 ** 29
    for five in (True, False):
        shape = (1, 1, 1, 1, A) if five else (1, 1, A, 1)
        x = torch.full((1,) * len(shape), 1.5).expand(shape)
        for axis in range(3):
            kernel, stride, dilation = [1, 1, 1], [1, 1, 1], [1, 1, 1]
            if shape[-3 + axis] != A:
                continue
            kernel[axis], stride[axis], dilation[axis] = 2, A - 1, A - 2
            args = (x, kernel, stride, [0], dilation, True)
            values, indices = torch.ops.torch_aclnn.max_pool3d_with_indices(*args)
            assert indices.flatten().tolist() == [0, A - 1], (shape, axis)
            _max_pool_forward_check(max_pool, args, f"{shape} axis {axis}", widths=(True,))
            with pytest.raises(RuntimeError, match="32-bit kernels do not cover"):
                max_pool.forward(x, kernel, stride, [0], dilation, True, False)


# ---------------------------------------------------------------------------
# per-element code, run in the result's memory order, against the CPU kernels,
# bit for bit (the same operations in the same order).

AVG_WINDOWS = (  # (shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    ((2, 3, 6, 7, 8), [2], [], [0], False, True, None),
    ((1, 4, 7, 6, 9), [3], [2], [1], True, False, None),
    ((2, 2, 5, 5, 7), [3, 2, 3], [1, 2, 2], [1, 1, 0], True, True, None),
    ((1, 3, 5, 6, 11), [2, 3, 5], [3, 2, 4], [1, 1, 2], False, False, -3),
    ((3, 5, 4, 6), [2, 3, 1], [1, 3, 1], [0], False, True, 7),  # 4-D
)


@pytest.fixture(scope="module")
def avg_pool(emulation):
    return emulation.avg_pool


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("cl", [False, True], ids=["contiguous", "channels_last_3d"])
def test_avg_pool_matches_the_cpu_kernels(avg_pool, dtype, cl):
    g = torch.Generator().manual_seed(3)
    for shape, *window in AVG_WINDOWS:
        x = torch.randn(shape, generator=g).to(dtype)
        if cl and x.dim() == 5:
            x = x.contiguous(memory_format=torch.channels_last_3d)
        want = torch.ops.torch_aclnn.avg_pool3d(x, *window)
        got = avg_pool.forward(x, *window, cl)
        assert torch.equal(got, want), (shape, window, dtype)
        go = torch.randn(want.shape, generator=g).to(dtype)
        if cl and x.dim() == 5:
            go = go.contiguous(memory_format=torch.channels_last_3d)
        want = torch.ops.torch_aclnn.avg_pool3d_backward(go, x, *window)
        got = avg_pool.backward(go, x, *window, cl)
        assert torch.equal(got, want), (shape, window, dtype)
