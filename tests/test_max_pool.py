"""max_pool3d_with_indices and its backward (docs/spec.md §9) beyond the generic
OpInfo tests of tests/test_common.py: the worked example, parity with torch's
own max_pool3d and its gradient, determinism (thread counts, devices,
use_deterministic_algorithms), the Python wrappers' arguments, int32 indices,
and the drop-in decisions that hand calls to torch."""
import pytest
import torch
import torch.nn.functional as F

import torch_aclnn as ta
from torch_aclnn import _dropin
from torch_aclnn.testing import make_layout, node_name

ops = torch.ops.torch_aclnn


def test_worked_example():
    """docs/spec.md §9: [1, 3, 2, 5] pooled by windows of 2 along W, stride 1."""
    x = torch.tensor([1.0, 3.0, 2.0, 5.0]).view(1, 1, 1, 1, 4)
    pooled, idx = F.max_pool3d(x, [1, 1, 2], 1, return_indices=True)
    assert pooled.flatten().tolist() == [3.0, 3.0, 5.0] and idx.flatten().tolist() == [1, 1, 3]
    g = torch.tensor([10.0, 20.0, 30.0]).view(1, 1, 1, 1, 3)
    gx = ta.max_pool3d_with_indices_backward(g, x, idx, [1, 1, 2], 1)
    assert gx.flatten().tolist() == [0.0, 30.0, 0.0, 30.0]
    buf = torch.full((1, 1, 1, 4, 1), float("nan")).transpose(-1, -2)  # any layout for out=
    assert ta.max_pool3d_with_indices_backward(g, x, idx, [1, 1, 2], 1, out=buf) is buf
    assert torch.equal(buf, gx)


