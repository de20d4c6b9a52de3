"""adaptive_avg_pool3d and its backward (docs/spec.md §13) beyond the generic
OpInfo tests of tests/test_common.py: the worked examples, parity with torch's
own adaptive pooling and its gradient, determinism (thread counts,
use_deterministic_algorithms), float16/bfloat16 rounded once, the Python
wrappers' arguments, and the drop-in decisions and a model with a
squeeze-and-excitation block under patch()."""
import pytest
import torch
import torch.nn.functional as F

import torch_aclnn as ta
from torch_aclnn.ops.adaptive_avg_pool import output_size_of
from torch_aclnn.testing import make_layout, node_name

ops = torch.ops.torch_aclnn


def _bits(t):
    return t.view(torch.int16) if t.element_size() == 2 else t.view(torch.int32 if t.element_size() == 4 else torch.int64)


def test_worked_examples():
    """docs/spec.md §13: the backward document's example, then overlapping windows."""
    g = torch.arange(1.0, 9.0).view(2, 2, 1, 1, 2)
    x = torch.ones(2, 2, 1, 1, 4)
    gx = ta.adaptive_avg_pool3d_backward(g, x)
    assert gx.flatten().tolist() == [0.5, 0.5, 1, 1, 1.5, 1.5, 2, 2, 2.5, 2.5, 3, 3, 3.5, 3.5, 4, 4]
    x = torch.arange(1.0, 6.0).view(1, 1, 1, 1, 5)
    assert ta.adaptive_avg_pool3d(x, (1, 1, 3)).flatten().tolist() == [1.5, 3.0, 4.5]
    g = torch.tensor([6.0, 3.0, 4.0]).view(1, 1, 1, 1, 3)
    assert ta.adaptive_avg_pool3d_backward(g, x).flatten().tolist() == [3.0, 4.0, 1.0, 3.0, 2.0]
    buf = torch.full((1, 1, 1, 5, 1), float("nan")).transpose(-1, -2)  # any layout for out=
    assert ta.adaptive_avg_pool3d_backward(g, x, out=buf) is buf
    assert buf.flatten().tolist() == [3.0, 4.0, 1.0, 3.0, 2.0]


