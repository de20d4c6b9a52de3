"""The NPU path's corrections where torch_npu/aclnn and the spec differ, run
without an NPU as tests/test_npu.py runs the glue."""
import re
import warnings

import pytest
import torch

from torch_aclnn.npu import limits
from torch_aclnn.npu import elu as npu_elu
from torch_aclnn.npu import leaky_relu as npu_leaky_relu
from torch_aclnn.npu import max_unpool as npu_max_unpool
from torch_aclnn.npu import smooth_l1 as npu_smooth_l1
from torch_aclnn.npu import upsample as npu_upsample
from torch_aclnn.npu import upsample_trilinear as npu_trilinear
from torch_aclnn.testing import make_tensor, tolerance

from npu_path import Spy, on_npu_path, ops
from npu_path import _fresh_warnings  # noqa: F401  (an autouse fixture)


# ---------------------------------------------------------------------------
# Corrections where torch_npu/aclnn and the spec differ.

@pytest.mark.parametrize("mode,fwd,bwd", [
    ("nearest", ops.upsample_nearest3d, ops.upsample_nearest3d_backward),
    ("nearest-exact", ops.upsample_nearest_exact3d, ops.upsample_nearest_exact3d_backward),
])
def test_scales_for_some_axes_are_dropped(mode, fwd, bwd):
    """Scales given for some axes only reach the device as None for all
    three (all-or-nothing, docs/spec.md §1/§2); passed through as given, aten (like
    the older aclnn nearest backward) would use them per axis."""
    x = make_tensor((1, 2, 4, 4, 4), torch.float32)
    g = make_tensor((1, 2, 5, 6, 7), torch.float32)
    sizes = [5, 6, 7]
    assert torch.equal(on_npu_path(fwd.default, x, sizes, 1.7, None, 1.9), fwd(x, sizes))
    assert torch.equal(on_npu_path(bwd.default, g, sizes, [1, 2, 4, 4, 4], 1.7, None, 1.9),
                       bwd(g, sizes, [1, 2, 4, 4, 4]))
    raw = npu_upsample.ATEN_BACKWARD[mode](g, sizes, [1, 2, 4, 4, 4], 1.7, None, 1.9)
    assert not torch.equal(raw, bwd(g, sizes, [1, 2, 4, 4, 4])), "the sample must exercise the correction"


def test_trilinear_device_scales():
    """The glue passes the scales the spec uses (per axis, align_corners False,
    > 0) and None for the rest; a negative scale or one beside align_corners
    never reaches the device; empty inputs make no device call."""
    calls = []

    def spy(fn):
        def run(*args):
            calls.append(args[-4:])
            return fn(*args)
        return run

    x = make_tensor((1, 2, 4, 4, 4), torch.float32)
    g = make_tensor((1, 2, 5, 6, 7), torch.float32)
    sizes, insz = [5, 6, 7], [1, 2, 4, 4, 4]
    fwd, bwd = ops.upsample_trilinear3d, ops.upsample_trilinear3d_backward
    old = npu_trilinear.ATEN_FORWARD, npu_trilinear.ATEN_BACKWARD
    npu_trilinear.ATEN_FORWARD, npu_trilinear.ATEN_BACKWARD = spy(old[0]), spy(old[1])
    try:
        torch.testing.assert_close(on_npu_path(fwd.default, x, sizes, False, 1.3, -1.0, 1.9),
                                   fwd(x, sizes, False, 1.3, -1.0, 1.9))
        torch.testing.assert_close(on_npu_path(bwd.default, g, sizes, insz, True, 1.3, 2.0, 1.9),
                                   bwd(g, sizes, insz, True, 1.3, 2.0, 1.9))
        assert calls == [(False, 1.3, None, 1.9), (True, None, None, None)], calls
        assert on_npu_path(fwd.default, torch.empty(0, 3, 2, 2, 2), [4, 4, 4], False).shape == (0, 3, 4, 4, 4)
        assert on_npu_path(bwd.default, torch.empty(2, 0, 4, 4, 4), [4, 4, 4], [2, 0, 2, 2, 2], False).shape == \
            (2, 0, 2, 2, 2)
        assert len(calls) == 2
    finally:
        npu_trilinear.ATEN_FORWARD, npu_trilinear.ATEN_BACKWARD = old


