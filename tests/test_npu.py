"""The NPU path (torch_aclnn/npu/): the PrivateUse1 kernel of every operator.

Without an NPU, each PrivateUse1 kernel is called with CPU tensors by
redispatching to the PrivateUse1 key: the glue's real code runs (contract on
meta copies, empty handling, limits, splitting, CPU path, corrections,
layout) and the aten operators it calls run aten's CPU kernels, standing in
for torch_npu's. Its results are compared with torch_aclnn's CPU kernels on
the shared OpInfo samples.

The tests at the end need a real Ascend NPU with torch_npu and are skipped
(not passed) without one.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

from torch_aclnn import npu
from torch_aclnn.npu import _glue, limits
from torch_aclnn.npu import adaptive_avg_pool as npu_adaptive
from torch_aclnn.npu import elu as npu_elu
from torch_aclnn.npu import leaky_relu as npu_leaky_relu
from torch_aclnn.npu import max_unpool as npu_max_unpool
from torch_aclnn.npu import smooth_l1 as npu_smooth_l1
from torch_aclnn.npu import upsample as npu_upsample
from torch_aclnn.npu import upsample_trilinear as npu_trilinear
from torch_aclnn.testing import OPS, make_tensor, results, tolerance
from torch_aclnn.testing import upsample as upsample_infos

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ops = torch.ops.torch_aclnn
PU1 = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)


def on_npu_path(overload, *args, **kwargs):
    """Runs the PrivateUse1 kernel (the NPU glue) of ``overload``."""
    return overload.redispatch(PU1, *args, **kwargs)


# ---------------------------------------------------------------------------
# Where the simulated backend implements the spec.
#
# The glue's device calls run aten's CPU kernels here. Where those differ
# from the spec by themselves (not through anything the glue does) the
# glue's result cannot match ours, so such samples are left out, each for a
# stated reason:
#   upsample  aten's CPU nearest backward short-cuts out == in and out == 2*in
#             and then ignores a given scale (docs/spec.md §1, pytorch#97135); the
#             NPU kernel has no such short-cut (its tiling uses the given
#             scale). Decided per sample with the OpInfo's own exact_vs_aten
#             rule applied to the scales the glue actually passes (all three
#             or none), so samples with scales for some axes only are kept:
#             the glue's all-or-nothing correction must make them match.
#   adaptive_avg_pool  aten's CPU float16/bfloat16 kernels round the partial
#             sums (the spec sums in float32 and rounds once): only samples
#             with one term per element (output of the input's size) are kept.
#   max_unpool aten's CPU max_unpool3d has no integer kernels (aclnnMaxUnpool3d
#             has INT8, UINT8, INT16, INT32, INT64): integer forward samples
#             are left out (the glue has no dtype-dependent code there).
# Where bitwise equality is expected (float32/float64, and integer dtypes):
#   upsample  exactly where the rule above holds;
#   elu       where the OpInfo marks exact_vs_aten (aten's vectorised path;
#             its scalar loop is up to 2 ulp away, within tolerance).
#   smooth_l1 where the OpInfo marks exact_vs_aten: its aten counterpart is
#             called exactly as the glue calls it (inputs promoted and
#             broadcast, the beta == 0 point corrected); reductions sum in
#             another order than our float64 one, within tolerance.
#   max_unpool everywhere (elements are moved, never computed), duplicates
#             included: the glue leaves none for the scatter to choose from.

def _upsample_case(name, s):
    mode = upsample_infos.NEAREST if "exact" not in name else upsample_infos.EXACT
    backward = name.endswith("_backward")
    if backward:
        out, in_shape, scales = s.args[1], s.args[2], s.args[3:6]
    else:
        out, in_shape, scales = s.args[1], list(s.args[0].shape), s.args[2:5]
    scales = npu_upsample.device_scales(tuple(scales) + (None,) * (3 - len(scales)))
    return upsample_infos.exact_vs_aten(mode, in_shape, out, scales, backward)


def _trilinear_case(name, s):
    """upsample_trilinear: aten's CPU kernel copies an axis whose output size
    equals its input size, ignoring a given scale != 1 there (docs/spec.md §10);
    such samples are left out. Elsewhere it computes the spec's weights, its
    sums rounded in another order (within tolerance, never bitwise)."""
    backward = name.endswith("_backward")
    out, in_shape = (s.args[1], s.args[2]) if backward else (s.args[1], list(s.args[0].shape))
    align, scales = (s.args[3], s.args[4:7]) if backward else (s.args[2], s.args[3:6])
    scales = npu_trilinear.device_scales(align, tuple(scales) + (None,) * (3 - len(scales)))
    return not any(sc is not None and out[i] == in_shape[2 + i] and sc != 1.0 for i, sc in enumerate(scales))


def simulated_spec(name, s) -> bool:
    """Whether aten's CPU kernels, called as the glue calls them, compute the spec for sample ``s``."""
    if OPS[name].family == "upsample":
        return _upsample_case(name, s)
    if OPS[name].family == "upsample_trilinear":
        return _trilinear_case(name, s)
    if name == "max_unpool3d":
        return s.args[0].dtype.is_floating_point
    if name == "max_pool3d_with_indices_backward":  # aten rounds float16/bfloat16 after each addition
        return s.exact_vs_aten
    if OPS[name].family == "avg_pool":  # aten's CPU kernels have no float16/bfloat16 avg_pool3d
        return s.args[0].dtype in (torch.float32, torch.float64)
    if OPS[name].family == "adaptive_avg_pool":  # aten's float16/bfloat16 kernels round the partial sums
        return s.exact_vs_aten
    return True


