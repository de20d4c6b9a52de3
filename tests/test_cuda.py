"""CUDA-only behaviour (skipped where torch sees no GPU or the build has no
CUDA kernels): the kernels give the CPU kernels' answers (bitwise where
they do the same arithmetic), run on the current stream, CUDA graph capture and
replay give the eager results, the device guard follows the input, and an
invalid index raises the spec's IndexError on the device too: at the call in
synchronous mode, after it by default (docs/spec.md §7).

Everything else runs on CUDA through the device-parametrised generic tests
(tests/test_common.py, tests/test_upsample.py) and through
`pytest --default-device cuda` over the per-family test files."""
import contextlib

import pytest
import torch

import torch_aclnn
from torch_aclnn import _loader
from torch_aclnn.testing import OPS, first, results, tolerance
from torch_aclnn.testing.core import FLOATING, make_layout, make_tensor

pytestmark = pytest.mark.skipif(not (torch.cuda.is_available() and _loader.has_cuda_kernels()),
                                reason="needs a CUDA device and a build with the CUDA kernels")

OP_NAMES = list(OPS)


def _sample(name, dtype=torch.float32):
    return next(iter(OPS[name].samples("cuda", dtype)))


# Kernels that do the CPU kernels' additions in the CPU kernels' order, or
# only move elements: bitwise equal to them. (The ELU kernels use the
# device's exp/expm1 and the smooth_l1 reductions add in another order.)
BITWISE_WITH_CPU = [n for n in OP_NAMES if n.startswith(("upsample", "max_unpool", "max_pool", "adaptive_avg_pool"))]


@pytest.mark.parametrize("name", OP_NAMES)
def test_matches_the_cpu_kernels(name):
    """Every sample in every dtype gives the CPU kernel's answer."""
    info = OPS[name]
    for dtype in info.dtypes:
        for s in info.samples("cuda", dtype):
            cpu = s.map_tensors(lambda t: t.detach().cpu())
            wants = results(info.op(*cpu.args, **cpu.kwargs))
            for got, want in zip(results(info.op(*s.args, **s.kwargs)), wants, strict=True):
                got = got.cpu()
                if name in BITWISE_WITH_CPU:
                    assert torch.equal(got, want), f"{s}: max diff {(got.double() - want.double()).abs().max()}"
                else:
                    torch.testing.assert_close(got, want, equal_nan=True, msg=lambda m: f"{s}: {m}",
                                               **tolerance(got.dtype))


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
@pytest.mark.parametrize("scale", [(2, 2, 2), (1, 2, 2), (2, 1, 1), (1, 1, 4), (3, 2, 2), (2, 3, 2)])
def test_upsample_backward_integer_scales(dtype, scale):
    """Integer scales take the packed backward where rows are dense and
    aligned, the one-element kernel otherwise: both equal the CPU kernel."""
    insz = [2, 3, 3, 5, 16]
    out = [insz[2 + i] * scale[i] for i in range(3)]
    dense = make_tensor(insz[:2] + out, dtype, device="cuda")
    shifted = make_tensor([dense.numel() + 1], dtype, device="cuda")[1:].view(dense.shape)  # misaligned
    strided = make_tensor(insz[:2] + out[:2] + [2 * out[2]], dtype, device="cuda")[..., ::2]
    for op in (torch.ops.torch_aclnn.upsample_nearest3d_backward,
               torch.ops.torch_aclnn.upsample_nearest_exact3d_backward):
        for g in (dense, shifted, strided):
            for args in ((out, insz), (out, insz, *map(float, scale))):
                got = op(g, *args)
                assert torch.equal(got.cpu(), op(g.cpu(), *args)), (op, g.stride(), args)


