"""The NPU path's device limits (torch_aclnn/npu/limits.py): empty tensors,
splitting along N*C, the CPU path; run without an NPU as tests/test_npu.py
runs the glue."""
import re
import warnings

import pytest
import torch

from torch_aclnn.npu import _glue, limits
from torch_aclnn.npu import adaptive_avg_pool as npu_adaptive
from torch_aclnn.npu import elu as npu_elu
from torch_aclnn.npu import smooth_l1 as npu_smooth_l1
from torch_aclnn.npu import upsample as npu_upsample
from torch_aclnn.testing import make_tensor

from npu_path import BACKWARDS, FORWARDS, Spy, _spy_upsample, on_npu_path, ops
from npu_path import _fresh_warnings  # noqa: F401  (an autouse fixture)


# ---------------------------------------------------------------------------
# Device limits: empty tensors, splitting along N*C, the CPU path.

def test_empty_inputs_make_no_device_call(monkeypatch):
    spies = [_spy_upsample(monkeypatch, w, m) for w in ("forward", "backward") for m in ("nearest", "nearest-exact")]
    spy_elu = Spy(npu_elu.ATEN_BACKWARD)
    monkeypatch.setattr(npu_elu, "ATEN_BACKWARD", spy_elu)
    x = torch.empty(0, 3, 2, 2, 2)
    assert on_npu_path(ops.upsample_nearest3d.default, x, [4, 4, 4]).shape == (0, 3, 4, 4, 4)
    assert on_npu_path(ops.upsample_nearest_exact3d.default, x, [4, 4, 4]).shape == (0, 3, 4, 4, 4)
    g = torch.empty(2, 0, 4, 4, 4)
    for op in (ops.upsample_nearest3d_backward, ops.upsample_nearest_exact3d_backward):
        assert on_npu_path(op.default, g, [4, 4, 4], [2, 0, 2, 2, 2]).shape == (2, 0, 2, 2, 2)
    e = torch.empty(3, 0)
    assert on_npu_path(ops.elu_backward.default, e, 1.0, 1.0, 1.0, False, e).shape == (3, 0)
    spy_sl1 = [Spy(npu_smooth_l1.ATEN_FORWARD), Spy(npu_smooth_l1.ATEN_BACKWARD)]
    monkeypatch.setattr(npu_smooth_l1, "ATEN_FORWARD", spy_sl1[0])
    monkeypatch.setattr(npu_smooth_l1, "ATEN_BACKWARD", spy_sl1[1])
    for reduction, expected in ((0, torch.empty(0, 3)), (1, torch.tensor(float("nan"))), (2, torch.tensor(0.0))):
        got = on_npu_path(ops.smooth_l1_loss.default, torch.empty(0, 3), torch.empty(3), reduction, 1.0)
        torch.testing.assert_close(got, expected, equal_nan=True)
    assert on_npu_path(ops.smooth_l1_loss_backward.default, torch.tensor(1.0), torch.empty(0, 3), torch.empty(3), 2,
                       1.0).shape == (0, 3)
    assert all(not s.shapes for s in spies) and not spy_elu.shapes and not any(s.shapes for s in spy_sl1)


def test_adaptive_avg_pool_empty_and_layout(monkeypatch):
    """An empty batch of planes makes no device call (aclnn refuses a 0 axis before the
    Ascend 950); a channels_last_3d self gives channels_last_3d results, as the CPU kernels."""
    spies = [Spy(npu_adaptive.ATEN_FORWARD), Spy(npu_adaptive.ATEN_BACKWARD)]
    monkeypatch.setattr(npu_adaptive, "ATEN_FORWARD", spies[0])
    monkeypatch.setattr(npu_adaptive, "ATEN_BACKWARD", spies[1])
    assert on_npu_path(ops.adaptive_avg_pool3d.default, torch.empty(0, 3, 4, 4, 4), [2, 3, 2]).shape == (0, 3, 2, 3, 2)
    assert on_npu_path(ops.adaptive_avg_pool3d_backward.default, torch.empty(0, 2, 3, 2),
                       torch.empty(0, 4, 4, 4)).shape == (0, 4, 4, 4)
    assert not any(s.shapes for s in spies)
    x = make_tensor((2, 3, 5, 4, 6), torch.float32, layout="channels_last_3d")
    g = make_tensor((2, 3, 2, 3, 4), torch.float32, layout="channels_last_3d")
    y = on_npu_path(ops.adaptive_avg_pool3d.default, x, [2, 3, 4])
    gx = on_npu_path(ops.adaptive_avg_pool3d_backward.default, g, x)
    assert [s.shapes for s in spies] == [[(2, 3, 5, 4, 6)], [(2, 3, 2, 3, 4)]]
    assert y.is_contiguous(memory_format=torch.channels_last_3d) and torch.equal(y, ops.adaptive_avg_pool3d(x, [2, 3, 4]))
    assert gx.is_contiguous(memory_format=torch.channels_last_3d)
    assert torch.equal(gx, ops.adaptive_avg_pool3d_backward(g, x))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last_3d"])
