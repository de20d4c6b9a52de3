"""The elementwise CUDA functors (elu, leaky_relu, smooth_l1), run on the
host against aten's scalar CPU formula or the CPU kernels, bit for bit (the
emulation module, built by tests/conftest.py)."""
import pytest
import torch

from torch_aclnn.testing.core import FLOATING


# ---------------------------------------------------------------------------
# ELU: the functors against aten's scalar CPU formula. aten's CPU kernel runs
# that scalar formula (std::exp/std::expm1, the same order of operations and
# coefficients as aten's CUDA kernel) on strided inputs, so a strided input
# makes aten compute what the CUDA kernels' functors compute, bit for bit.
# NaN x is left out: there the CUDA kernels follow the CPU kernels' rule
# (negative branch), not aten's scalar loop.

@pytest.fixture(scope="module")
def elu(emulation):
    return emulation.elu


def _strided(t):
    base = torch.zeros(t.numel() * 2, dtype=t.dtype)
    view = base[::2]
    view.copy_(t.reshape(-1))
    return view


ELU_PARAMS = [(1.0, 1.0, 1.0), (0.5, 1.0, 1.0), (1.6732632423543772, 1.0507009873554805, 1.0),
              (2.0, 1.0, 0.5), (1.3, 1.1, 0.7), (-0.8, 1.0, 1.0)]
EDGES = [0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 30.0, -30.0, -200.0, 1e30, -1e30, float("inf"), float("-inf")]


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_elu_functors(elu, dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.cat([torch.rand(4096, generator=gen, dtype=torch.float64) * 25 - 20,
                   torch.tensor(EDGES, dtype=torch.float64)]).to(dtype)
    g = (torch.rand(x.numel(), generator=gen, dtype=torch.float64) * 6 - 3).to(dtype)
    for alpha, scale, input_scale in ELU_PARAMS:
        ours = elu.forward(x, alpha, scale, input_scale)
        theirs = torch.ops.aten.elu(_strided(x), alpha, scale, input_scale)
        assert torch.equal(ours, theirs), (dtype, alpha, scale, input_scale)
        for is_result in (False, True):
            if is_result and alpha < 0:
                continue
            ours = elu.backward(g, alpha, scale, input_scale, is_result, x)
            theirs = torch.ops.aten.elu_backward(_strided(g), alpha, scale, input_scale, is_result, _strided(x))
            assert torch.equal(ours, theirs), (dtype, alpha, scale, input_scale, is_result)


# ---------------------------------------------------------------------------
# LeakyReLU: the functors (x > 0 ? x : x * slope) against the CPU kernels
# (x * (x > 0 ? 1 : slope)) and aten, bit for bit; a NaN result is compared as
# NaN (float16/bfloat16 NaN patterns differ between aten's vector and scalar
# paths, docs/spec.md §11).

LEAKY_SLOPES = [0.01, 0.2, -0.3, 0.0, 3.0, float("inf"), float("nan")]
_INT_OF_SIZE = {2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(t):
    nan = torch.isnan(t)
    return nan, t.masked_fill(nan, 0).contiguous().view(_INT_OF_SIZE[t.element_size()])


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_leaky_relu_functors(emulation, dtype):
    gen = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(4096, generator=gen, dtype=torch.float64) * 4,
                   torch.tensor(EDGES + [float("nan"), 1e-40, -1e-40], dtype=torch.float64)]).to(dtype)
    g = torch.randn(x.numel(), generator=gen, dtype=torch.float64).to(dtype)
    for slope in LEAKY_SLOPES:
        ours = emulation.leaky_relu.forward(x, slope)
        for other in (torch.ops.torch_aclnn.leaky_relu(x, slope), torch.ops.aten.leaky_relu(_strided(x), slope)):
            assert all(torch.equal(a, b) for a, b in zip(_bits(ours), _bits(other))), (dtype, slope)
        ours = emulation.leaky_relu.backward(g, x, slope)
        for other in (torch.ops.torch_aclnn.leaky_relu_backward(g, x, slope, False),
                      torch.ops.aten.leaky_relu_backward(_strided(g), _strided(x), slope, False)):
            assert all(torch.equal(a, b) for a, b in zip(_bits(ours), _bits(other))), (dtype, slope)


# ---------------------------------------------------------------------------
# SmoothL1: the functors do the CPU kernels' operations in the same order, so
# the 'none' loss and grad_input equal the CPU kernels' bit for bit.

@pytest.fixture(scope="module")
def smooth_l1(emulation):
    return emulation.smooth_l1


@pytest.mark.parametrize("dtype", FLOATING, ids=str)
def test_smooth_l1_functors(smooth_l1, dtype):
    gen = torch.Generator().manual_seed(0)
    n = 3000
    a = (torch.rand(n, generator=gen, dtype=torch.float64) * 8 - 4)
    b = (torch.rand(n, generator=gen, dtype=torch.float64) * 8 - 4)
    b[:200] = a[:200]                       # d == 0
    b[200:400] = a[200:400] - 1.0           # |d| == beta for beta 1
    a[400], b[401] = float("inf"), float("nan")
    a, b = a.to(dtype), b.to(dtype)
    g = (torch.rand(n, generator=gen, dtype=torch.float64) * 6 - 3).to(dtype)
    for beta in (0.0, 0.5, 1.0, 2.25):
        ours = smooth_l1.loss_none(a, b, beta)
        theirs = torch.ops.torch_aclnn.smooth_l1_loss(a, b, 0, beta)
        assert torch.equal(ours.nan_to_num(7.0), theirs.nan_to_num(7.0)), (dtype, beta)
        for reduction in (0, 1, 2):
            go = g if reduction == 0 else g[:1].reshape(())
            norm = 1.0 / n if reduction == 1 else 1.0
            ours = smooth_l1.grad(go.expand(n).contiguous(), a, b, beta, norm)
            theirs = torch.ops.torch_aclnn.smooth_l1_loss_backward(go, a, b, reduction, beta)
            assert torch.equal(ours.nan_to_num(7.0), theirs.nan_to_num(7.0)), (dtype, beta, reduction)
