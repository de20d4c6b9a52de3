"""64-bit indexing: one tensor with more than 2^31 elements (int8 for
max_unpool3d, bfloat16 for the upsample backward), checking the values at
the far end, where a 32-bit offset would wrap. Slow (several GB each); a
test skips, saying why, when MemAvailable is below what it needs."""
import time

import pytest
import torch

import torch_aclnn  # noqa: F401

pytestmark = pytest.mark.slow
ops = torch.ops.torch_aclnn
GiB = 2 ** 30
BIG_W = 2 ** 15 + 1           # 2^16 rows of BIG_W: 2^31 + 2^16 elements
BIG_H = 2 ** 16


def _mem_available() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def _need(nbytes: int):
    have = _mem_available()
    if have < nbytes:
        pytest.skip(f"needs {nbytes / GiB:.1f} GiB of free memory, MemAvailable is {have / GiB:.1f} GiB")


@pytest.fixture
def timed(request):
    t0 = time.perf_counter()
    yield
    print(f"\n{request.node.name}: {time.perf_counter() - t0:.1f} s")


FAR = [0, 2 ** 31 - 1, 2 ** 31, BIG_H * BIG_W - 1]   # flat positions straddling 2^31


def test_max_unpool3d_forward_one_plane_over_2_31(timed):
    """One (n, c) plane of 2^31 + 2^16 int8 elements; indices straddle 2^31."""
    _need(3 * GiB)
    x = torch.tensor([11, 22, 33, 44], dtype=torch.int8).view(1, 1, 1, 1, 4)
    idx = torch.tensor(FAR).view(1, 1, 1, 1, 4)
    out = ops.max_unpool3d(x, idx, [1, BIG_H, BIG_W], [1, 1, 1], [0, 0, 0])
    assert out.shape == (1, 1, 1, BIG_H, BIG_W) and out.numel() > 2 ** 31
    flat = out.view(-1)
    assert flat[FAR].tolist() == [11, 22, 33, 44]
    assert int(flat.count_nonzero()) == 4


def test_max_unpool3d_backward_one_plane_over_2_31(timed):
    _need(3 * GiB)
    g = torch.zeros(1, 1, 1, BIG_H, BIG_W, dtype=torch.uint8)
    g.view(-1)[FAR] = torch.tensor([1, 2, 3, 4], dtype=torch.uint8)
    self = torch.zeros(1, 1, 1, 1, 4, dtype=torch.uint8)
    idx = torch.tensor(FAR[::-1]).view(1, 1, 1, 1, 4)
    out = ops.max_unpool3d_backward(g, self, idx, [1, BIG_H, BIG_W], [1, 1, 1], [0, 0, 0])
    assert out.view(-1).tolist() == [4, 3, 2, 1]


def _planes_int8(n, w):
    """(n, 1, 1, 1, w) int8 with value (7 * plane + position) mod 256."""
    a = torch.arange(n, dtype=torch.int64).mul_(7).remainder_(256).to(torch.int8).view(n, 1, 1, 1, 1)
    b = torch.arange(w, dtype=torch.int64).remainder_(256).to(torch.int8).view(1, 1, 1, 1, w)
    return a + b  # int8 wrap-around: the pattern mod 256


def test_max_unpool3d_forward_many_planes_over_2_31(timed):
    """2^16 planes of BIG_W: self and the result have 2^31 + 2^16 elements;
    indices (a permutation per plane) expanded over N (stride 0)."""
    _need(6 * GiB)
    x = _planes_int8(BIG_H, BIG_W)
    perm = torch.randperm(BIG_W, generator=torch.Generator().manual_seed(0), device="cpu").to(x.device)
    idx = perm.view(1, 1, 1, 1, BIG_W).expand(BIG_H, 1, 1, 1, BIG_W)
    out = ops.max_unpool3d(x, idx, [1, 1, BIG_W], [1, 1, 1], [0, 0, 0])
    assert out.numel() > 2 ** 31
    tail = slice(BIG_H - 3, BIG_H)
    expected = torch.zeros_like(x[tail]).scatter_(-1, idx[tail], x[tail])
    assert torch.equal(out[tail], expected)
    assert torch.equal(out[:2], torch.zeros_like(x[:2]).scatter_(-1, idx[:2], x[:2]))


def test_max_unpool3d_backward_many_planes_over_2_31(timed):
    _need(6 * GiB)
    g = _planes_int8(BIG_H, BIG_W)
    self = torch.zeros((), dtype=torch.int8).expand(BIG_H, 1, 1, 1, BIG_W)  # only shape and dtype are read
    perm = torch.randperm(BIG_W, generator=torch.Generator().manual_seed(1), device="cpu").to(g.device)
    idx = perm.view(1, 1, 1, 1, BIG_W).expand(BIG_H, 1, 1, 1, BIG_W)
    out = ops.max_unpool3d_backward(g, self, idx, [1, 1, BIG_W], [1, 1, 1], [0, 0, 0])
    assert out.numel() > 2 ** 31
    for rows in (slice(BIG_H - 3, BIG_H), slice(0, 2)):
        assert torch.equal(out[rows], g[rows].gather(-1, idx[rows]))


@pytest.mark.parametrize("op", ["upsample_nearest3d_backward", "upsample_nearest_exact3d_backward"])
def test_upsample_backward_grad_output_over_2_31(timed, op):
    """grad_output: bfloat16, 2^31 + 2^16 elements, zero but for a few
    points at both ends; grad_input (1, 1, 1, 2, 2) sums them (exactly)."""
    _need(14 * GiB)  # 4 GiB of grad_output, room for a float32 accumulation
    g = torch.zeros(1, 1, 1, BIG_H, BIG_W, dtype=torch.bfloat16)
    g[0, 0, 0, 0, 0] = 1
    g[0, 0, 0, -1, 0] = 5
    g[0, 0, 0, -1, -1] = 3
    g[0, 0, 0, -1, -2] = 0.5
    out = getattr(ops, op)(g, [1, BIG_H, BIG_W], [1, 1, 1, 2, 2])
    # rows h >= 2^15 and columns w >= 2^14 + 1 map to index 1 (both modes)
    assert out.view(-1).tolist() == [1.0, 0.0, 5.0, 3.5]