# (input shape, output_size, dtype, layout)
CASES = [
    ((2, 3, 8, 8, 8), 1, torch.float32, "contiguous"),
    ((2, 3, 9, 7, 10), (4, None, 3), torch.float64, "contiguous"),
    ((2, 5, 6, 7, 6), (2, 3, 4), torch.float32, "channels_last_3d"),
    ((3, 6, 7, 6), (5, 2, 6), torch.float32, "permuted"),  # 4-D
    ((1, 2, 3, 2, 4), (5, 3, 7), torch.float64, "sliced"),  # output larger than the input
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{list(c[0])}-{c[1]}-{c[3]}")
def test_matches_torch_autograd(case):
    """Values and gradients bitwise equal to aten's adaptive pooling (float32/float64; for an
    output size of 1, F.adaptive_avg_pool3d computes a mean instead), every layout; the
    gradient keeps a channels_last_3d input's layout."""
    shape, size, dtype, layout = case
    x = make_layout(torch.randn(shape, dtype=dtype), layout).requires_grad_()
    y = ta.adaptive_avg_pool3d(x, size)
    want = torch.ops.aten._adaptive_avg_pool3d(x, output_size_of("adaptive_avg_pool3d", x, size))
    assert torch.equal(y, want)
    torch.testing.assert_close(y, F.adaptive_avg_pool3d(x, size))
    assert y.grad_fn.name() == node_name("adaptive_avg_pool3d")
    g = torch.randn_like(y)
    (gx,) = torch.autograd.grad(y, x, g)
    (gw,) = torch.autograd.grad(want, x, g)
    assert torch.equal(gx, gw)
    if layout == "channels_last_3d":
        assert y.is_contiguous(memory_format=torch.channels_last_3d)
        assert gx.is_contiguous(memory_format=torch.channels_last_3d)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last_3d"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_same_bits_on_any_thread_count(layout, dtype):
    x = make_layout(torch.randn(2, 19, 9, 10, 11), layout).to(dtype)
    g = make_layout(torch.randn(2, 19, 4, 7, 3), layout).to(dtype)
    g[..., ::3, 0, :] = float("nan")
    threads = torch.get_num_threads()
    try:
        results = []
        for n in (1, 2, 3, 5):
            torch.set_num_threads(n)
            results.append((ta.adaptive_avg_pool3d(x, (4, 7, 3)), ta.adaptive_avg_pool3d_backward(g, x),
                            ta.adaptive_avg_pool3d_backward(g[:1], x[:1])))
    finally:
        torch.set_num_threads(threads)
    for r in results[1:]:
        assert all(torch.equal(_bits(a), _bits(b)) for a, b in zip(r, results[0]))
    assert bool(results[0][1].isnan().any())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_sums_in_float32_and_rounds_once(dtype):
    """float16/bfloat16: the float32 computation rounded once (in both layouts)."""
    x = torch.randn(2, 3, 9, 7, 10).to(dtype)
    g = torch.randn(2, 3, 4, 3, 4).to(dtype)
    for layout in ("contiguous", "channels_last_3d"):
        xl, gl = make_layout(x, layout), make_layout(g, layout)
        assert torch.equal(ta.adaptive_avg_pool3d(xl, (4, 3, 4)),
                           torch.ops.aten._adaptive_avg_pool3d(x.float(), [4, 3, 4]).to(dtype))
        assert torch.equal(ta.adaptive_avg_pool3d_backward(gl, xl),
                           torch.ops.aten._adaptive_avg_pool3d_backward(g.float(), x.float()).to(dtype))


def test_a_position_in_several_windows_sums_them_in_order():
    """Output larger than the input: each position is in several windows on every axis;
    the gather equals aten's scatter (float32, the same order)."""
    x = torch.randn(2, 3, 2, 3, 2)
    g = torch.randn(2, 3, 7, 5, 9)
    want = torch.ops.aten._adaptive_avg_pool3d_backward(g, x)
    for layout in ("contiguous", "channels_last_3d"):
        got = ta.adaptive_avg_pool3d_backward(make_layout(g, layout), make_layout(x, layout))
        assert torch.equal(got, want)


def test_wrapper_arguments():
    x = torch.randn(2, 3, 6, 5, 4)
    assert ta.adaptive_avg_pool3d(x, 2).shape == (2, 3, 2, 2, 2)
    assert ta.adaptive_avg_pool3d(x, (None, 2, None)).shape == (2, 3, 6, 2, 4)
    assert ta.adaptive_avg_pool3d(x, torch.Size([3, 3, 3])).shape == (2, 3, 3, 3, 3)
    with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] adaptive_avg_pool3d: output_size must have 3 "):
        ta.adaptive_avg_pool3d(x, (2, 2))
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] adaptive_avg_pool3d: output_size"):
        ta.adaptive_avg_pool3d(x, 2.5)
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161001\] adaptive_avg_pool3d: .*output_size"):
        ta.adaptive_avg_pool3d(x, None)
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161001\] adaptive_avg_pool3d_backward: .*self"):
        ta.adaptive_avg_pool3d_backward(x, None)
    with pytest.raises(ValueError, match=r"output_size elements must be > 0"):
        ta.adaptive_avg_pool3d(x, 0)


def test_double_backward_and_forward_ad():
    x = torch.randn(1, 2, 5, 4, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: ta.adaptive_avg_pool3d(t, (2, 3, 4)), (x,), check_forward_ad=True)
    g = torch.randn(1, 2, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: ta.adaptive_avg_pool3d(t, (2, 3, 4)), (x,), (g,))
    assert torch.autograd.gradcheck(lambda t: ta.adaptive_avg_pool3d_backward(t, x.detach()), (g,),
                                    check_forward_ad=True)
    batched = torch.func.vmap(lambda t: ta.adaptive_avg_pool3d(t, (2, 3, 4)))(x.detach().expand(3, -1, -1, -1, -1,
                                                                                                  -1))
    assert torch.equal(batched[1], ta.adaptive_avg_pool3d(x.detach(), (2, 3, 4)))