def test_trilinear_forward_split_along_planes(monkeypatch):
    """N*C*iD*iH beyond its cap: one device call per chunk of planes, the same result."""
    x = make_tensor((3, 2, 4, 5, 6), torch.float32)
    monkeypatch.setattr(limits.row("upsample_trilinear3d", "nc_id_ih"), "max", 2 * 4 * 5)
    shapes = []
    fn = npu_trilinear.ATEN_FORWARD
    monkeypatch.setattr(npu_trilinear, "ATEN_FORWARD", lambda t, *a: (shapes.append(tuple(t.shape)), fn(t, *a))[1])
    got = on_npu_path(ops.upsample_trilinear3d.default, x, [8, 10, 12], False, 2.0, 2.0, 2.0)
    assert len(shapes) > 1 and sum(s[0] * s[1] for s in shapes) == 6
    torch.testing.assert_close(got, ops.upsample_trilinear3d(x, [8, 10, 12], False, 2.0, 2.0, 2.0))


def test_channels_last_result_layout():
    """op-plugin allocates contiguous results; the glue returns channels_last_3d like every backend."""
    g = make_tensor((2, 3, 8, 10, 12), torch.float32).contiguous(memory_format=torch.channels_last_3d)
    got = on_npu_path(ops.upsample_nearest3d_backward.default, g, [8, 10, 12], [2, 3, 4, 5, 6])
    assert got.is_contiguous(memory_format=torch.channels_last_3d)
    assert torch.equal(got, ops.upsample_nearest3d_backward(g, [8, 10, 12], [2, 3, 4, 5, 6]))


