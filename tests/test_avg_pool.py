"""avg_pool3d and its backward (docs/spec.md §12) beyond the generic OpInfo tests
of tests/test_common.py: the worked example, parity with torch's own avg_pool3d
and its gradient, float16/bfloat16 as float32 rounded once, determinism (thread
counts, devices), the Python wrappers' arguments, the drop-in decisions and a
small 3-D model under patch()."""
import pytest
import torch
import torch.nn.functional as F

import torch_aclnn as ta
from torch_aclnn.testing import make_layout

ops = torch.ops.torch_aclnn


def test_worked_example():
    """docs/spec.md §12: windows of 2 along W, stride 1, padding 1, count_include_pad False."""
    x = torch.zeros(1, 1, 1, 1, 4)
    g = torch.tensor([2.0, 4.0, 6.0, 8.0, 10.0]).view(1, 1, 1, 1, 5)
    gx = ta.avg_pool3d_backward(g, x, [1, 1, 2], 1, [0, 0, 1], count_include_pad=False)
    assert gx.flatten().tolist() == [4.0, 5.0, 7.0, 14.0]
    assert ta.avg_pool3d_backward(g, x, [1, 1, 2], 1, [0, 0, 1]).flatten().tolist() == [3.0, 5.0, 7.0, 9.0]
    y = ta.avg_pool3d(torch.tensor([1.0, 3.0, 2.0, 5.0]).view(1, 1, 1, 1, 4), [1, 1, 2], 1, [0, 0, 1],
                      count_include_pad=False)
    assert y.flatten().tolist() == [1.0, 2.0, 2.5, 3.5, 5.0]
    buf = torch.full((1, 1, 1, 4, 1), float("nan")).transpose(-1, -2)  # any layout for out=
    assert ta.avg_pool3d_backward(g, x, [1, 1, 2], 1, [0, 0, 1], count_include_pad=False, out=buf) is buf
    assert torch.equal(buf, gx)
    # the aclnn document's example: a 4x4x4 window of ones
    ones = torch.ones(1, 16, 4, 4, 4)
    assert torch.equal(ta.avg_pool3d_backward(torch.ones(1, 16, 1, 1, 1), ones, 4, 1), torch.full_like(ones, 1 / 64))


