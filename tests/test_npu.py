"""The NPU path (torch_aclnn/npu/): the PrivateUse1 kernel of every operator.

Without an NPU, each PrivateUse1 kernel is called with CPU tensors by
redispatching to the PrivateUse1 key: the glue's real code runs (contract on
meta copies, empty handling, limits, splitting, CPU path, corrections,
layout) and the aten operators it calls run aten's CPU kernels, standing in
for torch_npu's. Its results are compared with torch_aclnn's CPU kernels on
the shared OpInfo samples.

The tests at the end need a real Ascend NPU with torch_npu and are skipped
(not passed) without one. The corrections where torch_npu and the spec
differ, the device limits and the guarded import of torch_npu:
tests/test_npu_{corrections,limits,optional}.py.
"""
from __future__ import annotations

import re
import warnings

import pytest
import torch

from torch_aclnn import npu
from torch_aclnn.npu import _glue, limits
from torch_aclnn.npu import upsample as npu_upsample
from torch_aclnn.npu import upsample_trilinear as npu_trilinear
from torch_aclnn.testing import OPS, make_tensor, results, tolerance
from torch_aclnn.testing import upsample as upsample_infos

from npu_path import BACKWARDS, on_npu_path, ops
from npu_path import _fresh_warnings  # noqa: F401  (an autouse fixture)


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