# (input shape, kernel_size, stride, padding, dilation, ceil_mode, dtype, layout)
CASES = [
    ((2, 3, 8, 8, 8), 2, None, 0, 1, False, torch.float32, "contiguous"),
    ((1, 2, 7, 9, 8), 3, 2, 1, 1, False, torch.float64, "contiguous"),
    ((2, 4, 6, 7, 6), 3, 1, 1, 1, True, torch.float32, "channels_last_3d"),
    ((3, 6, 7, 6), (2, 3, 2), (1, 2, 1), 0, (2, 1, 1), False, torch.float32, "permuted"),  # 4-D
    ((2, 2, 5, 6, 7), (1, 2, 2), None, (0, 1, 1), 1, True, torch.float64, "sliced"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{list(c[0])}-k{c[1]}-s{c[2]}-{c[7]}")
def test_matches_torch_autograd(case):
    """The gradient torch's autograd computes for F.max_pool3d, bitwise (float32/float64,
    where both add a position's terms in increasing pooled position)."""
    shape, k, s, p, d, ceil, dtype, layout = case
    x = make_layout(torch.randn(shape, dtype=dtype), layout).requires_grad_()
    pooled, idx = F.max_pool3d(x, k, s, p, d, ceil, return_indices=True)
    g = torch.randn_like(pooled)
    (expected,) = torch.autograd.grad(pooled, x, g)
    got = ta.max_pool3d_with_indices_backward(g, x.detach(), idx, k, s, p, d, ceil)
    assert torch.equal(got, expected)
    assert got.is_contiguous(memory_format=torch.channels_last_3d if layout == "channels_last_3d"
                             else torch.contiguous_format)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last_3d"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_same_bits_on_any_thread_count(layout, dtype):
    """(channels_last_3d: the blocks of channels per task depend on the thread
    count and the batch.)"""
    x = make_layout(torch.randn(2, 40, 9, 10, 11), layout)
    _, idx = F.max_pool3d(x, 3, 1, 1, return_indices=True)  # every position in up to 27 windows
    g = make_layout(torch.randn(idx.shape, dtype=dtype), layout)
    threads = torch.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3, 5):
            torch.set_num_threads(n)
            results.append(ta.max_pool3d_with_indices_backward(g, x.to(dtype), idx, 3, 1, 1))
            results.append(ta.max_pool3d_with_indices_backward(g[:1], x[:1].to(dtype), idx[:1], 3, 1, 1))
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(r, results[i % 2]) for i, r in enumerate(results))
    # float32 sums in aten's order, rounded once to bfloat16
    want = torch.ops.aten.max_pool3d_with_indices_backward(g.float(), x, [3], [1], [1], [1], False, idx)
    assert torch.equal(results[0], want.to(dtype)) and torch.equal(results[1], want[:1].to(dtype))
    # NaN terms: the same bits too (every sum rounded by the same conversion, wherever a block of
    # channels ends)
    g[..., ::3] = float("nan")
    bits = []
    try:
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            for b in (2, 1):
                r = ta.max_pool3d_with_indices_backward(g[:b], x[:b].to(dtype), idx[:b], 3, 1, 1)
                bits.append(_bits(r))
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(b, bits[i % 2]) for i, b in enumerate(bits))
    assert bool(r.isnan().any())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_backward_of_kernels_past_the_table(dtype):
    """Kernels of more than 10 taps along D (no TapCheck table: every index
    split on each axis), channels_last_3d with overlapping windows: the
    float32 ring of D-planes for float16/bfloat16. aten's result."""
    for shape, k in (((2, 2, 11, 1, 1), [11, 1, 1]), ((2, 2, 12, 3, 3), [11, 2, 2]), ((3, 2, 40, 1, 1), [33, 1, 1])):
        x = torch.randn(shape).to(dtype).contiguous(memory_format=torch.channels_last_3d)
        w = (k, [1, 1, 1], [0, 0, 0], [1, 1, 1], False)
        _, idx = torch.ops.aten.max_pool3d_with_indices(x.float().contiguous(), *w)
        go = torch.randn(idx.shape).to(dtype).contiguous(memory_format=torch.channels_last_3d)
        got = ops.max_pool3d_with_indices_backward(go, x, idx.contiguous(memory_format=torch.channels_last_3d), *w)
        want = torch.ops.aten.max_pool3d_with_indices_backward(go.float(), x.float(), *w, idx).to(dtype)
        assert torch.equal(got, want), (shape, k)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last_3d"])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_backward_checks_each_index_against_its_own_window(layout, index_dtype):
    """Row 12 on the scatter paths (overlapping windows): a window whose taps
    all lie inside self is checked by its taps' offsets from its first
    position, others tap by tap, and a span of offsets past the table's limit
    (2^20) falls back to the latter. Positions in the window's bounding span
    but not taps, and just outside it, are bad; its corners are good."""
    def run(size, k, s, p, o, plant):
        x = make_layout(torch.randn(size), layout)
        _, idx = F.max_pool3d(x, k, s, p, return_indices=True)
        idx = make_layout(idx.to(index_dtype), layout)
        g = make_layout(torch.randn(idx.shape), layout)
        bad = idx.clone()
        bad[(0, 1) + o] = plant
        where = ", ".join(str(v) for v in (0, 1) + o)
        return x, g, idx, bad, where

    D, H, W = 7, 8, 9
    k, s, p = 3, 2, 1
    o = (1, 2, 1)  # an interior window: it starts at (1, 3, 1)
    base = (1 * H + 3) * W + 1
    for plant in (base + 3, base + W + 3, base + 3 * W, base - 1, base + 2 * H * W + 2 * W + 3, base + H * W - W,
                  base + 2 * H * W + 3 * W, -base, base + 2 ** (32 if index_dtype == torch.int64 else 30)):
        x, g, idx, bad, where = run((2, 3, D, H, W), k, s, p, o, plant)
        with pytest.raises(IndexError, match=rf"indices\[{where}\] = {plant} is not a position"):
            ta.max_pool3d_with_indices_backward(g, x, bad, k, s, p)
    for plant in (base, base + 2, base + 2 * W, base + 2 * H * W + 2 * W + 2, base + H * W + W + 1):
        x, g, idx, good, _ = run((2, 3, D, H, W), k, s, p, o, plant)
        want = torch.ops.aten.max_pool3d_with_indices_backward(g, x, [k], [s], [p], [1], False, good.long())
        assert torch.equal(ta.max_pool3d_with_indices_backward(g, x, good, k, s, p), want)
    # a border window (starts in the padding), checked tap by tap
    x, g, idx, good, _ = run((2, 3, D, H, W), k, s, p, (0, 0, 0), W)  # (0, 1, 0): a tap
    want = torch.ops.aten.max_pool3d_with_indices_backward(g, x, [k], [s], [p], [1], False, good.long())
    assert torch.equal(ta.max_pool3d_with_indices_backward(g, x, good, k, s, p), want)
    x, g, idx, bad, where = run((2, 3, D, H, W), k, s, p, (0, 0, 0), 2)  # (0, 0, 2): not a tap
    with pytest.raises(IndexError, match=rf"indices\[{where}\] = 2 is not a position"):
        ta.max_pool3d_with_indices_backward(g, x, bad, k, s, p)
    # the span of (2, 1, 1) taps over planes of 1025 x 1024: 2^20 + 1025 offsets, past the table
    k, s, p = [2, 1, 1], [1, 1, 1], 0
    x, g, idx, bad, where = run((1, 2, 2, 1025, 1024), k, s, p, (0, 7, 5), 7 * 1024 + 6)
    with pytest.raises(IndexError, match=rf"indices\[{where}\] = {7 * 1024 + 6} is not a position"):
        ta.max_pool3d_with_indices_backward(g, x, bad, k, s, p)
    want = torch.ops.aten.max_pool3d_with_indices_backward(g, x, k, s, [p], [1], False, idx.long())
    assert torch.equal(ta.max_pool3d_with_indices_backward(g, x, idx, k, s, p), want)


