"""The upsample-nearest family (docs/spec.md §1, §2): what the generic OpInfo tests in
test_common.py do not cover — worked examples, the spec's deliberate
differences from aten, the F.interpolate-style API, layouts and a compiled
training step."""
import pytest
import torch
import torch.nn.functional as F

import torch_aclnn
from torch_aclnn.testing import make_tensor, tolerance
from torch_aclnn.testing.upsample import reference_backward, reference_forward

ops = torch.ops.torch_aclnn
# (ours, aten's) backward of each mode
BACKWARDS = ((ops.upsample_nearest3d_backward, torch.ops.aten.upsample_nearest3d_backward),
             (ops.upsample_nearest_exact3d_backward, torch.ops.aten._upsample_nearest_exact3d_backward))
MODES = {
    "nearest": (torch_aclnn.upsample_nearest3d, ops.upsample_nearest3d, ops.upsample_nearest3d_backward),
    "nearest-exact": (torch_aclnn.upsample_nearest_exact3d, ops.upsample_nearest_exact3d,
                      ops.upsample_nearest_exact3d_backward),
}


@pytest.mark.parametrize("mode", MODES)
def test_worked_example(mode, device):
    """§1/§2: grad_output = arange(1, 33).view(2,2,2,2,2) onto 1x1x1 inputs."""
    go = torch.arange(1, 33, dtype=torch.float32, device=device).view(2, 2, 2, 2, 2)
    gi = MODES[mode][2](go, [2, 2, 2], [2, 2, 1, 1, 1], 0.0, 0.0, 0.0)
    assert gi.shape == (2, 2, 1, 1, 1)
    assert gi.flatten().tolist() == [36.0, 100.0, 164.0, 228.0]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kwargs", [
    dict(scale_factor=2), dict(scale_factor=1.5), dict(scale_factor=0.5), dict(scale_factor=(2, 1.5, 0.75)),
    dict(size=(7, 9, 5)), dict(size=6), dict(scale_factor=1.7, recompute_scale_factor=True),
], ids=str)
def test_matches_interpolate_forward_and_grad(mode, kwargs, device):
    """Same values and gradients as F.interpolate wherever aten's mapping equals the spec's."""
    fn = MODES[mode][0]
    x = make_tensor((2, 3, 4, 6, 5), torch.float32, device, requires_grad=True)
    ours = fn(x, **kwargs)
    theirs = F.interpolate(x, mode=mode, **kwargs)
    assert torch.equal(ours, theirs)
    g = torch.randn_like(theirs)
    (ga,) = torch.autograd.grad(ours, x, g)
    (gb,) = torch.autograd.grad(theirs, x, g)
    assert torch.equal(ga, gb)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("channels", [1, 5, 16, 17, 40, 130])
def test_channels_last_forward_vector_and_tail_channels(channels, dtype):
    """The CPU channels_last_3d forward copies each pixel's channels in whole
    vectors and a partial tail: bitwise aten's for every channel count and dtype."""
    x = make_tensor((2, channels, 3, 4, 5), dtype, "cpu", layout="channels_last_3d")
    for out_size in ([6, 8, 10], [4, 6, 7], [2, 2, 2]):
        for ours, theirs in ((ops.upsample_nearest3d, torch.ops.aten.upsample_nearest3d),
                             (ops.upsample_nearest_exact3d, torch.ops.aten._upsample_nearest_exact3d)):
            got = ours(x, out_size)
            assert got.is_contiguous(memory_format=torch.channels_last_3d)
            assert torch.equal(got, theirs(x, out_size)), (out_size, ours)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("iw", [16, 17, 33, 64, 100])