# (input shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, dtype, layout)
CASES = [
    ((2, 3, 8, 8, 8), 2, None, 0, False, True, None, torch.float32, "contiguous"),
    ((1, 2, 7, 9, 8), 3, 2, 1, False, False, None, torch.float64, "contiguous"),
    ((2, 4, 6, 7, 6), 3, 1, 1, True, True, None, torch.float32, "channels_last_3d"),
    ((2, 4, 7, 6, 9), (3, 2, 3), (2, 1, 2), (1, 0, 1), True, False, None, torch.float32, "channels_last_3d"),
    ((3, 6, 7, 6), (2, 3, 2), (1, 2, 3), 0, False, True, 7, torch.float32, "permuted"),  # 4-D
    ((2, 2, 5, 6, 7), (1, 2, 2), None, (0, 1, 1), True, True, None, torch.float64, "sliced"),
    ((1, 3, 9, 10, 23), (2, 2, 5), (3, 2, 4), (1, 1, 2), True, False, None, torch.float32, "contiguous"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{list(c[0])}-k{c[1]}-s{c[2]}-{c[8]}")
def test_matches_torch_autograd(case):
    """torch's F.avg_pool3d and the gradient its autograd computes, bitwise
    (float32/float64: the same operations in the same order); layouts kept."""
    shape, k, s, p, ceil, cip, div, dtype, layout = case
    x = make_layout(torch.randn(shape, dtype=dtype), layout).requires_grad_()
    want = F.avg_pool3d(x, k, s, p, ceil, cip, div)
    g = torch.randn_like(want)
    (expected,) = torch.autograd.grad(want, x, g)
    got = ta.avg_pool3d(x, k, s, p, ceil, cip, div)
    assert torch.equal(got, want)
    (grad,) = torch.autograd.grad(got, x, g)
    assert torch.equal(grad, expected)
    assert torch.equal(ta.avg_pool3d_backward(g, x.detach(), k, s, p, ceil, cip, div), expected)
    fmt = torch.channels_last_3d if layout == "channels_last_3d" else torch.contiguous_format
    assert got.is_contiguous(memory_format=fmt) and grad.is_contiguous(memory_format=fmt)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last_3d"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reduced_precision_is_float32_rounded_once(layout, dtype):
    """aten's CPU kernels have no float16/bfloat16 avg_pool3d: ours compute in float32,
    which aten's float32 kernels do with the same operations, and round once."""
    x = make_layout(torch.randn(2, 5, 7, 8, 9), layout).to(dtype)
    args = ([3, 2, 3], [2, 1, 2], [1, 1, 1], True, False, None)
    want = F.avg_pool3d(x.float(), *args)
    assert torch.equal(ta.avg_pool3d(x, *args), want.to(dtype))
    g = torch.randn(want.shape).to(dtype)
    want_g = torch.ops.aten.avg_pool3d_backward(g.float(), x.float(), *args)
    assert torch.equal(ta.avg_pool3d_backward(g, x, *args), want_g.to(dtype))


@pytest.mark.parametrize("layout", ["contiguous", "channels_last_3d"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_same_bits_on_any_thread_count(layout, dtype):
    x = make_layout(torch.randn(2, 24, 9, 10, 11), layout).to(dtype)
    g = make_layout(torch.randn(2, 24, 9, 10, 11), layout).to(dtype)  # k3 s1 p1: the pooled shape is x's
    threads = torch.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3, 5):
            torch.set_num_threads(n)
            results.append((ta.avg_pool3d(x, 3, 1, 1), ta.avg_pool3d_backward(g, x, 3, 1, 1)))
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(a, results[0][0]) and torch.equal(b, results[0][1]) for a, b in results)


def test_wrapper_arguments():
    """kernel_size/padding: an int or 1 or 3 ints; stride None = kernel_size; the same
    call as the operator with the lists expanded; the Python functions' type errors."""
    x = torch.randn(1, 2, 6, 8, 6)
    expected = ops.avg_pool3d(x, [2, 3, 2], [2, 3, 2], [1, 1, 0], False, True, None)
    assert torch.equal(ta.avg_pool3d(x, (2, 3, 2), None, (1, 1, 0)), expected)
    assert torch.equal(ops.avg_pool3d(x, [2, 3, 2], [], [1, 1, 0]), expected)  # the schema's defaults
    g = torch.randn(expected.shape)
    assert torch.equal(ta.avg_pool3d_backward(g, x, (2, 3, 2), None, (1, 1, 0)),
                       ops.avg_pool3d_backward(g, x, [2, 3, 2], [], [1, 1, 0], False, True, None))
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161001\] avg_pool3d: kernel_size"):
        ta.avg_pool3d(x, None)
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] avg_pool3d: kernel_size"):
        ta.avg_pool3d(x, 2.5)
    with pytest.raises(TypeError, match=r"count_include_pad must be a bool"):
        ta.avg_pool3d(x, 2, None, 0, False, "yes")
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] avg_pool3d_backward: divisor_override"):
        ta.avg_pool3d_backward(g, x, (2, 3, 2), None, (1, 1, 0), False, True, 2.0)
    with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] avg_pool3d: divisor_override must be None or"):
        ta.avg_pool3d(x, 2, divisor_override=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_is_deterministic_and_gives_the_cpu_bits():
    x = torch.randn(2, 8, 12, 12, 12)
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        for layout in ("contiguous", "channels_last_3d"):
            xx = make_layout(x, layout).to(dtype)
            g = make_layout(torch.randn(2, 8, 12, 12, 12), layout).to(dtype)
            cpu = (ta.avg_pool3d(xx, 3, 1, 1), ta.avg_pool3d_backward(g, xx, 3, 1, 1))
            was = torch.are_deterministic_algorithms_enabled()
            torch.use_deterministic_algorithms(True)
            try:
                runs = [ta.avg_pool3d_backward(g.cuda(), xx.cuda(), 3, 1, 1) for _ in range(2)]
            finally:
                torch.use_deterministic_algorithms(was)
            assert torch.equal(runs[0], runs[1]) and torch.equal(runs[0].cpu(), cpu[1]), (dtype, layout)
            assert torch.equal(ta.avg_pool3d(xx.cuda(), 3, 1, 1).cpu(), cpu[0]), (dtype, layout)


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv3d(2, 4, 3, padding=1), torch.nn.ELU(), torch.nn.AvgPool3d(2),
        torch.nn.Conv3d(4, 4, 3, padding=1), torch.nn.ELU(),
        torch.nn.AvgPool3d(3, 2, 1, ceil_mode=True, count_include_pad=False),
        torch.nn.Flatten(), torch.nn.LazyLinear(3))


