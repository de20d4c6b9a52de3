"""The upsample-trilinear family (docs/spec.md §10): what the generic OpInfo tests in
test_common.py do not cover — the worked examples, the adjoint property, bits across
layouts, threads and dtypes, the F.interpolate-style API, the spec's deliberate
differences from aten, and a SegResNet-style decoder under patch()."""
import pytest
import torch
import torch.nn.functional as F

import torch_aclnn
from torch_aclnn.testing import make_tensor
from torch_aclnn.testing.upsample_trilinear import reference_backward, reference_forward

ops = torch.ops.torch_aclnn
CL3D = torch.channels_last_3d


def test_worked_examples(device):
    """§10: the backward document's example (all weights land on the one input
    element) and the forward document's 2 -> 4 example."""
    go = torch.arange(1, 33, dtype=torch.float32, device=device).view(2, 2, 2, 2, 2)
    gi = ops.upsample_trilinear3d_backward(go, [2, 2, 2], [2, 2, 1, 1, 1], False, 0.0, 0.0, 0.0)
    assert gi.flatten().tolist() == [36.0, 100.0, 164.0, 228.0]
    x = torch.arange(1, 9, dtype=torch.float32, device=device).view(1, 1, 2, 2, 2)
    y = ops.upsample_trilinear3d(x, [4, 4, 4], False, 0.0, 0.0, 0.0)
    assert y[0, 0, 0, 0].tolist() == [1.0, 1.25, 1.75, 2.0]
    assert y[0, 0, 3, 3].tolist() == [7.0, 7.25, 7.75, 8.0]
    assert y[0, 0, 1, 1, 1].item() == 2.75


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("kwargs", [
    dict(scale_factor=2), dict(scale_factor=1.5), dict(scale_factor=0.5), dict(scale_factor=(2, 1.5, 0.75)),
    dict(size=(7, 9, 5)), dict(size=1), dict(scale_factor=1.7, recompute_scale_factor=True),
], ids=str)
def test_matches_interpolate_forward_and_grad(kwargs, align, device):
    """F.interpolate(mode="trilinear")'s values and gradients, to rounding (the
    sums are grouped differently, §10), float64 to 1e-12."""
    for dtype, tol in ((torch.float32, dict(rtol=1e-5, atol=1e-5)), (torch.float64, dict(rtol=1e-12, atol=1e-12))):
        x = make_tensor((2, 3, 4, 6, 5), dtype, device, requires_grad=True)
        ours = torch_aclnn.upsample_trilinear3d(x, align_corners=align, **kwargs)
        theirs = F.interpolate(x, mode="trilinear", align_corners=align, **kwargs)
        torch.testing.assert_close(ours, theirs, **tol)
        g = torch.randn_like(theirs)
        (ga,) = torch.autograd.grad(ours, x, g)
        (gb,) = torch.autograd.grad(theirs, x, g)
        torch.testing.assert_close(ga, gb, **tol)