def bitwise_expected(name, s) -> bool:
    if OPS[name].family == "upsample":
        return _upsample_case(name, s)
    if OPS[name].family == "max_unpool":
        return True
    return s.exact_vs_aten


OP_DTYPES = [pytest.param(name, dt, id=f"{name}-{str(dt).replace('torch.', '')}")
             for name, info in OPS.items() for dt in info.dtypes]


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    """Each test sees the one-time warnings afresh."""
    monkeypatch.setattr(_glue, "_warned", set())


@pytest.mark.parametrize("name,dtype", OP_DTYPES)
def test_glue_matches_cpu_kernels(name, dtype):
    """On every shared sample where the simulated backend implements the
    spec: same shape, dtype and strides as our CPU kernel, the spec's values
    (float64 reference, stated tolerance), bitwise equal where expected."""
    info = OPS[name]
    if name == "upsample_trilinear3d" and dtype in (torch.float16, torch.bfloat16):
        pytest.skip("aten's CPU trilinear forward rounds its weights and each lerp to the dtype (ours: once), "
                    "beyond the spec's tolerance; the backward's samples are checked")
    if name == "max_unpool3d" and not dtype.is_floating_point:
        pytest.skip("aten's CPU max_unpool3d has no integer kernels to stand in for aclnnMaxUnpool3d's")
    if info.family == "avg_pool" and dtype in (torch.float16, torch.bfloat16):
        pytest.skip("aten's CPU avg_pool3d has no float16/bfloat16 kernels to stand in for aclnnAvgPool3d's")
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _glue.DeviceLimitWarning)  # float64 where aclnn has none
        for s in info.samples("cpu", dtype):
            if not simulated_spec(name, s):
                continue
            gots = results(on_npu_path(info.op, *s.args, **s.kwargs))
            ourss = results(info.op(*s.args, **s.kwargs))
            refs = results(info.reference(*s.args, **s.kwargs))
            for got, ours, ref in zip(gots, ourss, refs, strict=True):
                assert (got.shape, got.dtype) == (ours.shape, ours.dtype), s
                if got.numel() > 1:
                    assert got.stride() == ours.stride(), s
                torch.testing.assert_close(got.to(ref.dtype), ref, check_dtype=False, equal_nan=True,
                                           msg=lambda m: f"{s}: {m}", **tolerance(got.dtype))
                if (dtype in (torch.float32, torch.float64) or not got.dtype.is_floating_point) and \
                        bitwise_expected(name, s):
                    torch.testing.assert_close(got, ours, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{s}: {m}")
            checked += 1
    assert checked > 0


def dtype_is_float(t):
    return t.dtype.is_floating_point


def _out_accepted(info, s, out):
    try:
        _glue.validate(info.out_op, *s.args, **s.kwargs, **{info.out_kwarg: out})
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("name", [n for n in OPS if OPS[n].out_overload])
def test_glue_out_variant(name):
    """The out= overload's kernel writes the functional kernel's values into
    the given tensor (either layout); the schema returns ()."""
    info = OPS[name]
    for s in info.samples("cpu", torch.float32):
        if not simulated_spec(name, s):
            continue
        expected = on_npu_path(info.op, *s.args, **s.kwargs)
        formats = (torch.contiguous_format, torch.channels_last_3d) if expected.dim() == 5 else (
            torch.contiguous_format,)
        for fmt in formats:
            out = torch.full_like(expected, float("nan") if dtype_is_float(expected) else 7, memory_format=fmt)
            if fmt != torch.contiguous_format and not _out_accepted(info, s, out):
                continue  # the contract requires a contiguous out tensor (max_unpool3d_backward)
            assert on_npu_path(info.out_op, *s.args, **s.kwargs, **{info.out_kwarg: out}) is None
            torch.testing.assert_close(out, expected, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{s}: {m}")


def _error_params():
    for name, info in OPS.items():
        for i, e in enumerate(info.errors("cpu")):
            yield pytest.param(name, i, id=f"{name}-{re.sub(r'[^A-Za-z0-9]+', '_', e.sample.desc)}")


@pytest.mark.parametrize("name,index", list(_error_params()))
def test_glue_contract_errors(name, index):
    """Every contract error fires on the NPU path too, with the same type and
    message (data-dependent rules included: the glue checks them itself)."""
    info = OPS[name]
    e = list(info.errors("cpu"))[index]
    target = info.op if e.overload == "default" else getattr(info.packet, e.overload)
    with pytest.raises(e.exc, match=rf"^\[torch_aclnn {e.code}\] {name}: .*{e.match}"):
        on_npu_path(target, *e.sample.args, **e.sample.kwargs)


def test_every_operator_has_a_privateuse1_kernel():
    """Each schema of the implemented families has a PrivateUse1 kernel (out= overloads included)."""
    for name, info in OPS.items():
        for overload in ["default"] + ([info.out_overload] if info.out_overload else []):
            qualified = f"torch_aclnn::{name}" + ("" if overload == "default" else f".{overload}")
            assert torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "PrivateUse1"), qualified


# ---------------------------------------------------------------------------
# Corrections where torch_npu/aclnn and the spec differ.

class Spy:
    """Wraps a device operator: counts calls and records the first argument's shape."""

    def __init__(self, fn):
        self.fn, self.shapes = fn, []

    def __call__(self, *args, **kwargs):
        self.shapes.append(tuple(args[0].shape))
        return self.fn(*args, **kwargs)


FORWARDS = [("nearest", "upsample_nearest3d"), ("nearest-exact", "upsample_nearest_exact3d")]
BACKWARDS = [("nearest", "upsample_nearest3d_backward"), ("nearest-exact", "upsample_nearest_exact3d_backward")]


def _spy_upsample(monkeypatch, which, mode):
    table = npu_upsample.ATEN_FORWARD if which == "forward" else npu_upsample.ATEN_BACKWARD
    spy = Spy(table[mode])
    monkeypatch.setitem(table, mode, spy)
    return spy


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


# ---------------------------------------------------------------------------
# torch_npu is optional and its import is guarded.

_FAKE = {
    "ImportError": "raise ImportError('libhccl.so: cannot open shared object file')",
    "OSError": "raise OSError('libascendcl.so: wrong ELF class')",
    "SystemExit": "import sys; sys.exit('torch_npu 2.1 does not support this torch')",
    "RuntimeError": "raise RuntimeError('CANN version mismatch')",
}


def _run_python(code, env_extra, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]), **env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("failure", list(_FAKE))
def test_broken_torch_npu_never_breaks_import(tmp_path, failure):
    """A torch_npu whose import fails (missing CANN libraries, an old build
    calling sys.exit, ...) leaves `import torch_aclnn` working, the NPU
    path unavailable with the reason, and the kernels registered."""
    pkg = tmp_path / "torch_npu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_FAKE[failure] + "\n")
    r = _run_python("""
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch, torch_aclnn
        import torch_aclnn.npu as npu
        assert torch_aclnn.__file__.startswith(%r), torch_aclnn.__file__
        assert not npu.is_available()
        print("REASON", npu.unavailable_reason())
        print("WARNED", any("torch_npu is installed but unusable" in str(w.message) for w in caught))
        print("KERNEL", torch._C._dispatch_has_kernel_for_dispatch_key("torch_aclnn::elu", "PrivateUse1"))
        x = torch.randn(2, 3)
        print("CPU", torch.allclose(torch_aclnn.elu(x), torch.nn.functional.elu(x)))
    """ % ROOT, {}, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"REASON import torch_npu failed: {failure}" in r.stdout, r.stdout
    assert "WARNED True" in r.stdout and "KERNEL True" in r.stdout and "CPU True" in r.stdout, r.stdout


def test_autoload_disabled_defers_the_import(tmp_path):
    """With TORCH_DEVICE_BACKEND_AUTOLOAD=0, `import torch_aclnn` does not
    import torch_npu; is_available() tries (guarded) and reports why not.
    sys.modules['torch_npu'] = None (an import that must fail) is handled too."""
    r = _run_python("""
        import sys
        import torch_aclnn
        assert "torch_npu" not in sys.modules
        sys.modules["torch_npu"] = None
        assert torch_aclnn.npu.is_available() is False
        print("REASON", torch_aclnn.npu.unavailable_reason())
    """, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "REASON import torch_npu failed: ModuleNotFoundError" in r.stdout or \
        "REASON import torch_npu failed: ImportError" in r.stdout, r.stdout


# As the real torch_npu 2.14.0 is without CANN (checked for real by
# tests/compat/test_npu_import.py): registered for torch's device-backend
# autoload, it switches the autoload off, imports torch, then fails.
_AUTOLOADED = """
import os
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
import torch
raise ImportError("libhccl.so: cannot open shared object file: No such file or directory")
"""


def test_autoloaded_torch_npu_without_cann(tmp_path):
    """A plain `import torch` fails (torch's autoload turns torch_npu's
    ImportError into RuntimeError); `import torch_aclnn` imports torch_npu
    first, so torch imports, the reason is kept, and the autoload switch that
    torch_npu left at "0" is put back."""
    (tmp_path / "torch_npu").mkdir()
    (tmp_path / "torch_npu" / "__init__.py").write_text(_AUTOLOADED)
    dist = tmp_path / "torch_npu-2.14.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.14.0\n")
    (dist / "entry_points.txt").write_text("[torch.backends]\ntorch_npu = torch_npu:_autoload\n")
    on = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}
    r = _run_python("import torch", on, tmp_path)
    assert r.returncode != 0 and "Failed to load the backend extension: torch_npu" in r.stderr, r.stderr
    r = _run_python("""
        import os, warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch_aclnn
        import torch
        print("REASON", torch_aclnn.npu.unavailable_reason())
        print("WARNED", any("torch_npu is installed but unusable" in str(w.message) for w in caught))
        print("AUTOLOAD", os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD"))
        x = torch.randn(2, 3)
        print("CPU", torch.allclose(torch_aclnn.elu(x), torch.nn.functional.elu(x)))
    """, on, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "REASON import torch_npu failed: ImportError: libhccl.so: cannot open shared object file" in r.stdout
    assert "WARNED True" in r.stdout and "AUTOLOAD 1" in r.stdout and "CPU True" in r.stdout, r.stdout
    r = _run_python("import sys; from torch_aclnn.__main__ import main; sys.exit(main(['info']))", on, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"torch_npu +2\.14\.0", r.stdout), r.stdout
    assert re.search(r"Ascend NPU available +False \(import torch_npu failed: ImportError: libhccl\.so", r.stdout)


def test_check_report_refuses_an_unavailable_npu():
    from torch_aclnn import __main__ as cli
    if npu.is_available():
        pytest.skip("an NPU is available")
    assert cli.main(["check", "--device", "npu", "--op", "elu"]) == 2


# ---------------------------------------------------------------------------
# On a real Ascend NPU (skipped, with the reason, where there is none).

requires_npu = pytest.mark.skipif(not npu.is_available(),
                                  reason=f"needs an Ascend NPU with torch_npu ({npu.unavailable_reason()})")


@requires_npu
@pytest.mark.parametrize("name,dtype", OP_DTYPES)
def test_npu_matches_reference(name, dtype):
    info = OPS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _glue.DeviceLimitWarning)
        for s in info.samples("npu", dtype):
            cpu = s.map_tensors(lambda t: t.cpu())
            gots, ourss = results(info.op(*s.args, **s.kwargs)), results(info.op(*cpu.args, **cpu.kwargs))
            refs = results(info.reference(*cpu.args, **cpu.kwargs))
            for got, ours, ref in zip(gots, ourss, refs, strict=True):
                assert got.device.type == "npu" and (got.shape, got.dtype) == (ours.shape, ours.dtype), s
                if got.numel() > 1:
                    assert got.stride() == ours.stride(), s
                torch.testing.assert_close(got.cpu().to(ref.dtype), ref, check_dtype=False, equal_nan=True,
                                           msg=lambda m: f"{s}: {m}", **tolerance(got.dtype))