def test_model_under_patch_gives_torchs_outputs_and_gradients():
    """A small 3-D net with two AvgPool3d layers: under patch() the pools run on
    torch_aclnn (forward and backward) and the outputs and every gradient are
    torch's (float64: the same sums in the same order)."""
    model = _net().double()
    x = torch.randn(2, 2, 8, 8, 8, dtype=torch.float64)
    want = model(x)
    want_grads = torch.autograd.grad(want.square().sum(), list(model.parameters()))
    with ta.patched(level="function") as stats:
        got = model(x)
        grads = torch.autograd.grad(got.square().sum(), list(model.parameters()))
    assert stats.routed.get("avg_pool3d") == 2, stats
    assert torch.equal(got, want) and all(torch.equal(a, b) for a, b in zip(grads, want_grads))


def test_model_trains_deterministically_under_patch():
    """Under use_deterministic_algorithms(True) with patch(), training repeats bit for bit."""
    x, y = torch.randn(4, 2, 8, 8, 8), torch.randn(4, 3)

    def train():
        model = _net()
        model(x)  # (materialise the lazy layer before the optimiser sees it)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
        return [p.detach().clone() for p in model.parameters()]

    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with ta.patched() as stats:
            runs = [train(), train()]
    finally:
        torch.use_deterministic_algorithms(was)
    assert sum(v for k, v in stats.routed.items() if "avg_pool3d" in k) > 0, stats
    assert all(torch.equal(a, b) for a, b in zip(*runs))


def test_dropin_routes_on_every_device_and_hands_the_rest_to_torch():
    x = torch.randn(2, 3, 6, 7, 8)
    cl = x.contiguous(memory_format=torch.channels_last_3d)
    with ta.patched(level="function") as stats:
        got = F.avg_pool3d(cl, 3, 2, 1)
        # float16 on the CPU: torch has no kernel; inside the contract, so computed here
        half = F.avg_pool3d(x.half(), 2)
        # outside the contract: torch's own errors and results
        with pytest.raises(RuntimeError, match="divisor must be not zero"):
            F.avg_pool3d(x, 2, divisor_override=0)
        with pytest.raises(RuntimeError, match="pad should be at most half"):
            F.avg_pool3d(x, 2, padding=2)
        ints = F.avg_pool3d(torch.arange(64).view(1, 1, 4, 4, 4), 2)
    assert stats.routed.get("avg_pool3d") == 2, stats
    assert torch.equal(got, F.avg_pool3d(cl, 3, 2, 1)) and got.is_contiguous()  # torch's layout
    assert torch.equal(half, F.avg_pool3d(x.half().float(), 2).half())
    assert torch.equal(ints, F.avg_pool3d(torch.arange(64).view(1, 1, 4, 4, 4), 2))
    converted = ta.nn.convert(torch.nn.Sequential(torch.nn.AvgPool3d(2, divisor_override=3)))
    assert isinstance(converted[0], ta.nn.AvgPool3d)
    assert torch.equal(converted(x), F.avg_pool3d(x, 2, divisor_override=3))