def test_half_rounds_once():
    """float16 sums in float32 and rounds once: the float64 sum rounded, where
    rounding after every addition (aten) would drift."""
    x = torch.zeros(1, 1, 1, 1, 40)
    x[..., 20] = 1.0  # the maximum of every window of 21 that covers it
    _, idx = F.max_pool3d(x, [1, 1, 21], 1, [0, 0, 10], return_indices=True)
    assert (idx == 20).sum() == 21
    g = torch.where(idx == 20, 1.0 + 2 ** -10, 0.0).half()  # exact in float16
    got = ta.max_pool3d_with_indices_backward(g, x.half(), idx, [1, 1, 21], 1, [0, 0, 10])
    exact = 21 * (1.0 + 2 ** -10)
    assert got[..., 20].item() == torch.tensor(exact).half().item() == 21.015625
    assert (got[..., :20] == 0).all() and (got[..., 21:] == 0).all()


def test_bfloat16_differs_from_aten_only_at_three_terms():
    """aten's CPU backward rounds after each addition; one rounding of a float32
    sum of two bfloat16 terms is the same, of three it is not always."""
    gen = torch.Generator().manual_seed(3)
    x = torch.zeros(1, 1, 1, 1, 41, dtype=torch.bfloat16)
    k, s = [1, 1, 5], [1, 1, 2]
    _, idx = F.max_pool3d(x, k, s, return_indices=True)  # windows o over [2o, 2o + 4]
    idx = idx.clone()
    idx[..., 3], idx[..., 4] = 8, 8  # two terms at 8
    idx[..., 8], idx[..., 9], idx[..., 10] = 20, 20, 20  # three terms at 20
    differ = [0] * 41
    for _ in range(200):
        g = (torch.randn(idx.shape, generator=gen) * torch.randn(idx.shape, generator=gen).mul(4).exp()).bfloat16()
        ours = ta.max_pool3d_with_indices_backward(g, x, idx, k, s)
        aten = torch.ops.aten.max_pool3d_with_indices_backward(g, x, k, s, [0], [1], False, idx)
        once = torch.ops.aten.max_pool3d_with_indices_backward(g.float(), x.float(), k, s, [0], [1], False, idx)
        assert torch.equal(ours, once.bfloat16())
        for p in range(41):
            differ[p] += not torch.equal(ours[..., p], aten[..., p])
    assert differ[20] > 0 and sum(differ) == differ[20]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_is_deterministic_and_gives_the_cpu_bits():
    x = torch.randn(2, 8, 12, 12, 12)
    _, idx = F.max_pool3d(x, 3, 1, 1, return_indices=True)
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        g = torch.randn(idx.shape).to(dtype)
        cpu = ta.max_pool3d_with_indices_backward(g, x.to(dtype), idx, 3, 1, 1)
        was = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)
        try:
            with pytest.raises(RuntimeError):
                torch.ops.aten.max_pool3d_with_indices_backward(g.cuda(), x.to(dtype).cuda(), [3], [1], [1], [1],
                                                                False, idx.cuda())
            runs = [ta.max_pool3d_with_indices_backward(g.cuda(), x.to(dtype).cuda(), idx.cuda(), 3, 1, 1)
                    for _ in range(2)]
        finally:
            torch.use_deterministic_algorithms(was)
        assert torch.equal(runs[0], runs[1]) and torch.equal(runs[0].cpu(), cpu), dtype