@pytest.mark.parametrize("case", [
    ((1, 2, 4, 6, 5), (6, 9, 7), False, (1.5, 1.5, 1.5)),
    ((1, 2, 3, 4, 5), (3, 4, 5), False, (1.2, 1.1, 1.1)),    # out == in with a scale: no short cut
    ((1, 2, 5, 7, 3), (13, 9, 8), False, (2.7, 1.3, 2.9)),
    ((1, 2, 5, 7, 3), (13, 9, 8), True, (None, None, None)),
    ((1, 1, 6, 5, 9), (2, 2, 4), False, (None, 0.45, None)),
], ids=str)
def test_backward_is_the_adjoint_of_the_forward(case):
    """<forward(x), g> == <x, backward(g)> (float64) for non-integer scales and
    out == in with a given scale (pytorch#97135's kind of case), and both
    operators match the float64 reference."""
    shape, out, align, scales = case
    x = torch.randn(shape, dtype=torch.float64)
    g = torch.randn(shape[0], shape[1], *out, dtype=torch.float64)
    y = ops.upsample_trilinear3d(x, list(out), align, *scales)
    gi = ops.upsample_trilinear3d_backward(g, list(out), list(shape), align, *scales)
    torch.testing.assert_close((y * g).sum(), (x * gi).sum(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(y, reference_forward(x, list(out), align, *scales), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(gi, reference_backward(g, list(out), list(shape), align, *scales),
                               rtol=1e-12, atol=1e-12)


def test_out_equal_in_with_a_scale_differs_from_aten():
    """§10 differences: aten copies an axis whose sizes are equal even when a
    scale != 1 is given; the spec interpolates with 1/scale."""
    x = torch.arange(3, dtype=torch.float64).view(1, 1, 1, 1, 3)
    ours = ops.upsample_trilinear3d(x, [1, 1, 3], False, None, None, 1.2)
    aten = torch.ops.aten.upsample_trilinear3d(x, [1, 1, 3], False, None, None, 1.2)
    assert aten.flatten().tolist() == [0.0, 1.0, 2.0]
    # src = max(0, (w + 0.5) / 1.2 - 0.5) = [0, 0.75, 1.5833...]
    torch.testing.assert_close(ours.flatten(), torch.tensor([0.0, 0.75, 1.5 + 1 / 12], dtype=torch.float64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("channels", [1, 5, 17, 40])
def test_layouts_and_threads_give_the_same_bits(channels, dtype):
    """NCDHW, channels_last_3d, permuted and sliced inputs, 1 and 2 threads:
    one set of bits per operator (the same sums in the same order), and
    channels_last_3d results stay channels_last_3d."""
    shape, out = (2, channels, 3, 5, 7), [7, 9, 16]
    x = make_tensor(shape, dtype, "cpu")
    g = make_tensor((2, channels, *out), dtype, "cpu")
    want_y = ops.upsample_trilinear3d(x, out, False, None, None, None)
    want_g = ops.upsample_trilinear3d_backward(g, out, list(shape), False, None, None, None)
    old = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for fmt in (torch.contiguous_format, CL3D):
                y = ops.upsample_trilinear3d(x.contiguous(memory_format=fmt), out, False, None, None, None)
                gi = ops.upsample_trilinear3d_backward(g.contiguous(memory_format=fmt), out, list(shape), False,
                                                       None, None, None)
                assert y.is_contiguous(memory_format=fmt) and gi.is_contiguous(memory_format=fmt)
                assert torch.equal(y, want_y) and torch.equal(gi, want_g), (threads, fmt)
            t = g.transpose(2, 4).contiguous().transpose(2, 4)
            assert torch.equal(ops.upsample_trilinear3d_backward(t, out, list(shape), False, None, None, None),
                               want_g)
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_computes_in_float32_and_rounds_once(dtype):
    """float16/bfloat16: the float32 kernel's sums of the widened values,
    rounded once (bitwise), in both layouts."""
    shape, out = (2, 3, 4, 5, 9), [8, 10, 18]
    for fmt in (torch.contiguous_format, CL3D):
        x = make_tensor(shape, dtype, "cpu").contiguous(memory_format=fmt)
        g = make_tensor((2, 3, *out), dtype, "cpu").contiguous(memory_format=fmt)
        assert torch.equal(ops.upsample_trilinear3d(x, out, False, 2.0, 2.0, 2.0),
                           ops.upsample_trilinear3d(x.float(), out, False, 2.0, 2.0, 2.0).to(dtype))
        assert torch.equal(ops.upsample_trilinear3d_backward(g, out, list(shape), True, None, None, None),
                           ops.upsample_trilinear3d_backward(g.float(), out, list(shape), True, None, None,
                                                             None).to(dtype))


def test_scales_are_used_axis_by_axis():
    """A scale counts on its own axis (aten's rule too), and not at all with
    align_corners (so it is not checked against the sizes there)."""
    x = make_tensor((1, 2, 4, 5, 6), torch.float64, "cpu")
    ours = ops.upsample_trilinear3d(x, [5, 7, 8], False, 1.3, None, 1.4)
    torch.testing.assert_close(ours, torch.ops.aten.upsample_trilinear3d(x, [5, 7, 8], False, 1.3, None, 1.4),
                               rtol=1e-12, atol=1e-12)
    assert not torch.equal(ours, ops.upsample_trilinear3d(x, [5, 7, 8], False, None, None, None))
    assert torch.equal(ops.upsample_trilinear3d(x, [5, 7, 8], True, 9.0, 9.0, 9.0),
                       ops.upsample_trilinear3d(x, [5, 7, 8], True, None, None, None))


def test_python_api_errors():
    x = make_tensor((1, 2, 3, 4, 5), torch.float32, "cpu")
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] upsample_trilinear3d: align_corners must be a bool"):
        torch_aclnn.upsample_trilinear3d(x, scale_factor=2, align_corners=1)
    with pytest.raises(ValueError, match=r"exactly one of size and scale_factor"):
        torch_aclnn.upsample_trilinear3d(x)
    with pytest.raises(ValueError, match=r"input must be 5-D"):
        torch_aclnn.upsample_trilinear3d(x[0], scale_factor=2)
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161001\] upsample_trilinear3d_backward: grad_output"):
        torch_aclnn.upsample_trilinear3d_backward(None, [2, 2, 2], [1, 2, 1, 1, 1], False)
    with pytest.raises(TypeError, match=r"align_corners must be a bool"):
        torch_aclnn.upsample_trilinear3d_backward(x, [3, 4, 5], [1, 2, 3, 4, 5], "no")
    g = make_tensor((1, 2, 6, 8, 10), torch.float32, "cpu")
    out = torch.empty(1, 2, 3, 4, 5)
    assert torch_aclnn.upsample_trilinear3d_backward(g, [6, 8, 10], [1, 2, 3, 4, 5], False, out=out) is out
    assert torch.equal(out, ops.upsample_trilinear3d_backward(g, [6, 8, 10], [1, 2, 3, 4, 5], False))


# ---------------------------------------------------------------------------
# A SegResNet-style decoder step: Conv3d -> trilinear x2 -> Conv3d.

def _decoder():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv3d(4, 8, 3, padding=1),
                               torch.nn.Upsample(scale_factor=2, mode="trilinear", align_corners=False),
                               torch.nn.Conv3d(8, 2, 3, padding=1))


def _step(model, x):
    model.zero_grad()
    y = model(x)
    y.square().mean().backward()
    return y.detach(), [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("level", ["function", "dispatcher"])
def test_segresnet_decoder_under_patch(level):
    """Under patch(): torch's outputs and gradients (to rounding), the
    trilinear calls routed to torch_aclnn; under
    use_deterministic_algorithms(True), bitwise-equal repeats."""
    model = _decoder()
    x = torch.randn(2, 4, 6, 7, 5)
    want_y, want_g = _step(model, x)
    stats = torch_aclnn.PatchStats()
    with torch_aclnn.patched(stats, level=level):
        got_y, got_g = _step(model, x)
        old = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)
        try:
            runs = [_step(model, x) for _ in range(2)]
        finally:
            torch.use_deterministic_algorithms(old)
    torch.testing.assert_close(got_y, want_y, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_g, want_g):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert torch.equal(runs[0][0], runs[1][0]) and all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))
    want = {"interpolate"} if level == "function" else {"aten::upsample_trilinear3d",
                                                         "aten::upsample_trilinear3d_backward"}
    assert want <= set(stats.routed), stats.routed