def _packed_backward_cases(dtype, device):
    """(op, args) calls that take the packed CUDA backwards
    (csrc/cuda/upsample.cuh backward_path: channels_last_3d channels, NCDHW
    rows and W folds at scales 2, 1.5 and 0.5, where the W taps are unrolled,
    and 3, where they loop; csrc/cuda/max_unpool.cuh gather_packs: NCDHW and
    channels_last_3d), with 16 channels and rows of 16, so that every dtype's
    packs are whole."""
    insz = [2, 16, 4, 6, 16]
    for scale in (2.0, 1.5, 0.5, 3.0):
        out = [int(n * scale) for n in insz[2:]]
        for layout in ("contiguous", "channels_last_3d"):
            g = make_tensor(insz[:2] + out, dtype, device=device, layout=layout)
            for op in (torch.ops.torch_aclnn.upsample_nearest3d_backward,
                       torch.ops.torch_aclnn.upsample_nearest_exact3d_backward):
                yield op, (g, out, insz, scale, scale, scale)
    shape, out = [2, 16, 2, 4, 8], [4, 8, 16]
    idx = torch.randint(0, out[0] * out[1] * out[2], shape, generator=torch.Generator().manual_seed(0))
    x = make_tensor(shape, dtype, device=device)
    for layout in ("contiguous", "channels_last_3d"):
        g = make_tensor(shape[:2] + out, dtype, device=device, layout=layout)
        i = make_layout(idx, layout).to(device)
        yield torch.ops.torch_aclnn.max_unpool3d_backward, (g, x, i, out, [2, 2, 2], [0, 0, 0])


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_packed_backwards_match_the_cpu_kernels(dtype):
    """The packed CUDA backwards give the CPU kernels' bits into a fresh
    result, and the one-element kernels into an out= result one element into
    its buffer (where no pack is aligned)."""
    for op, args in _packed_backward_cases(dtype, "cuda"):
        want = op(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args])
        assert torch.equal(op(*args).cpu(), want), (op, [getattr(a, "shape", a) for a in args])
        shifted = torch.empty(want.numel() + 1, dtype=dtype, device="cuda")[1:].view(want.shape)
        op.grad_input(*args, grad_input=shifted)
        assert torch.equal(shifted.cpu(), want), (op, "out= at an offset")


@pytest.mark.parametrize("name", OP_NAMES)
def test_runs_on_the_current_stream(name):
    """A result computed on a side stream is complete once that stream is synchronised."""
    info = OPS[name]
    s = _sample(name)
    eager = first(info.op(*s.args, **s.kwargs))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            out = first(info.op(*s.args, **s.kwargs))
    side.synchronize()
    assert torch.equal(out, eager) or torch.allclose(out, eager, equal_nan=True)


@contextlib.contextmanager
def _index_checks(sync):
    """Index checks in the given mode, none pending at the start."""
    torch_aclnn.check_index_errors()
    previous = torch_aclnn.set_sync_index_checks(sync)
    try:
        yield
    finally:
        torch_aclnn.set_sync_index_checks(previous)


@pytest.fixture(params=[True, False], ids=["sync checks", "deferred checks"])
def index_check_mode(request):
    with _index_checks(sync=request.param):
        yield request.param