def test_int32_indices():
    x = torch.randn(2, 3, 6, 6, 6)
    _, idx = F.max_pool3d(x, 3, 2, 1, return_indices=True)
    g = torch.randn(idx.shape)
    assert torch.equal(ta.max_pool3d_with_indices_backward(g, x, idx.int(), 3, 2, 1),
                       ta.max_pool3d_with_indices_backward(g, x, idx, 3, 2, 1))


def test_wrapper_arguments():
    """kernel_size/padding/dilation: an int or 1 or 3 ints; stride None = kernel_size;
    the same call as the operator with the lists expanded."""
    x = torch.randn(1, 2, 6, 8, 6)
    _, idx = F.max_pool3d(x, (2, 3, 2), None, (1, 1, 0), return_indices=True)
    g = torch.randn(idx.shape)
    expected = ops.max_pool3d_with_indices_backward(g, x, idx, [2, 3, 2], [2, 3, 2], [1, 1, 0], [1, 1, 1], False)
    assert torch.equal(ta.max_pool3d_with_indices_backward(g, x, idx, (2, 3, 2), None, (1, 1, 0)), expected)
    assert torch.equal(ops.max_pool3d_with_indices_backward(g, x, idx, [2, 3, 2], [], [1, 1, 0], [1], False),
                       expected)
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161001\] max_pool3d_with_indices_backward: kernel_size"):
        ta.max_pool3d_with_indices_backward(g, x, idx, None)
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] max_pool3d_with_indices_backward: kernel_size"):
        ta.max_pool3d_with_indices_backward(g, x, idx, 2.5)
    with pytest.raises(TypeError, match=r"ceil_mode must be a bool"):
        ta.max_pool3d_with_indices_backward(g, x, idx, (2, 3, 2), None, (1, 1, 0), 1, "yes")