@requires_npu
@pytest.mark.parametrize("name,index", list(_error_params()))
def test_npu_contract_errors(name, index):
    info = OPS[name]
    e = list(info.errors("npu"))[index]
    target = info.op if e.overload == "default" else getattr(info.packet, e.overload)
    with pytest.raises(e.exc, match=rf"^\[torch_aclnn {e.code}\] {name}: .*{e.match}"):
        target(*e.sample.args, **e.sample.kwargs)


@requires_npu
@pytest.mark.parametrize("mode,name", BACKWARDS)
def test_npu_split_and_cpu_path(monkeypatch, mode, name):
    bwd = getattr(ops, name)
    g = make_tensor((2, 5, 6, 4, 5), torch.float32, "npu")
    args = ([6, 4, 5], [2, 5, 3, 2, 5])
    expected = bwd(g.cpu(), *args)
    monkeypatch.setattr(limits.row(name, "nc_od_oh"), "max", 3 * 6 * 4)
    torch.testing.assert_close(bwd(g, *args).cpu(), expected, rtol=2e-6, atol=1e-6)
    monkeypatch.setattr(limits.row(name, "axis_dhw"), "max", 4)
    with pytest.warns(_glue.DeviceLimitWarning):
        assert torch.equal(bwd(g, *args).cpu(), expected)