@pytest.mark.parametrize("name", OP_NAMES)
def test_cuda_graph_replay_matches_eager(name, index_check_mode):
    """In both index-check modes: with deferred checks, the eager calls leave
    checks pending, which a call being captured must not query."""
    info = OPS[name]
    s = _sample(name)
    eager = info.op(*s.args, **s.kwargs)
    side = torch.cuda.Stream()  # warm-up on a side stream, as torch.cuda.graph's docs ask
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        info.op(*s.args, **s.kwargs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = info.op(*s.args, **s.kwargs)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(captured, eager, rtol=0, atol=0, equal_nan=True)
    torch_aclnn.check_index_errors()


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("name", OP_NAMES)
def test_second_device(name):
    info = OPS[name]
    s = _sample(name).map_tensors(lambda t: t.to("cuda:1"))
    out = first(info.op(*s.args, **s.kwargs))
    assert out.device == torch.device("cuda:1")


def _bad_index_call(op):
    """A call of `op` on CUDA with one bad index, and the message its error has."""
    x = torch.randn(1, 2, 2, 2, 2, device="cuda")
    idx = torch.zeros(1, 2, 2, 2, 2, dtype=torch.int64, device="cuda")
    if op == "max_pool3d_with_indices_backward":
        idx[0, 1, 0, 0, 1] = 2  # (2, 2, 2) input, kernel 1: output (0, 0, 1)'s window holds position 1 only
        g = torch.randn(1, 2, 2, 2, 2, device="cuda")
        args = (g, x, idx, [1], [1], [0], [1], False)
        return (lambda: torch.ops.torch_aclnn.max_pool3d_with_indices_backward(*args),
                r"max_pool3d_with_indices_backward: indices\[0, 1, 0, 0, 1\] = 2 is not a position")
    idx[0, 1, 1, 0, 1] = 64  # output plane is 4*4*4 = 64 elements: 64 is out of range
    args = (x, idx, [4, 4, 4], [2, 2, 2], [0, 0, 0])
    message = rf"{op}: indices\[0, 1, 1, 0, 1\] = 64 is outside \[0, 64\)"
    if op == "max_unpool3d":
        return lambda: torch.ops.torch_aclnn.max_unpool3d(*args), message
    go = torch.randn(1, 2, 4, 4, 4, device="cuda")
    return lambda: torch.ops.torch_aclnn.max_unpool3d_backward(go, *args), message


INDEX_CHECKED = ["max_unpool3d", "max_unpool3d_backward", "max_pool3d_with_indices_backward"]


@pytest.fixture
def deferred_checks():
    """The default mode (tests/conftest.py sets the synchronous one)."""
    with _index_checks(sync=False):
        yield


@pytest.mark.parametrize("op", INDEX_CHECKED)
def test_invalid_index_raises_at_the_call_in_sync_mode(op):
    call, message = _bad_index_call(op)
    with pytest.raises(IndexError, match=r"^\[torch_aclnn 161002\] " + message):
        call()
    assert torch_aclnn._C._pending_index_checks() == 0
    # the device is still usable afterwards
    x = torch.randn(1, 2, 2, 2, 2, device="cuda")
    assert torch.ops.torch_aclnn.elu(x).isfinite().all()


@pytest.mark.parametrize("op", INDEX_CHECKED)
def test_invalid_index_raises_later_by_default(op, deferred_checks):
    """The call returns without waiting for the GPU; check_index_errors()
    raises the tagged error once."""
    call, message = _bad_index_call(op)
    call()
    with pytest.raises(IndexError, match=r"^\[torch_aclnn 161002\] deferred: " + message):
        torch_aclnn.check_index_errors()
    torch_aclnn.check_index_errors()  # raised once
    assert torch_aclnn._C._pending_index_checks() == 0


def test_invalid_index_raises_at_the_next_cuda_call(deferred_checks):
    call, message = _bad_index_call("max_unpool3d")
    call()
    torch.cuda.synchronize()  # the check has arrived
    x = torch.randn(4, device="cuda")
    with pytest.raises(IndexError, match=r"^\[torch_aclnn 161002\] deferred: " + message):
        torch.ops.torch_aclnn.elu(x)
    assert torch.ops.torch_aclnn.elu(x).isfinite().all()  # the next call runs


def test_graph_capture_leaves_a_pending_failed_check_alone(deferred_checks):
    """A call being captured does not read pending checks (a query during
    capture would invalidate it); the error comes after."""
    x = torch.randn(8, device="cuda")
    torch.ops.torch_aclnn.elu(x)  # warm-up
    call, message = _bad_index_call("max_unpool3d")
    call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = torch.ops.torch_aclnn.elu(x)
    assert torch_aclnn._C._pending_index_checks() == 1
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.nn.functional.elu(x), rtol=0, atol=1e-6)
    with pytest.raises(IndexError, match=r"deferred: " + message):
        torch_aclnn.check_index_errors()