# ---------------------------------------------------------------------------
# Drop-in

def test_dropin_decisions():
    """Routed: 4-D and 5-D inputs, output sizes other than 1 (None keeps the input's size);
    handed to torch: output size 1 (torch's mean), 0 (torch's empty result), other ranks,
    integer input. Every call gives torch's result."""
    x = torch.randn(2, 3, 6, 5, 4)
    routed = [(x, (3, None, 2)), (x[0], 2), (x.to(memory_format=torch.channels_last_3d), (4, 3, 2)),
              (x, (1, 1, None))]
    passed = [(x, 1), (x[..., :1], (1, 1, None)), (x, (0, 2, 2)), (x[0, 0], 2),
              (x.long(), 2)]
    for k, (t, size) in enumerate(routed + passed):
        try:
            want = F.adaptive_avg_pool3d(t, size)
        except RuntimeError as e:
            want = e
        with ta.patched(level="function") as stats:
            try:
                got = F.adaptive_avg_pool3d(t, size)
            except RuntimeError as e:
                got = e
        if isinstance(want, Exception):
            assert type(got) is type(want) and str(got) == str(want)
        else:
            assert torch.equal(got, want) and got.stride() == want.stride(), (t.shape, size)
        assert stats.total_routed() == (1 if k < len(routed) else 0), (t.shape, size, stats)


class _SE(torch.nn.Module):
    """A squeeze-and-excitation block: channel weights from a global average."""

    def __init__(self, c):
        super().__init__()
        self.pool = torch.nn.AdaptiveAvgPool3d(1)
        self.down, self.up = torch.nn.Conv3d(c, c // 2, 1), torch.nn.Conv3d(c // 2, c, 1)

    def forward(self, x):
        return x * torch.sigmoid(self.up(F.relu(self.down(self.pool(x)))))


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv3d(2, 8, 3, padding=1), torch.nn.ELU(), _SE(8),
                               torch.nn.AdaptiveAvgPool3d((4, 3, 5)), torch.nn.Conv3d(8, 4, 1), torch.nn.ELU(),
                               torch.nn.AdaptiveAvgPool3d((2, None, 2)), torch.nn.Flatten(), torch.nn.Linear(4 * 2 * 3 * 2, 3))


@pytest.mark.parametrize("level", ["function", "dispatcher"])
def test_se_model_gives_torchs_outputs_and_gradients(level):
    if level == "dispatcher" and not ta._patch.ROUTED_OPERATORS:
        pytest.skip("patch(level='dispatcher') needs torch >= 2.9")
    x = torch.randn(2, 2, 9, 7, 11)
    model = _net()
    want = model(x)
    want.square().sum().backward()
    want_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with ta.patched(level=level) as stats:
        got = model(x)
        got.square().sum().backward()
    key = "adaptive_avg_pool3d" if level == "function" else "aten::_adaptive_avg_pool3d"
    assert stats.routed.get(key) == 2, stats  # (the SE block's output size 1 stays torch's mean)
    torch.testing.assert_close(got, want)
    for p, w in zip(model.parameters(), want_grads):
        torch.testing.assert_close(p.grad, w)


def test_se_model_trains_deterministically_under_patch():
    """use_deterministic_algorithms(True) with patch(): two training runs from the same
    start are bitwise equal (every parameter after three SGD steps)."""
    x, target = torch.randn(2, 2, 9, 7, 11), torch.randn(2, 3)
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    runs = []
    ta.reset_patch_stats()
    try:
        for _ in range(2):
            model = _net()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            ta.patch()
            try:
                for _ in range(3):
                    opt.zero_grad()
                    F.mse_loss(model(x), target).backward()
                    opt.step()
                stats = ta.patch_stats()
            finally:
                ta.unpatch()
            runs.append([p.detach().clone() for p in model.parameters()])
    finally:
        torch.use_deterministic_algorithms(was)
    assert sum(v for k, v in stats.routed.items() if "adaptive_avg_pool3d" in k) > 0, stats
    assert all(torch.equal(a, b) for a, b in zip(*runs))