@pytest.mark.parametrize("mode,name", BACKWARDS)
@pytest.mark.parametrize("key", ["nc_od_oh", "workspace"])
def test_backward_splits_along_nc(monkeypatch, mode, name, key, layout):
    """Over a per-call limit (lowered here to 3 planes' worth) the call is
    split along N*C into calls that fit, with the same result."""
    N, C, out, inp = 2, 5, [6, 4, 5], [3, 2, 5]
    g = make_tensor((N, C, *out), torch.float32, layout=layout)
    geom = npu_upsample.geometry(N, C, out, inp, (None, None, None), g.dtype)
    bwd = getattr(ops, name)
    row = limits.row(name, key)
    monkeypatch.setattr(row, "max", 3 * row.measure(geom) + 1)
    spy = _spy_upsample(monkeypatch, "backward", mode)
    got = on_npu_path(bwd.default, g, out, [N, C, *inp])
    # 5 channels > 3 per call: each n in two calls of 3 and 2 channels.
    assert spy.shapes == [(1, 3, *out), (1, 2, *out)] * 2
    assert torch.equal(got, bwd(g, out, [N, C, *inp]))
    assert got.stride() == bwd(g, out, [N, C, *inp]).stride()


def test_split_keeps_whole_channel_rows(monkeypatch):
    """Calls take whole C rows of several n when they fit."""
    g = make_tensor((7, 2, 4, 4, 4), torch.float32)
    geom = npu_upsample.geometry(7, 2, [4, 4, 4], [2, 2, 2], (None, None, None), g.dtype)
    row = limits.row("upsample_nearest3d_backward", "nc_od_oh")
    monkeypatch.setattr(row, "max", 6 * row.measure(geom))
    spy = _spy_upsample(monkeypatch, "backward", "nearest")
    got = on_npu_path(ops.upsample_nearest3d_backward.default, g, [4, 4, 4], [7, 2, 2, 2, 2], 2.0, 2.0, 2.0)
    assert spy.shapes == [(3, 2, 4, 4, 4), (3, 2, 4, 4, 4), (1, 2, 4, 4, 4)]
    assert torch.equal(got, ops.upsample_nearest3d_backward(g, [4, 4, 4], [7, 2, 2, 2, 2], 2.0, 2.0, 2.0))


@pytest.mark.parametrize("mode,name", FORWARDS)
def test_forward_splits_along_nc(monkeypatch, mode, name):
    fwd = getattr(ops, name)
    x = make_tensor((3, 4, 2, 3, 4), torch.float32, layout="channels_last_3d")
    monkeypatch.setattr(limits.row(name, "axis_nc"), "max", 5)
    spy = _spy_upsample(monkeypatch, "forward", mode)
    got = on_npu_path(fwd.default, x, [4, 6, 8])
    assert spy.shapes == [(1, 4, 2, 3, 4)] * 3
    assert torch.equal(got, fwd(x, [4, 6, 8])) and got.stride() == fwd(x, [4, 6, 8]).stride()


@pytest.mark.parametrize("mode,name", BACKWARDS)
@pytest.mark.parametrize("key", ["axis_dhw", "ih_iw", "nc_od_oh"])
def test_beyond_splitting_uses_the_cpu_kernel(monkeypatch, mode, name, key):
    """Beyond what splitting fixes (an axis, iH*iW, or one plane alone over a
    per-call limit) the CPU kernel computes the call, with a one-time warning
    naming the limit. The sample is one where aten's CPU short-cut ignores the
    scale, so only the CPU kernel gives these numbers."""
    bwd = getattr(ops, name)
    row = limits.row(name, key)
    monkeypatch.setattr(row, "max", 8)
    spy = _spy_upsample(monkeypatch, "backward", mode)
    g = make_tensor((1, 2, 4, 10, 12), torch.float32)
    args = ([4, 10, 12], [1, 2, 4, 5, 6], 1.05, 2.1, 2.05)
    with pytest.warns(_glue.DeviceLimitWarning, match=re.escape(row.text)):
        got = on_npu_path(bwd.default, g, *args)
    assert torch.equal(got, bwd(g, *args))
    with warnings.catch_warnings():
        warnings.simplefilter("error", _glue.DeviceLimitWarning)  # once per operator and limit
        on_npu_path(bwd.default, g, *args)
    assert spy.shapes == []


def test_exact_scale_above_50_uses_the_cpu_kernel(monkeypatch):
    """aclnnUpsampleNearestExact3dBackward rejects an up-scale above 50 (161002);
    the glue computes it (the real limit, not lowered)."""
    spy = _spy_upsample(monkeypatch, "backward", "nearest-exact")
    g = make_tensor((1, 2, 51, 3, 2), torch.float32)
    with pytest.warns(_glue.DeviceLimitWarning, match=r"<= 50"):
        got = on_npu_path(ops.upsample_nearest_exact3d_backward.default, g, [51, 3, 2], [1, 2, 1, 3, 2])
    assert torch.equal(got, ops.upsample_nearest_exact3d_backward(g, [51, 3, 2], [1, 2, 1, 3, 2]))
    assert spy.shapes == []
    g = make_tensor((1, 2, 50, 3, 2), torch.float32)  # 50 itself is supported
    on_npu_path(ops.upsample_nearest_exact3d_backward.default, g, [50, 3, 2], [1, 2, 1, 3, 2])
    assert spy.shapes == [(1, 2, 50, 3, 2)]