def test_valid_calls_leave_nothing_pending(deferred_checks):
    x = torch.randn(1, 2, 4, 4, 4, device="cuda")
    values, idx = torch.ops.torch_aclnn.max_pool3d_with_indices(x, [2], [2], [0], [1], False)
    for _ in range(3):
        torch.ops.torch_aclnn.max_unpool3d(values, idx, [4, 4, 4], [2, 2, 2], [0, 0, 0])
    torch.cuda.synchronize()
    torch.ops.torch_aclnn.elu(x)  # drops the arrived, passed checks
    assert torch_aclnn._C._pending_index_checks() == 0


def test_dropin_raises_a_bad_index_at_the_call_in_sync_mode():
    """Not handed to torch, whose CUDA kernel would stop the process."""
    x = torch.randn(1, 2, 2, 2, 2, device="cuda")
    idx = torch.zeros(1, 2, 2, 2, 2, dtype=torch.int64, device="cuda")
    idx[0, 1, 1, 0, 1] = 64
    with torch_aclnn.patched(level="function") as stats:
        with pytest.raises(IndexError, match=r"^\[torch_aclnn 161002\] max_unpool3d: indices\[0, 1, 1, 0, 1\]"):
            torch.nn.functional.max_unpool3d(x, idx, 2, output_size=[4, 4, 4])
    assert not stats.passed


def test_dropin_raises_a_deferred_error_instead_of_handing_the_call_to_torch(deferred_checks):
    """Under patched(level="function"), a later routed call that raises an earlier call's
    deferred error raises it: it is not this call's contract error."""
    call, message = _bad_index_call("max_unpool3d")
    call()
    torch.cuda.synchronize()
    x = torch.randn(2, 3, device="cuda")
    with torch_aclnn.patched(level="function") as stats:
        with pytest.raises(IndexError, match=r"deferred: " + message):
            torch.nn.functional.elu(x)
    assert not stats.passed


def test_elu_nan_gives_nan():
    """NaN in, NaN out on the device too (aten's CUDA backward gives
    grad * scale at x = NaN; the spec's rule, and aten CPU's, is NaN)."""
    x = torch.tensor([float("nan"), -1.0, 2.0], device="cuda")
    g = torch.ones(3, device="cuda")
    for alpha, scale, input_scale in ((1.0, 1.0, 1.0), (1.3, 1.1, 0.7)):
        assert torch.ops.torch_aclnn.elu(x, alpha, scale, input_scale)[0].isnan()
        assert torch.ops.torch_aclnn.elu_backward(g, alpha, scale, input_scale, False, x)[0].isnan()
        assert torch.ops.torch_aclnn.elu_backward(g, alpha, scale, input_scale, True, x)[0].isnan()


@pytest.mark.parametrize("op", ["elu_backward", "smooth_l1_loss_backward"])
def test_cpu_scalar_beside_device_tensors(op):
    """A 0-dim CPU input beside CUDA tensors is accepted (as aten's elementwise
    kernels accept a CPU scalar); any other CPU tensor is a tagged error."""
    ops = torch.ops.torch_aclnn
    x, g = torch.randn((), device="cuda"), torch.tensor(0.5)
    if op == "elu_backward":
        got = ops.elu_backward(g, 1.0, 1.0, 1.0, False, x)
        want = ops.elu_backward(g.cuda(), 1.0, 1.0, 1.0, False, x)
        bad = lambda: ops.elu_backward(torch.ones(3), 1.0, 1.0, 1.0, False, x.expand(3))  # noqa: E731
    else:
        got = ops.smooth_l1_loss_backward(g, x, torch.zeros((), device="cuda"), 1, 1.0)
        want = ops.smooth_l1_loss_backward(g.cuda(), x, torch.zeros((), device="cuda"), 1, 1.0)
        bad = lambda: ops.smooth_l1_loss_backward(torch.ones(3), x.expand(3), x.expand(3), 0, 1.0)  # noqa: E731
    assert got.device == x.device and torch.equal(got, want)
    with pytest.raises(RuntimeError, match=r"\[torch_aclnn 161002\] " + op + r": \w+ is on cuda:0, but grad_output is on cpu"):
        bad()