@pytest.mark.parametrize("alpha,input_scale", [(float("inf"), 1.0), (1.0, float("inf")), (1.0, -float("inf")),
                                               (1.0, float("nan")), (float("nan"), 1.0), (-float("inf"), 0.5)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_elu_non_finite_parameters(alpha, input_scale, dtype):
    """aclnnElu replaces the formula by scale*threshold(x, 0, -alpha) when alpha
    or input_scale is inf/NaN; the glue evaluates the spec's formula instead."""
    x = torch.tensor([-3.0, -1.0, -0.0, 0.0, 1e-3, 2.0, float("inf"), -float("inf"), float("nan")], dtype=dtype)
    spy = Spy(npu_elu.ATEN_FORWARD)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(npu_elu, "ATEN_FORWARD", spy)
        got = on_npu_path(ops.elu.default, x, alpha, 1.5, input_scale)
    assert spy.shapes == []  # not the aclnn kernel
    torch.testing.assert_close(got, ops.elu(x, alpha, 1.5, input_scale), equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("slope", [float("inf"), -float("inf"), float("nan")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_leaky_relu_non_finite_slope(slope, dtype):
    """aclnnLeakyRelu's documented max(0, x) + slope * min(0, x) makes NaN of inf * 0; the glue
    evaluates the spec's formula instead, for both operators."""
    x = torch.tensor([-3.0, -0.0, 0.0, 1e-3, 2.0, float("inf"), -float("inf"), float("nan")], dtype=dtype)
    g = torch.linspace(-2, 2, x.numel(), dtype=dtype)
    spies = Spy(npu_leaky_relu.ATEN_FORWARD), Spy(npu_leaky_relu.ATEN_BACKWARD)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(npu_leaky_relu, "ATEN_FORWARD", spies[0])
        mp.setattr(npu_leaky_relu, "ATEN_BACKWARD", spies[1])
        got = on_npu_path(ops.leaky_relu.default, x, slope)
        got_b = on_npu_path(ops.leaky_relu_backward.default, g, x, slope, False)
    assert spies[0].shapes == [] and spies[1].shapes == []  # not the aclnn kernels
    torch.testing.assert_close(got, ops.leaky_relu(x, slope), equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(got_b, ops.leaky_relu_backward(g, x, slope, False), equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_leaky_relu_half_computed_in_float32(dtype):
    x, g = make_tensor((5, 7), dtype), make_tensor((5, 7), dtype)
    seen = []

    def spy(fn):
        return lambda *args: (seen.append(tuple(a.dtype for a in args if isinstance(a, torch.Tensor))), fn(*args))[1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(npu_leaky_relu, "ATEN_FORWARD", spy(npu_leaky_relu.ATEN_FORWARD))
        mp.setattr(npu_leaky_relu, "ATEN_BACKWARD", spy(npu_leaky_relu.ATEN_BACKWARD))
        got = on_npu_path(ops.leaky_relu.default, x, 0.3)
        got_b = on_npu_path(ops.leaky_relu_backward.default, g, x, 0.3, True)
        assert on_npu_path(ops.leaky_relu.default, x[:0], 0.3).shape == (0, 7)  # no device call
    assert seen == [(torch.float32,), (torch.float32, torch.float32)]
    assert torch.equal(got, ops.leaky_relu(x, 0.3)) and torch.equal(got_b, ops.leaky_relu_backward(g, x, 0.3, True))


def test_smooth_l1_beta0_gradient_is_zero_at_d0():
    """sign(0) = 0 (the aclnn document, the spec); aten's raw kernel gives -1."""
    x = torch.tensor([1.0, 2.0, 3.0, 0.5, float("inf")])
    t = torch.tensor([1.0, 0.0, 5.0, 0.5, float("inf")])
    g = torch.tensor([1.0, 1.0, 1.0, float("nan"), 2.0])
    raw = npu_smooth_l1.ATEN_BACKWARD(g, x, t, 0, 0.0)
    got = on_npu_path(ops.smooth_l1_loss_backward.default, g, x, t, 0, 0.0)
    assert raw[0] == -1 and got[0] == 0
    torch.testing.assert_close(got, ops.smooth_l1_loss_backward(g, x, t, 0, 0.0), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_smooth_l1_mean_divides_by_the_broadcast_numel(dtype):
    """'mean' with self smaller than broadcast(self, target): the norm is 1/6
    here; called as op-plugin calls it (self as given), aten divides by
    self.numel() = 2."""
    x, t = make_tensor((2, 1), dtype), make_tensor((1, 3), dtype)
    g = torch.tensor(1.0, dtype=dtype)
    got = on_npu_path(ops.smooth_l1_loss_backward.default, g, x, t, 1, 1.0)
    ours = ops.smooth_l1_loss_backward(g, x, t, 1, 1.0)
    torch.testing.assert_close(got, ours, **tolerance(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # aten resizes its (2, 1) output
        raw = npu_smooth_l1.ATEN_BACKWARD(g, x, t, 1, 1.0)
    torch.testing.assert_close(raw.float(), 3 * ours.float(), **tolerance(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_smooth_l1_mean_with_grad_output_broadcasting_further(dtype):
    """grad_output adding elements under 'mean': the kernel runs with 'none'
    and the spec's norm (1 / numel(broadcast(self, target))) is applied here."""
    g, x, t = make_tensor((5, 2, 3), dtype), make_tensor((2, 1), dtype), make_tensor((1, 3), dtype)
    spy = Spy(npu_smooth_l1.ATEN_BACKWARD)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(npu_smooth_l1, "ATEN_BACKWARD", spy)
        got = on_npu_path(ops.smooth_l1_loss_backward.default, g, x, t, 1, 1.0)
    assert spy.shapes == [(5, 2, 3)]
    torch.testing.assert_close(got, ops.smooth_l1_loss_backward(g, x, t, 1, 1.0), **tolerance(dtype))


def test_smooth_l1_promotes_and_broadcasts():
    """Result dtype = the promoted dtype (op-plugin allocates self's) and the
    forward's 'none' shape = broadcast(self, target) (op-plugin sizes it from self)."""
    g, x, t = make_tensor((3, 4), torch.float16), make_tensor((3, 1), torch.float16), make_tensor((1, 4), torch.float32)
    got = on_npu_path(ops.smooth_l1_loss_backward.default, g, x, t, 0, 0.5)
    assert got.dtype == torch.float32 and got.shape == (3, 4)
    torch.testing.assert_close(got, ops.smooth_l1_loss_backward(g, x, t, 0, 0.5))
    loss = on_npu_path(ops.smooth_l1_loss.default, x, t, 0, 0.5)
    assert loss.dtype == torch.float32 and loss.shape == (3, 4)
    torch.testing.assert_close(loss, ops.smooth_l1_loss(x, t, 0, 0.5))


def test_one_device_rule_on_the_glue():
    """The glue's contract run sees the arguments' real devices: a tensor on
    another device than the call's is the contract's tagged error (here the
    call's device is meta, since CPU tensors stand in for NPU ones); a 0-dim
    CPU input is accepted, and the result is on the call's device."""
    m = torch.zeros(4, device="meta")
    with pytest.raises(RuntimeError, match=r"\[torch_aclnn 161002\] smooth_l1_loss: target is on cpu, but self is on meta"):
        on_npu_path(ops.smooth_l1_loss.default, m, torch.zeros(4), 0, 1.0)
    with pytest.raises(RuntimeError, match=r"\[torch_aclnn 161002\] elu_backward: grad_input is on cpu, but"):
        on_npu_path(ops.elu_backward.grad_input, m, 1.0, 1.0, 1.0, False, m, grad_input=torch.zeros(4))
    x, t = make_tensor((3, 4), torch.float32), make_tensor((3, 4), torch.float32)
    g = torch.tensor(0.25)
    got = on_npu_path(ops.smooth_l1_loss_backward.default, g, x, t, 1, 1.0)
    torch.testing.assert_close(got, ops.smooth_l1_loss_backward(g, x, t, 1, 1.0))


@pytest.mark.parametrize("shape", [(2, 3, 2, 3, 4), (2, 2, 3, 4)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_max_unpool_duplicates_leave_the_scatter_no_choice(monkeypatch, shape, dtype):
    """Duplicate indices: every loser goes to a spare slot, so whichever
    duplicate the device scatter would keep, the largest flat position wins."""
    spy = Spy(npu_max_unpool.ATEN_FORWARD)
    monkeypatch.setattr(npu_max_unpool, "ATEN_FORWARD", spy)
    g = torch.Generator().manual_seed(3)
    out = [3, 2, 4]
    idx = torch.randint(0, 24, shape, generator=g)
    x = make_tensor(shape, dtype)
    got = on_npu_path(ops.max_unpool3d.default, x, idx, out, [1, 1, 1], [0, 0, 0])
    assert torch.equal(got, ops.max_unpool3d(x, idx, out, [1, 1, 1], [0, 0, 0]))
    planes = (shape[0], shape[1] if len(shape) == 5 else 1)
    assert spy.shapes == [(*planes, 1, 1, 24)]  # the spread call: 24 + 1 slots per plane
    # Without duplicates: one plain call.
    spy.shapes.clear()
    idx = torch.stack([torch.randperm(24, generator=g)[:24] for _ in range(planes[0] * planes[1])]).reshape(shape)
    got = on_npu_path(ops.max_unpool3d.default, x, idx, out, [1, 1, 1], [0, 0, 0])
    assert torch.equal(got, ops.max_unpool3d(x, idx, out, [1, 1, 1], [0, 0, 0]))
    assert spy.shapes == [shape]


def test_max_unpool_worked_example():
    """docs/spec.md §5: grad_output = ones, indices with repeats -> out = ones."""
    idx = torch.tensor([0, 0, 0, 3, 0, 0, 0, 8, 0, 0, 0, 11, 0, 0, 0, 13]).view(1, 1, 4, 4)
    g = torch.ones(1, 1, 4, 4)
    got = on_npu_path(ops.max_unpool3d_backward.default, g, torch.empty(1, 1, 4, 4), idx, [1, 4, 4], [1, 2, 3],
                      [1, 2, 3])
    assert torch.equal(got, torch.ones(1, 1, 4, 4))


def test_max_unpool_index_checked_before_any_device_call(monkeypatch):
    spies = (Spy(npu_max_unpool.ATEN_FORWARD), Spy(npu_max_unpool.ATEN_GATHER))
    monkeypatch.setattr(npu_max_unpool, "ATEN_FORWARD", spies[0])
    monkeypatch.setattr(npu_max_unpool, "ATEN_GATHER", spies[1])
    x = make_tensor((1, 2, 2, 2, 2), torch.float32)
    idx = torch.zeros(1, 2, 2, 2, 2, dtype=torch.int64)
    idx[0, 1, 1, 0, 1] = 64
    with pytest.raises(IndexError, match=re.escape("indices[0, 1, 1, 0, 1] = 64 is outside [0, 64)")):
        on_npu_path(ops.max_unpool3d.default, x, idx, [4, 4, 4], [2, 2, 2], [0, 0, 0])
    idx[0, 0, 0, 1, 1] = -1  # an earlier position is reported first
    with pytest.raises(IndexError, match=re.escape("indices[0, 0, 0, 1, 1] = -1 is outside [0, 64)")):
        on_npu_path(ops.max_unpool3d_backward.default, torch.zeros(1, 2, 4, 4, 4), x, idx, [4, 4, 4], [2, 2, 2],
                    [0, 0, 0])
    assert not spies[0].shapes and not spies[1].shapes