@pytest.mark.parametrize("op,args", [
    (ops.upsample_nearest_exact3d_backward, lambda: (make_tensor((1, 2, 4, 4, 4), torch.float64), [4, 4, 4],
                                                     [1, 2, 2, 2, 2])),
    (ops.upsample_nearest_exact3d, lambda: (make_tensor((1, 2, 2, 2, 2), torch.float64), [4, 4, 4])),
    (ops.elu, lambda: (make_tensor((3, 4), torch.float64), 1.0, 1.0, 1.0)),
    (ops.elu_backward, lambda: (make_tensor((3, 4), torch.float64), 1.0, 1.0, 1.0, False,
                                make_tensor((3, 4), torch.float64))),
    (ops.smooth_l1_loss, lambda: (make_tensor((3, 4), torch.float64), make_tensor((3, 4), torch.float32), 1, 1.0)),
    (ops.leaky_relu, lambda: (make_tensor((3, 4), torch.float64), 0.01)),
    (ops.leaky_relu_backward, lambda: (make_tensor((3, 4), torch.float64), make_tensor((3, 4), torch.float64),
                                       0.01, False)),
    (ops.max_unpool3d, lambda: (make_tensor((1, 2, 2, 2, 2), torch.bfloat16),
                                torch.arange(8).repeat(2).view(1, 2, 2, 2, 2), [2, 2, 2], [1, 1, 1], [0, 0, 0])),
    (ops.smooth_l1_loss_backward, lambda: (make_tensor((), torch.float64), make_tensor((3, 4), torch.float64),
                                           make_tensor((4,), torch.float64), 2, 0.5)),
    (ops.avg_pool3d, lambda: (make_tensor((1, 2, 4, 4, 4), torch.float64), [2], [], [0], False, True, None)),
    (ops.avg_pool3d_backward, lambda: (make_tensor((1, 2, 2, 2, 2), torch.float64),
                                       make_tensor((1, 2, 4, 4, 4), torch.float64), [2], [], [0], False, True, None)),
    (ops.adaptive_avg_pool3d, lambda: (make_tensor((1, 2, 5, 4, 3), torch.float64), [2, 3, 2])),
    (ops.adaptive_avg_pool3d_backward, lambda: (make_tensor((1, 2, 2, 3, 2), torch.float64),
                                                make_tensor((1, 2, 5, 4, 3), torch.float64))),
])
def test_dtype_without_an_aclnn_kernel_uses_the_cpu_kernel(op, args):
    a = args()
    with pytest.warns(_glue.DeviceLimitWarning, match="float64|bfloat16"):
        got = on_npu_path(op.default, *a)
    assert got.dtype == a[0].dtype or got.dtype == torch.float64
    assert torch.equal(got, op(*a))


@pytest.mark.parametrize("name", ["smooth_l1_loss", "smooth_l1_loss_backward"])
def test_smooth_l1_more_than_8_dims_uses_the_cpu_kernel(name):
    """aclnn's SmoothL1Loss[Backward] take at most 8 dims (MAX_SUPPORT_DIMS_NUMS); the spec has no such limit."""
    x, t = make_tensor((2,) + (1,) * 8, torch.float32), make_tensor((3,), torch.float32)
    args = (x, t, 0, 1.0) if name == "smooth_l1_loss" else (make_tensor((2,) + (1,) * 7 + (3,), torch.float32),
                                                              x, t, 0, 1.0)
    op = getattr(ops, name)
    with pytest.warns(_glue.DeviceLimitWarning, match="at most 8 dims"):
        got = on_npu_path(op.default, *args)
    assert torch.equal(got, op(*args))


def test_limit_table_is_consistent():
    """Every row names a known operator, a handling and a source; keys are unique per operator."""
    seen = set()
    for r in limits.LIMITS:
        assert r.handling in (limits.SPLIT, limits.CPU) and r.source and r.text
        for op in r.ops:
            assert hasattr(ops, op), op
            assert (op, r.key) not in seen
            seen.add((op, r.key))


def test_plane_chunks_cover_every_plane_once():
    for N, C, k in [(1, 1, 1), (2, 5, 3), (7, 2, 6), (4, 4, 16), (3, 10, 4), (5, 1, 2)]:
        planes = [(n, c) for n0, n1, c0, c1 in _glue.plane_chunks(N, C, k)
                  for n in range(n0, n1) for c in range(c0, c1)]
        assert sorted(planes) == [(n, c) for n in range(N) for c in range(C)]
        assert all((n1 - n0) * (c1 - c0) <= k for n0, n1, c0, c1 in _glue.plane_chunks(N, C, k))