def test_forward_matches_torch_and_differentiates():
    """torch_aclnn.max_pool3d_with_indices gives F.max_pool3d's values and indices,
    and its gradient is the backward operator's (grad_fn names the C++ node)."""
    for shape, args in (((2, 3, 7, 6, 5), (3, 2, 1, 1, True)), ((3, 6, 7, 6), ((2, 3, 2), (1, 2, 1), 0, (2, 1, 1)))):
        x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        want_v, want_i = F.max_pool3d(x, *args, return_indices=True)
        got_v, got_i = ta.max_pool3d_with_indices(x, *args)
        assert torch.equal(got_v, want_v) and torch.equal(got_i, want_i)
        assert got_v.grad_fn.name() == node_name("max_pool3d_with_indices") and not got_i.requires_grad
        g = torch.randn_like(want_v)
        assert torch.equal(torch.autograd.grad(got_v, x, g)[0], torch.autograd.grad(want_v, x, g)[0])
        assert torch.equal(ta.max_pool3d(x, *args), want_v)


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def test_forward_window_rule_on_every_path():
    """The CPU forward's paths (rows of NCDHW planes with stride 1, 2 or
    another, channels_last_3d with whole vectors of channels and a tail,
    strided planes, 4-D; rows of whole vectors of windows and a tail, and
    rows of at most one vector, folded in registers, with left padding) give
    aten's NCDHW values and indices for random windows over data with ties
    (-0 against +0 too), NaN and -inf, and each value is the element its index names, bit for bit
    (NaN payloads, which aten's float16/bfloat16 results do not keep). Small
    NCDHW planes also fold K planes at once (a vector's lanes), as one run
    of planes or, sliced from more channels, per N. aten's
    own channels_last_3d CPU kernel is not the reference: for a window whose
    taps are all -inf it returns an index without the window's depth offset
    (outside the window); docs/spec.md §9."""
    gen = torch.Generator().manual_seed(0)

    def pick(lo, hi):
        return int(torch.randint(lo, hi + 1, (), generator=gen))

    compared = 0
    for trial in range(300):
        k = [pick(1, 4) for _ in range(3)]
        s = [pick(1, 3) for _ in range(3)]
        d = [(1, 1, 2)[pick(0, 2)] for _ in range(3)]
        p = [pick(0, kk // 2) for kk in k]
        # small planes (NCDHW: K planes' windows in the lanes of a vector, forward_plane_lanes, or
        # rows of a vector of windows at most); wide rows; many rows of at most a vector of windows
        size = ([pick(1, 9), pick(1, 9), pick(1, 9)], [pick(1, 9), pick(1, 9), pick(30, 80)],
                [pick(100, 120), pick(10, 12), pick(9, 12)])[trial // 3 % 3]
        dtype = (torch.float32, torch.float64, torch.bfloat16, torch.float16)[(trial + trial // 4) % 4]
        channels = pick(1, 5) if pick(0, 1) else pick(16, 40)  # a vector of channels or more, and a tail
        x = torch.randint(-3, 3, (pick(1, 2), channels, *size), generator=gen).to(dtype)
        special = torch.rand(x.shape, generator=gen)
        x[special < 0.15] = float("nan") if trial % 3 == 0 else x[special < 0.15]
        if trial % 3 == 0:  # NaNs with distinct payloads and signs
            bits = _bits(x)  # (a view: x is contiguous)
            bits[x.isnan()] ^= torch.randint(1, 64, (int(x.isnan().sum()),), generator=gen).to(bits.dtype)
            bits[(special < 0.05) & x.isnan()] |= torch.tensor(-1, dtype=bits.dtype).bitwise_left_shift(
                8 * x.element_size() - 1)
        x[special > 0.6] = float("-inf") if trial % 3 == 1 else x[special > 0.6]
        if trial % 3 == 2:  # -0 and +0 tie: the value is the element at its index, sign included
            x[(x == 0) & (special < 0.4)] = -0.0
        ceil = trial % 5 == 0
        try:
            want_v, want_i = torch.ops.aten.max_pool3d_with_indices(x, k, s, p, d, ceil)
        except RuntimeError:
            continue  # outside aten's rules
        for layout in ("contiguous", "channels_last_3d", "permuted", "sliced", "4d", "channels of more"):
            xl = (x[0] if layout == "4d" else torch.cat([x, x], 1)[:, :channels] if layout == "channels of more"
                  else make_layout(x, layout))
            try:
                got_v, got_i = ops.max_pool3d_with_indices(xl, k, s, p, d, ceil)
            except ValueError as e:  # a window with no tap inside self (row 9): refused, not computed
                assert "must have a tap inside self" in str(e), e
                break
            v, i = (want_v[0], want_i[0]) if layout == "4d" else (want_v, want_i)
            assert torch.equal(got_i, i), (k, s, p, d, size, dtype, layout)
            assert torch.equal(got_v.isnan(), v.isnan()) and torch.equal(got_v.nan_to_num(), v.nan_to_num())
            planes = x[:1] if layout == "4d" else x
            # (gathered as integers: torch's gather of bfloat16 NaNs does not keep their bits)
            named = _bits(planes.flatten(2)).gather(2, i.reshape(*planes.shape[:2], -1)).reshape(v.shape)
            assert torch.equal(_bits(got_v), named), (k, s, p, d, size, dtype, layout)
            compared += 1
    assert compared > 600
    x = torch.full((1, 2, 3, 1, 9), float("-inf")).contiguous(memory_format=torch.channels_last_3d)
    assert ops.max_pool3d_with_indices(x, [2, 4, 3], [2, 2, 3], [0, 2, 0], [1], True)[1][0, 0, 1, 0].tolist() == \
        [18, 21, 24]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_forward_rows_of_whole_vectors_end_at_the_last_element(dtype):
    """NCDHW rows whose windows fill whole vectors (16 or 32 pooled
    positions, stride 1 and 2) and rows one tap short of them, in tensors
    that end at the row's last element: the vector loads read no element past
    the last tap (the asan build checks), and the results are aten's."""
    for w_size in (31, 32, 33, 63, 64, 65):
        for kernel, stride, padding in ((2, 2, 0), (3, 2, 1), (1, 1, 0), (2, 1, 0), (3, 1, 1)):
            x = torch.randn(1, 1, 2, 2, w_size).to(dtype)
            x[..., -1] = float("nan") if w_size % 2 else float("inf")  # the last element wins where it is read
            window = ([1, 1, kernel], [1, 1, stride], [0, 0, padding], [1], False)
            got = ops.max_pool3d_with_indices(x, *window)
            want = torch.ops.aten.max_pool3d_with_indices(x, *window)
            assert torch.equal(got[1], want[1]), (w_size, kernel, stride)
            assert torch.equal(_bits(got[0]), _bits(want[0])) or dtype in (torch.float16, torch.bfloat16)
            assert torch.equal(got[0].nan_to_num(), want[0].nan_to_num())


@pytest.mark.parametrize("window", [(3, 2, 1, 1), (3, 1, 1, 2), ((2, 3, 3), (1, 2, 1), (1, 1, 0), (2, 1, 1))],
                         ids=["k3s2p1", "k3s1p1d2", "mixed"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last_3d"])
def test_backward_takes_exactly_the_taps_of_each_window(window, layout):
    """Row 12 at every pooled position, windows in the padding included: an
    index is accepted iff it is a tap of its own window inside self, tried
    for every value from -1 to D*H*W. A position one row or plane before a
    window that starts in the padding is the flat neighbour of a tap outside
    self, and is refused."""
    k, s, p, d = window
    x = torch.randn(1, 2, 4, 5, 6)
    _, idx = ta.max_pool3d_with_indices(x, *window)
    k3, s3, p3, d3 = ([v] * 3 if isinstance(v, int) else list(v) for v in (k, s, p, d))
    size, pooled = x.shape[2:], idx.shape[2:]

    def taps(o):  # the window's taps inside self, as flat positions
        axes = [[o[a] * s3[a] - p3[a] + t * d3[a] for t in range(k3[a])] for a in range(3)]
        axes = [[c for c in axis if 0 <= c < size[a]] for a, axis in enumerate(axes)]
        return {(z * size[1] + y) * size[2] + w for z in axes[0] for y in axes[1] for w in axes[2]}

    go = torch.ones(idx.shape)
    checked = 0
    for o in [(a, b, c) for a in range(pooled[0]) for b in range(pooled[1]) for c in range(pooled[2])]:
        inside = taps(o)
        for v in range(-1, x[0, 0].numel() + 1):
            bad = idx.clone()
            bad[0, 1][o] = v
            call = lambda: ta.max_pool3d_with_indices_backward(go, make_layout(x, layout), bad, *window)
            if v in inside:
                call()
            else:
                with pytest.raises(IndexError, match="is not a position of that output's pooling window"):
                    call()
            checked += 1
    assert checked == idx[0, 0].numel() * (x[0, 0].numel() + 2)


def test_backward_paths_match_aten_and_find_the_first_bad_index():
    """The CPU backward's paths (the write pass of disjoint windows, packed or
    not, with clamped windows at the edges; the scatter of overlapping ones;
    channels_last_3d, both passes, with vectors of channels and a tail;
    strided grad_output and indices; narrow rows, which scatter, and wide
    ones) give aten's result for
    random windows: float32/float64 bitwise, float16/bfloat16 as aten's
    float32 result rounded once. A bad index planted at a random pooled
    position is the one reported, also behind a later one."""
    gen = torch.Generator().manual_seed(1)

    def pick(lo, hi):
        return int(torch.randint(lo, hi + 1, (), generator=gen))

    layouts = ("contiguous", "channels_last_3d", "permuted", "sliced")
    compared = 0
    for trial in range(160):
        k = [pick(1, 3) for _ in range(3)]
        disjoint = trial % 3 != 0
        s = [kk + pick(0, 1) if disjoint else pick(1, 3) for kk in k]
        d = [1 if disjoint or trial % 2 else pick(1, 2) for _ in range(3)]
        p = [pick(0, kk // 2) for kk in k]
        size = [pick(2, 9), pick(2, 9), pick(2, 9) if trial % 2 else pick(64, 100)]  # (narrow and wide rows)
        dtype = (torch.float32, torch.float64, torch.bfloat16, torch.float16)[(trial + trial // 4) % 4]
        channels = pick(1, 3) if trial % 8 < 4 else pick(16, 40)  # (vectors of channels and a tail)
        x = torch.randn(pick(1, 2), channels, *size, generator=gen, dtype=torch.float64)
        w = (k, s, p, d, trial % 5 == 0)
        try:
            _, idx = ops.max_pool3d_with_indices(x, *w)
        except ValueError:
            continue  # a window with no tap inside self (row 9)
        go = torch.randn(idx.shape, generator=gen, dtype=torch.float64)
        go[torch.rand(idx.shape, generator=gen) < 0.1] = -0.0
        reduced = dtype in (torch.float16, torch.bfloat16)
        want = torch.ops.aten.max_pool3d_with_indices_backward(
            go.to(dtype).float() if reduced else go.to(dtype), x.to(torch.float32 if reduced else dtype), *w, idx)
        want = want.to(dtype)
        xs = make_layout(x.to(dtype), layouts[trial % 4])
        g = make_layout(go.to(dtype), layouts[(trial // 4) % 4])
        ix = make_layout(idx.int() if trial % 7 == 0 else idx, layouts[(trial // 16) % 4])
        got = ops.max_pool3d_with_indices_backward(g, xs, ix, *w)
        assert torch.equal(got, want) and torch.equal(got.signbit(), want.signbit()), (w, size, dtype)
        compared += 1
        bad = idx.clone().flatten()
        first, later = sorted(torch.randperm(bad.numel(), generator=gen)[:2].tolist()) if bad.numel() > 1 else (0, 0)
        bad[later] = -1
        plane = idx.shape[-3:].numel()
        if trial % 2 and disjoint and plane > 1:  # a position of the next window in the plane (not of this one)
            bad[first] = idx.flatten()[first + 1 if (first + 1) % plane else first - 1]
        else:
            bad[first] = x[0, 0].numel() if trial % 2 else -5  # outside the plane
        bad = bad.view(idx.shape)
        where = ", ".join(str(int(v)) for v in torch.unravel_index(torch.tensor(first), idx.shape))
        with pytest.raises(IndexError, match=rf"indices\[{where}\] = {int(bad.flatten()[first])} is not a position"):
            ops.max_pool3d_with_indices_backward(g, xs, make_layout(bad, layouts[trial % 4]), *w)
    assert compared > 120


@pytest.mark.parametrize("window", [([1], [1], [0]), ([2], [2], [1]), ([3], [2], [1])])
def test_backward_of_one_position_per_plane(window):
    """D = H = W = 1 with several channels: every layout has adjacent channels
    there, and strides that say nothing about the planes' layout; the result
    and the out= form are aten's."""
    x = torch.randn(2, 3, 1, 1, 1, dtype=torch.float64)
    k, s, p = window
    w = (k, s, p, [1], False)
    v, idx = ops.max_pool3d_with_indices(x, *w)
    go = torch.randn_like(v)
    want = torch.ops.aten.max_pool3d_with_indices_backward(go, x, *w, idx)
    for layout in ("contiguous", "channels_last_3d"):
        xl = make_layout(x, layout)
        assert torch.equal(ops.max_pool3d_with_indices_backward(go, xl, idx, *w), want)
        out = torch.full_like(xl, float("nan"))
        ops.max_pool3d_with_indices_backward.grad_input(go, xl, idx, *w, grad_input=out)
        assert torch.equal(out, want)
    with pytest.raises(IndexError, match=r"indices\[1, 2, 0, 0, 0\] = 1 is not a position"):
        ops.max_pool3d_with_indices_backward(go, x, torch.where(torch.arange(6).view(idx.shape) == 5, 1, idx), *w)


@pytest.fixture
def pool_routed_on_cpu(monkeypatch):
    """The drop-in leaves F.max_pool3d on the CPU to torch (its backward is
    deterministic there); these tests exercise the routing on the CPU."""
    monkeypatch.setattr(_dropin, "ROUTE_POOL_ON_CPU", True)


def test_dropin_leaves_the_cpu_to_torch():
    x = torch.randn(1, 2, 4, 4, 4, requires_grad=True)
    with ta.patched(level="function") as stats:
        got, idx = F.max_pool3d(x, 2, return_indices=True)
        assert F.max_pool3d(x, 2).grad_fn.name() == got.grad_fn.name() == "MaxPool3DWithIndicesBackward0"
    assert stats.total_routed() == 0 and stats.passed == {"max_pool3d_with_indices": 1, "max_pool3d": 1}, stats
    assert all("device 'cpu'" in reason for _, reason in stats.reasons)


@pytest.mark.usefixtures("pool_routed_on_cpu")
def test_pool_unpool_model_routed_and_deterministic():
    """Under patch(), MaxPool3d(return_indices=True) + MaxUnpool3d run on torch_aclnn,
    forward and backward, under use_deterministic_algorithms(True), and two runs are
    bitwise equal (torch alone refuses max_unpool3d there)."""
    model = torch.nn.Sequential(torch.nn.Conv3d(2, 4, 3, padding=1), torch.nn.ELU())
    pool, unpool = torch.nn.MaxPool3d(3, 2, 1, return_indices=True), torch.nn.MaxUnpool3d(3, 2, 1)
    x = torch.randn(2, 2, 8, 8, 8)
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        grads = []
        for _ in range(2):
            model.zero_grad()
            with ta.patched(level="function") as stats:
                y = model(x)
                p, i = pool(y)
                unpool(p, i, output_size=y.shape[-3:]).square().sum().backward()
            grads.append([q.grad.clone() for q in model.parameters()])
            assert stats.routed.get("max_pool3d_with_indices") == 1 and stats.routed.get("max_unpool3d") == 1, stats
    finally:
        torch.use_deterministic_algorithms(was)
    assert all(torch.equal(a, b) for a, b in zip(*grads))


@pytest.mark.usefixtures("pool_routed_on_cpu")
def test_dropin_hands_calls_outside_the_contract_to_torch():
    """A window with no tap inside the input, a channels_last 4-D input and (without
    indices) float16/bfloat16 under CPU autocast are torch's: same results (or error)."""
    x = torch.randn(1, 2, 3, 3, 2)
    cases = [
        (x, dict(kernel_size=2, stride=1, padding=1, dilation=3, return_indices=True)),  # taps -1, 2 on W = 2
        (torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last), dict(kernel_size=2)),
    ]
    for t, kw in cases:
        with ta.patched(level="function") as stats:
            try:
                got = F.max_pool3d(t, **kw)
            except RuntimeError as e:
                got = e
        try:
            want = F.max_pool3d(t, **kw)
        except RuntimeError as e:
            want = e
        assert stats.total_routed() == 0 and sum(stats.passed.values()) == 1, stats
        if isinstance(want, Exception):
            assert type(got) is type(want) and str(got) == str(want)
        else:
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    with torch.autocast("cpu", torch.bfloat16):
        with ta.patched(level="function") as stats:
            got = F.max_pool3d(x.bfloat16(), 2)
            got_i = F.max_pool3d(x.bfloat16(), 2, return_indices=True)
        assert got.dtype == F.max_pool3d(x.bfloat16(), 2).dtype == torch.float32
        assert got_i[0].dtype == torch.bfloat16
    assert stats.passed.get("max_pool3d") == 1 and stats.routed.get("max_pool3d_with_indices") == 1, stats


@pytest.mark.usefixtures("pool_routed_on_cpu")
def test_dropin_decision_under_dynamic_compile():
    """The decision's size rules hold for symbolic sizes too: a window with no tap
    inside the input goes to torch under torch.compile(dynamic=True) as in eager."""
    def fn(t):
        return F.max_pool3d(t, 2, 1, 1, 3, return_indices=True)

    torch._dynamo.reset()
    compiled = torch.compile(fn, dynamic=True, fullgraph=True, backend="eager")
    for w in (2, 5):  # W = 2: a window without a tap (torch's); W = 5: routed
        x = torch.randn(1, 2, 6, 5, w)
        with ta.patched(level="function"):
            got = compiled(x)
        want = fn(x)
        torch.testing.assert_close(got, want, rtol=0, atol=0)