@requires_npu
def test_npu_autograd_and_compile():
    x = make_tensor((2, 3, 4, 5, 6), torch.float32, "npu", requires_grad=True)
    y = ops.upsample_nearest3d(x, [8, 10, 12], 2.0, 2.0, 2.0)
    (g,) = torch.autograd.grad(y.square().sum(), x)
    xc = x.detach().cpu().requires_grad_(True)
    (gc,) = torch.autograd.grad(ops.upsample_nearest3d(xc, [8, 10, 12], 2.0, 2.0, 2.0).square().sum(), xc)
    torch.testing.assert_close(g.cpu(), gc)
    fn = torch.compile(lambda t: ops.elu(t, 1.0, 1.0, 1.0), fullgraph=True, dynamic=True, backend="aot_eager")
    torch.testing.assert_close(fn(x).cpu(), ops.elu(x.detach().cpu(), 1.0, 1.0, 1.0))


@requires_npu
def test_npu_check_report():
    from torch_aclnn import __main__ as cli
    assert cli.main(["check", "--device", "npu", "--quick"]) == 0


@requires_npu
def test_npu_upsample_backward_deterministic_mode():
    """With torch.use_deterministic_algorithms(True) (CANN's deterministic
    mode via torch_npu) repeated backward calls give the same bits."""
    g = make_tensor((2, 8, 16, 32, 32), torch.float32, "npu")
    prev = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        runs = [ops.upsample_nearest3d_backward(g, [16, 32, 32], [2, 8, 5, 9, 11]) for _ in range(3)]
    finally:
        torch.use_deterministic_algorithms(prev)
    assert all(torch.equal(runs[0], r) for r in runs[1:])