def test_backward_scaling_of_long_rows(iw, dtype):
    """Up-scaling W by less than 2, or down-scaling it, with rows of 16 or
    more: the CPU backward folds whole blocks of 16 windows (of 0, 1 or 2
    outputs) with vector permutes (AVX512 builds; float32/half/bfloat16 sum a
    block over the window's rows in one register) and the rest with the tap
    loop; by exactly 2: blocks of 2 vectors summed in registers (bfloat16
    split into even and odd elements by bit shifts), then a scalar tail.
    Bitwise aten's (float32/float64), whatever the block boundaries and the
    row's end; half/bfloat16 bitwise aten's float32 sums rounded once (aten
    itself rounds after every addition)."""
    for ow in (iw + 1, int(iw * 1.3), int(iw * 1.5), 2 * iw - 1, iw // 2, int(iw * 0.7), iw - 1, 2 * iw):
        insz, out = [2, 2, 3, 4, iw], [5, 6, ow]
        # exponents 2^-24 .. 2^24 apart (half: 2^-12 .. 2^12, finite), so that the order of the
        # additions shows in the rounding
        e = 12 if dtype == torch.float16 else 24
        g = make_tensor([2, 2, *out], dtype, "cpu") * torch.exp2(torch.randint(-e, e + 1, [2, 2, *out])).to(dtype)
        for ours, theirs in BACKWARDS:
            got = ours(g, out, insz)
            reduced = dtype in (torch.bfloat16, torch.float16)
            want = theirs(g.float(), out, insz).to(dtype) if reduced else theirs(g, out, insz)
            assert torch.equal(got, want), (ow, ours)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("iw", [8, 64, 100, 130])
def test_backward_halving_all_axes(iw, dtype):
    """Down-scaling every axis by exactly 2 (the CPU backward spreads each
    grad_output row into every other element of its grad_input row, by
    vectors and a scalar tail): bitwise aten's, -0.0 included (0.0 + -0.0 is
    +0.0), for nearest (even elements) and nearest-exact (odd ones)."""
    insz, out = [2, 3, 8, 6, iw], [4, 3, iw // 2]
    g = make_tensor([2, 3, *out], torch.float32, "cpu")
    g.view(-1)[::7] = -0.0
    g = g.to(dtype)
    for ours, theirs in BACKWARDS:
        got = ours(g, out, insz)
        want = theirs(g.float() if dtype == torch.bfloat16 else g, out, insz).to(dtype)
        assert torch.equal(got, want), ours
        assert not torch.signbit(got).logical_and(got == 0).any(), ours


def _check_single_output_windows(insz, outs, dtype, out_form):
    """Both modes' backward of grad_output sizes `outs` (every fifth element
    -0.0) onto `insz`, on 1, 2 and 3 threads: bitwise aten's (bfloat16: its
    float32 result rounded once); with out_form, also into a NaN-filled
    grad_input."""
    bits = torch.int32 if dtype == torch.float32 else torch.int16
    old = torch.get_num_threads()
    try:
        for out in outs:
            g = make_tensor([*insz[:2], *out], torch.float32, "cpu")
            g.view(-1)[::5] = -0.0
            g = g.to(dtype)
            for ours, theirs in BACKWARDS:
                want = theirs(g.float(), out, insz).to(dtype)
                for threads in (1, 2, 3):
                    torch.set_num_threads(threads)
                    got = ours(g, out, insz)
                    assert torch.equal(got.view(bits), want.view(bits)), (out, ours, threads)
                    if out_form:
                        gi = torch.full(insz, float("nan"), dtype=dtype)
                        ours.grad_input(g, out, insz, grad_input=gi)
                        assert torch.equal(gi.view(bits), want.view(bits)), (out, ours, threads)
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("iw", [1, 5, 8, 17, 32])
def test_backward_narrow_rows_of_single_output_windows(iw, dtype):
    """NCDHW rows of at most 32 elements where no window holds more than one
    output (down-scaling, or keeping a size, in every axis): the CPU backward
    zeroes blocks of rows and writes only the elements that receive an output.
    Bitwise aten's (bfloat16: its float32 result rounded once), -0.0 turned
    into +0.0, on 1, 2 and 3 threads (chunks and 64 KiB blocks end inside
    planes), for nearest and nearest-exact."""
    outs = ([4, 35, max(1, iw // 2)], [9, 70, iw], [5, 31, max(1, int(iw * 0.7))], [1, 1, 1])
    _check_single_output_windows([8, 3, 9, 70, iw], outs, dtype, out_form=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("iw", [34, 64, 66, 100])
def test_backward_halving_rows_across_thread_ranges(iw, dtype):
    """W down-scaled by exactly 2 and no D or H window holding more than one
    output (D and H kept, or down-scaled by any factor): the CPU backward walks
    the rows slice by slice, spreading a grad_output row into every other
    element of each row that receives one and zeroing runs of the others with
    vector stores. Bitwise aten's (bfloat16: its float32 result rounded once),
    -0.0 turned into +0.0, functional and out= into a NaN-filled result, on
    1, 2 and 3 threads (ranges start and end inside planes and zero runs)."""
    outs = ([5, 37, iw // 2], [2, 20, iw // 2], [3, 11, iw // 2], [1, 1, iw // 2])
    _check_single_output_windows([2, 3, 5, 37, iw], outs, dtype, out_form=True)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_backward_empty_depth_slices_across_thread_ranges(threads):
    """Down-scaling D leaves grad_input slices no output maps to; the CPU
    backward skips the rest of such a plane at once and clears it with the
    run of zeros around it. 100 rows per plane do not divide the rows each
    thread gets (512 for W = 64), so ranges start and end inside those planes:
    bitwise aten's at every thread count."""
    insz, out = [1, 3, 9, 100, 64], [4, 50, 32]
    g = make_tensor([1, 3, *out], torch.float32, "cpu")
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for ours, theirs in BACKWARDS:
            assert torch.equal(ours(g, out, insz), theirs(g, out, insz)), ours
            gi = torch.full(insz, float("nan"))
            ours.grad_input(g, out, insz, grad_input=gi)
            assert torch.equal(gi, theirs(g, out, insz)), ours
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("channels", [56, 40, 16, 8, 5])
def test_channels_last_backward_vector_and_tail_channels(channels, dtype, device):
    """channels_last_3d backward with channels spanning whole SIMD vectors,
    half a vector and a tail (56 = 32 + 16 + 8), or exactly one opmath vector
    (16 float32 / 8 float64 with AVX-512: the CPU's row-accumulator path):
    bitwise aten's (nearest, scale 2, 1.5 and down-scaled). half/bfloat16 sum
    in float32 in the same order and round once: bitwise aten's float32
    result on the widened input, rounded. W windows of 3 (out W 15): the
    row-accumulator path adds a window's pixels two at a time, then the odd one."""
    if dtype in (torch.bfloat16, torch.float16) and torch.device(device).type != "cpu":
        pytest.skip("the CPU kernel's half/bfloat16 vector blocks")
    for out_size in ([6, 8, 10], [4, 6, 7], [2, 3, 3], [3, 5, 15]):
        g = make_tensor((2, channels, *out_size), dtype, device, layout="channels_last_3d")
        in_size = [2, channels, 3, 4, 5]
        ours = ops.upsample_nearest3d_backward(g, out_size, in_size)
        assert ours.is_contiguous(memory_format=torch.channels_last_3d)
        if dtype in (torch.float32, torch.float64):
            want = torch.ops.aten.upsample_nearest3d_backward(g, out_size, in_size)
        else:
            want = torch.ops.aten.upsample_nearest3d_backward(g.float(), out_size, in_size).to(dtype)
        assert torch.equal(ours, want)
        torch.testing.assert_close(ours.double(), reference_backward("nearest", g, out_size, in_size),
                                   **({"rtol": 1e-5, "atol": 1e-5} if dtype in (torch.float32, torch.float64)
                                      else tolerance(dtype)))


def test_scales_are_all_or_nothing():
    """Scales given for some axes only are all ignored (aten decides per axis)."""
    g = make_tensor((1, 2, 5, 6, 7), torch.float64)
    mixed = ops.upsample_nearest3d_backward(g, [5, 6, 7], [1, 2, 4, 4, 4], 1.7, None, 1.9)
    sizes = ops.upsample_nearest3d_backward(g, [5, 6, 7], [1, 2, 4, 4, 4])
    assert torch.equal(mixed, sizes)
    torch.testing.assert_close(sizes, reference_backward("nearest", g, [5, 6, 7], [1, 2, 4, 4, 4]))
    # aten uses a given scale per axis (1/1.7 for D), which maps differently.
    aten = torch.ops.aten.upsample_nearest3d_backward(g, [5, 6, 7], [1, 2, 4, 4, 4], 1.7, None, 1.9)
    assert not torch.equal(aten, sizes)


@pytest.mark.parametrize("out_size,scale,expected", [
    (4, 1.05, [2.0, 1.0, 1.0, 0.0]),  # s = float32(1/1.05): dst 1 -> 0, dst 3 -> 2
    (8, 2.1, [3.0, 2.0, 2.0, 1.0]),   # s = float32(1/2.1): dst 0,1,2 -> 0 ... dst 7 -> 3
])
def test_no_shortcut_when_a_scale_is_given(out_size, scale, expected):
    """aten CPU's backward short-cuts out == in and out == 2*in and then
    ignores the given scale (pytorch#97135) — so it is not the adjoint of its
    own forward. The spec applies s = 1/scale always: forward and backward agree."""
    x = torch.arange(4, dtype=torch.float64).view(1, 1, 4, 1, 1)
    g = torch.ones(1, 1, out_size, 1, 1, dtype=torch.float64)
    ours = ops.upsample_nearest3d_backward(g, [out_size, 1, 1], [1, 1, 4, 1, 1], scale, 1.0, 1.0)
    assert ours.flatten().tolist() == expected
    # adjoint identity <F(x), g> == <x, B(g)> holds for ours ...
    fwd = ops.upsample_nearest3d(x, [out_size, 1, 1], scale, 1.0, 1.0)
    assert (fwd * g).sum() == (x * ours).sum()
    # ... but not for aten's pair (its forward uses the scale, its backward does not).
    aten_b = torch.ops.aten.upsample_nearest3d_backward(g, [out_size, 1, 1], [1, 1, 4, 1, 1], scale, 1.0, 1.0)
    aten_f = torch.ops.aten.upsample_nearest3d(x, [out_size, 1, 1], scale, 1.0, 1.0)
    assert torch.equal(aten_f, fwd)
    assert (aten_f * g).sum() != (x * aten_b).sum()


@pytest.mark.parametrize("mode", MODES)
def test_layout_is_preserved(mode, device):
    _, fwd, bwd = MODES[mode]
    x = make_tensor((2, 3, 4, 5, 6), torch.float32, device, layout="channels_last_3d")
    y = fwd(x, [8, 10, 12], 2.0, 2.0, 2.0)
    assert y.is_contiguous(memory_format=torch.channels_last_3d)
    gi = bwd(y, [8, 10, 12], [2, 3, 4, 5, 6], 2.0, 2.0, 2.0)
    assert gi.is_contiguous(memory_format=torch.channels_last_3d)
    assert torch.equal(gi, bwd(y.contiguous(), [8, 10, 12], [2, 3, 4, 5, 6], 2.0, 2.0, 2.0))


@pytest.mark.parametrize("mode", MODES)
def test_expanded_and_sliced_inputs(mode, device):
    _, fwd, bwd = MODES[mode]
    base = make_tensor((1, 3, 1, 5, 6), torch.float64, device)
    x = base.expand(2, 3, 4, 5, 6)  # stride 0 on N and D
    y = fwd(x, [6, 7, 9])
    assert torch.equal(y, reference_forward(mode, x, [6, 7, 9]))
    g = make_tensor((2, 3, 6, 7, 18), torch.float64, device)[..., ::2]
    assert torch.allclose(bwd(g, [6, 7, 9], [2, 3, 4, 5, 6]), reference_backward(mode, g, [6, 7, 9], [2, 3, 4, 5, 6]))


@pytest.mark.parametrize("mode", MODES)
def test_out_into_views(mode, device):
    """out= into a non-dense view and into a channels_last_3d tensor."""
    bwd = MODES[mode][2]
    g = make_tensor((2, 3, 6, 7, 9), torch.float32, device)
    expected = bwd(g, [6, 7, 9], [2, 3, 4, 5, 6])
    big = torch.zeros(2, 3, 4, 5, 12, device=device)
    view = big[..., ::2]
    bwd.grad_input(g, [6, 7, 9], [2, 3, 4, 5, 6], grad_input=view)
    assert torch.equal(view, expected)
    assert torch.equal(big[..., 1::2], torch.zeros_like(view))  # untouched
    cl = torch.empty(2, 3, 4, 5, 6, device=device).contiguous(memory_format=torch.channels_last_3d)
    torch_aclnn.upsample_nearest3d_backward(g, [6, 7, 9], [2, 3, 4, 5, 6], out=cl) if mode == "nearest" else \
        torch_aclnn.upsample_nearest_exact3d_backward(g, [6, 7, 9], [2, 3, 4, 5, 6], out=cl)
    assert torch.equal(cl, expected)


@pytest.mark.parametrize("mode", MODES)
def test_half_accumulates_in_float(mode):
    """A window sum that would lose bits in half is computed in float32 and rounded once."""
    bwd = MODES[mode][2]
    g = torch.full((1, 1, 8, 8, 8), 1.0 + 2 ** -10, dtype=torch.float16)
    gi = bwd(g, [8, 8, 8], [1, 1, 1, 1, 1])
    exact = torch.tensor(512 * (1.0 + 2 ** -10), dtype=torch.float32).to(torch.float16)
    assert gi.item() == exact.item()


@pytest.mark.parametrize("mode", MODES)
def test_deterministic_across_thread_counts(mode):
    bwd = MODES[mode][2]
    g = make_tensor((2, 4, 17, 19, 23), torch.float32)
    results = []
    old = torch.get_num_threads()
    try:
        for n in (1, 2, 1):
            torch.set_num_threads(n)
            results.append(bwd(g, [17, 19, 23], [2, 4, 7, 9, 11]))
    finally:
        torch.set_num_threads(old)
    assert all(torch.equal(results[0], r) for r in results[1:])


def test_python_api_errors():
    x = make_tensor((1, 2, 3, 4, 5), torch.float32)
    with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] upsample_nearest3d: exactly one of size and scale_factor"):
        torch_aclnn.upsample_nearest3d(x)
    with pytest.raises(ValueError, match=r"exactly one of size and scale_factor"):
        torch_aclnn.upsample_nearest3d(x, size=4, scale_factor=2)
    with pytest.raises(ValueError, match=r"input must be 5-D"):
        torch_aclnn.upsample_nearest_exact3d(x[0], scale_factor=2)
    with pytest.raises(ValueError, match=r"scale_factor must have 3 elements"):
        torch_aclnn.upsample_nearest3d(x, scale_factor=(2, 2))
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161001\] upsample_nearest3d: input is required"):
        torch_aclnn.upsample_nearest3d(None, scale_factor=2)
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161001\] upsample_nearest3d_backward: grad_output is required"):
        torch_aclnn.upsample_nearest3d_backward(None, [2, 2, 2], [1, 1, 1, 1, 1])
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161001\] upsample_nearest_exact3d_backward: input_size is required"):
        torch_aclnn.upsample_nearest_exact3d_backward(x, [3, 4, 5], None)


def test_compiled_training_step_inductor():
    """A forward+backward training step through both modes under
    torch.compile(fullgraph=True, dynamic=True) with inductor matches eager."""
    torch._dynamo.reset()
    w = torch.randn(1, 3, 1, 1, 1, dtype=torch.float64, requires_grad=True)

    def step(x):
        a = torch_aclnn.upsample_nearest3d(x * w, scale_factor=2)
        b = torch_aclnn.upsample_nearest_exact3d(a, size=(5, 7, 9))
        return (b * b).mean()

    compiled = torch.compile(step, fullgraph=True, dynamic=True)
    for shape in [(2, 3, 4, 5, 6), (1, 3, 3, 4, 7)]:
        x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        le = step(x)
        ge = torch.autograd.grad(le, (x, w))
        lc = compiled(x)
        gc = torch.autograd.grad(lc, (x, w))
        torch.testing.assert_close(lc, le)
        for a, b in zip(gc, ge):
            torch.testing.assert_close(a, b)


@pytest.mark.parametrize("dev", ["cpu", "meta"])
def test_result_beyond_int64_bytes_is_a_contract_error(dev):
    """A result whose byte size overflows int64 is refused by the contract (on
    real and fake tensors alike), before any allocation is attempted."""
    x = torch.zeros(1, 1, 1, 1, 1, device=dev)
    with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] upsample_nearest3d: the result of shape "
                                         r"\[1, 1, 2097152, 2097152, 2097152\] overflows int64"):
        ops.upsample_nearest3d(x, [2 ** 21] * 3)
    with pytest.raises(ValueError, match=r"upsample_nearest3d_backward: grad_input of shape .* overflows int64"):
        ops.upsample_nearest3d_backward(x, [1, 1, 1], [1, 1, 2 ** 21, 2 ** 21, 2 ** 21])
