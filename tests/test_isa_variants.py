"""The CPU kernels are built once per instruction set; the loader imports the
one matching aten's capability. Run each variant (in a subprocess, since
ATEN_CPU_CAPABILITY is read at start-up) against the reference and aten."""
import os
import subprocess
import sys

import pytest
import torch

SCRIPT = r"""
import torch, torch_aclnn
torch.manual_seed(0)  # fixed data, as tests/conftest.py fixes it for the rest of the suite
from torch_aclnn import _loader
from torch_aclnn.testing import OPS, results, tolerance
assert _loader.cpu_isa == "_cpu_" + EXPECTED, (_loader.cpu_isa, torch.backends.cpu.get_cpu_capability())
checked = 0
for name, info in OPS.items():
    for dtype in info.dtypes:
        for i, s in enumerate(info.samples("cpu", dtype)):
            if i >= 4:
                break
            outs = results(info.op(*s.args, **s.kwargs))
            for out, ref in zip(outs, results(info.reference(*s.args, **s.kwargs)), strict=True):
                torch.testing.assert_close(out.to(ref.dtype), ref, check_dtype=False, equal_nan=True,
                                           **tolerance(out.dtype))
            if s.exact_vs_aten and info.aten is not None and dtype in (torch.float32, torch.float64):
                assert all(torch.equal(o, a) for o, a in zip(outs, results(info.aten(*s.args, **s.kwargs)),
                                                             strict=True)), (name, s)
            checked += 1
# adaptive_avg_pool3d: rows and channels of whole vectors and tails (AVX512 16, AVX2 8 floats),
# windows of 1 to 3 positions; float32 gives aten's bits, bfloat16 the float32 result rounded once
for dtype in (torch.float32, torch.bfloat16):
    for c, w, ow in ((5, 17, 7), (16, 40, 16), (17, 33, 40)):
        x = torch.randn(2, c, 3, 4, w).to(dtype)
        g = torch.randn(2, c, 2, 3, ow).to(dtype)
        for layout in (torch.contiguous_format, torch.channels_last_3d):
            xl, gl = x.contiguous(memory_format=layout), g.contiguous(memory_format=layout)
            assert torch.equal(torch.ops.torch_aclnn.adaptive_avg_pool3d(xl, [2, 3, ow]),
                               torch.ops.aten._adaptive_avg_pool3d(x.float(), [2, 3, ow]).to(dtype)), (dtype, c, w)
            assert torch.equal(torch.ops.torch_aclnn.adaptive_avg_pool3d_backward(gl, xl),
                               torch.ops.aten._adaptive_avg_pool3d_backward(g.float(), x.float()).to(dtype))
            checked += 1
# channels_last_3d forwards: whole-vector and partial-vector channel copies
for dtype in (torch.float32, torch.bfloat16):
    for channels in (1, 5, 16, 17, 40, 130):
        x = torch.randn(2, channels, 3, 4, 5).to(dtype).contiguous(memory_format=torch.channels_last_3d)
        assert torch.equal(torch.ops.torch_aclnn.upsample_nearest3d(x, [6, 8, 10]),
                           torch.ops.aten.upsample_nearest3d(x, [6, 8, 10])), (dtype, channels)
        checked += 1
# channels_last_3d backwards: vectors, half vectors and tails of channels, and pixels of exactly
# one float vector (AVX512 16, AVX2 8: the row-accumulator path), up- and down-scaled (half/bfloat16
# sum in float32 in aten's order and round once)
for dtype in (torch.float32, torch.bfloat16):
    for channels in (5, 8, 16, 40, 56):
        for out_size in ([6, 8, 10], [4, 6, 7], [2, 3, 3]):
            g = torch.randn(2, channels, *out_size).to(dtype).contiguous(memory_format=torch.channels_last_3d)
            want = torch.ops.aten.upsample_nearest3d_backward(g.float(), out_size, [2, channels, 3, 4, 5]).to(dtype)
            got = torch.ops.torch_aclnn.upsample_nearest3d_backward(g, out_size, [2, channels, 3, 4, 5])
            assert torch.equal(got, want), (dtype, channels, out_size)
            checked += 1
# up-scaling W by less than 2, or down-scaling it, over long rows: the backward's permute blocks
# (AVX512 16, AVX2 8); by exactly 2: blocks of 2 vectors summed in registers (bfloat16 split into
# even and odd elements by bit shifts), and a scalar tail; bfloat16: aten's float32 sums rounded once
for dtype in (torch.float32, torch.bfloat16):
    for iw in (8, 16, 17, 33, 64):
        for ow in (iw + 1, int(iw * 1.5), 2 * iw - 1, iw // 2, int(iw * 0.7), 2 * iw):
            # magnitudes 2^-24 .. 2^24: a different order of additions would round differently
            g = (torch.randn(2, 2, 5, 6, ow) * torch.exp2(torch.randint(-24, 25, (2, 2, 5, 6, ow)))).to(dtype)
            for ours, theirs in ((torch.ops.torch_aclnn.upsample_nearest3d_backward,
                                  torch.ops.aten.upsample_nearest3d_backward),
                                 (torch.ops.torch_aclnn.upsample_nearest_exact3d_backward,
                                  torch.ops.aten._upsample_nearest_exact3d_backward)):
                want = theirs(g.float(), [5, 6, ow], [2, 2, 3, 4, iw]).to(dtype)
                assert torch.equal(ours(g, [5, 6, ow], [2, 2, 3, 4, iw]), want), (dtype, iw, ow)
                checked += 1
# max_pool3d forwards: small NCDHW planes folded K at a time (whole and partial blocks of planes),
# many rows of at most one vector of windows (the NaN lanes folded again by window_max), wide rows;
# aten's NCDHW indices exactly, and its values
import torch.nn.functional as F
for dtype in (torch.float32, torch.bfloat16):
    for shape, window in (((2, 9, 8, 8, 8), (3, 2, 1, 1)), ((1, 20, 5, 6, 7), (2, 1, 0, 1)),
                          ((1, 17, 6, 7, 6), ((2, 3, 3), (1, 2, 3), (1, 1, 1), (2, 1, 1))),
                          ((2, 3, 90, 12, 10), (3, 2, 1, 1)), ((1, 2, 4, 4, 50), (3, 2, 1, 1))):
        x = torch.randint(-3, 3, shape).to(dtype)
        x[torch.rand(shape) < 0.05] = float("nan")
        v, i = torch_aclnn.max_pool3d_with_indices(x, *window)
        want_v, want_i = F.max_pool3d(x, *window, return_indices=True)
        assert torch.equal(i, want_i) and torch.equal(v.nan_to_num(), want_v.nan_to_num()), (dtype, shape, window)
        checked += 1
# channels_last_3d forwards (vectors of channels and a tail): aten's NCDHW indices, and each value the
# element its index names, bit for bit (NaN payloads, -0 tying +0; bfloat16 stored from the top bits)
def bits(t):
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    for shape, window in (((2, 20, 6, 7, 8), (3, 2, 1, 1)), ((1, 3, 5, 6, 7), (2, 1, 0, 1)),
                          ((1, 40, 4, 5, 6), (2, 2, 0, 1))):
        x = torch.randint(-3, 3, shape).to(dtype)
        x[(x == 0) & (torch.rand(shape) < 0.5)] = -0.0
        nan = torch.rand(shape) < 0.05
        x[nan] = float("nan")
        b = bits(x)
        b[nan] ^= torch.randint(1, 64, (int(nan.sum()),)).to(b.dtype)
        want_i = F.max_pool3d(x, *window, return_indices=True)[1]
        v, i = torch_aclnn.max_pool3d_with_indices(x.contiguous(memory_format=torch.channels_last_3d), *window)
        named = bits(x).flatten(2).gather(2, i.flatten(2)).view(i.shape)
        assert torch.equal(i, want_i) and torch.equal(bits(v), named), (dtype, shape, window)
        checked += 1
# channels_last_3d backward of disjoint windows (the write pass: vectors of channels and a tail): aten's
# result, and an index outside its window raises
window = ([2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False)
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    for channels in (3, 20):
        x = torch.randn(2, channels, 4, 6, 8).to(dtype).contiguous(memory_format=torch.channels_last_3d)
        v, i = F.max_pool3d(x, 2, 2, return_indices=True)
        g = torch.randn(v.shape).to(dtype).contiguous(memory_format=torch.channels_last_3d)
        got = torch.ops.torch_aclnn.max_pool3d_with_indices_backward(g, x, i, *window)
        assert torch.equal(got, torch.ops.aten.max_pool3d_with_indices_backward(g, x, *window, i)), dtype
        i[1, channels - 1, 1, 2, 3] = 0  # (its window starts at (2, 4, 6))
        try:
            torch.ops.torch_aclnn.max_pool3d_with_indices_backward(g, x, i, *window)
            raise AssertionError("an index outside its window was taken")
        except IndexError:
            checked += 1
print("checked", checked)
"""

_AVAILABLE = {"AVX512": ["avx2", "default"], "AVX2": ["default"]}.get(torch.backends.cpu.get_cpu_capability(), [])


@pytest.mark.parametrize("isa", ["avx2", "default"])
def test_isa_variant(isa):
    if isa not in _AVAILABLE:
        pytest.skip(f"aten cannot be switched to {isa} on this CPU ({torch.backends.cpu.get_cpu_capability()})")
    env = dict(os.environ, ATEN_CPU_CAPABILITY=isa)
    r = subprocess.run([sys.executable, "-c", f"EXPECTED = {isa!r}\n" + SCRIPT], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert int(r.stdout.split()[-1]) > 0


# torch_aclnn's own reductions (smooth_l1_loss 'mean' / 'sum') must give the same bits under every
# instruction set, not only results close to the reference. The inputs are made once, here, and
# loaded by every variant (torch's own random generators need not give the same bits per ISA).
# Magnitudes 2^-20 .. 2^20 (float16: 2^-24 .. 2^0, so that its sums stay finite): a different order
# of additions rounds differently. Sizes: under one vector, full vectors and tails (not multiples of
# 16 or 32), one chunk (16384 elements) exactly, and several chunks with a tail; operands dense,
# broadcast, strided and transposed; 1 and 2 threads.
REDUCTION_SCRIPT = r"""
import sys, torch, torch_aclnn
from torch_aclnn import _loader
assert _loader.cpu_isa == "_cpu_" + EXPECTED, (_loader.cpu_isa, torch.backends.cpu.get_cpu_capability())
cases = torch.load(sys.argv[1])
ops = torch.ops.torch_aclnn
lines = []
for threads in (1, 2):
    torch.set_num_threads(threads)
    for key, a, b in cases:
        for reduction in (1, 2):
            for beta in (1.0, 0.25, 0.0):
                out = ops.smooth_l1_loss(a, b, reduction, beta)
                lines.append(f"{key} r{reduction} b{beta} t{threads} {out.double().item().hex()}")
print("\n".join(lines))
"""


def _reduction_cases():
    g = torch.Generator().manual_seed(1234)

    def values(shape, dtype):
        lo, hi = (-24, 1) if dtype == torch.float16 else (-20, 21)
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        return (x * torch.exp2(torch.randint(lo, hi, shape, generator=g).double())).to(dtype)

    cases = []
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        name = str(dtype).split(".")[-1]
        for n in (7, 16, 33, 257, 1000, 16384, 16384 * 3 + 45, 100003):
            cases.append((f"{name} dense {n}", values((n,), dtype), values((n,), dtype)))
        # broadcast: target (1, 999) against self (37, 999), and a column against a row
        cases.append((f"{name} bcast-row", values((37, 999), dtype), values((1, 999), dtype)))
        cases.append((f"{name} bcast-outer", values((211, 1), dtype), values((1, 307), dtype)))
        # strided and transposed (non-contiguous) operands, 2+ chunks
        s, t = values((173, 2 * 211), dtype), values((211, 173), dtype)
        cases.append((f"{name} strided-transposed", s[:, ::2], t.t()))
        cases.append((f"{name} strided-3d", values((9, 41, 3 * 59), dtype)[..., 1::3], values((9, 41, 59), dtype)))
    return cases


def test_own_reductions_bitwise_equal_across_isas(tmp_path):
    capabilities = {"AVX512": ["avx512", "avx2", "default"], "AVX2": ["avx2", "default"]}.get(
        torch.backends.cpu.get_cpu_capability(), [])
    if len(capabilities) < 2:
        pytest.skip(f"only one instruction set on this CPU ({torch.backends.cpu.get_cpu_capability()})")
    path = tmp_path / "cases.pt"
    torch.save(_reduction_cases(), path)
    results = {}
    for isa in capabilities:
        env = dict(os.environ, ATEN_CPU_CAPABILITY=isa)
        r = subprocess.run([sys.executable, "-c", f"EXPECTED = {isa!r}\n" + REDUCTION_SCRIPT, str(path)], env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        results[isa] = dict(line.rsplit(" ", 1) for line in r.stdout.splitlines())
        assert len(results[isa]) > 0
    first = capabilities[0]
    for isa in capabilities[1:]:
        assert results[isa].keys() == results[first].keys()
        diff = [f"{k}: {first} {results[first][k]}, {isa} {results[isa][k]}"
                for k in results[first] if results[isa][k] != results[first][k]]
        assert not diff, f"{len(diff)} of {len(results[first])} results differ:\n" + "\n".join(diff[:40])


def _fixed_order_sum(losses):
    """smooth_l1's float64 sum of `losses` (flat, in the TensorIterator's order) in the documented order:
    chunks of 16384 elements; element p of a chunk added to lane p % 16, each lane in order from +0.0;
    a chunk's 16 lanes added pairwise (lane k + lane k + w, for w = 8, 4, 2, 1); the chunk sums pairwise
    (halves; 8 or fewer in order)."""
    import numpy as np

    x = losses.double().flatten().numpy()
    chunks = []
    for c in range(0, len(x), 16384):
        part = x[c:c + 16384]
        padded = np.zeros(-(-len(part) // 16) * 16)
        padded[:len(part)] = part
        lanes = np.add.accumulate(padded.reshape(-1, 16), axis=0)[-1].copy()  # in order, per lane
        w = 8
        while w >= 1:
            lanes[:w] = lanes[:w] + lanes[w:2 * w]
            w //= 2
        chunks.append(float(lanes[0]))

    def pairwise(p):
        if len(p) <= 8:
            s = 0.0
            for v in p:
                s += v
            return s
        h = len(p) // 2
        return pairwise(p[:h]) + pairwise(p[h:])

    return pairwise(chunks)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_own_reductions_follow_the_fixed_order(dtype):
    """The order of additions that makes the sums the same in every build, checked against a model of it
    in Python: on a machine with one instruction set too, a sum whose order follows the vector width
    differs from the model. float32/float64 only: there the 'none' losses are the opmath losses the
    reduction adds."""
    g = torch.Generator().manual_seed(99)
    cases = []
    for n in (7, 16, 33, 257, 1000, 16384, 16384 * 3 + 45, 100003):
        cases.append(((n,), (n,)))
    cases.append(((37, 999), (1, 999)))  # broadcast: rows of 999 (not whole groups of lanes)
    for self_shape, target_shape in cases:
        a, b = (torch.randn(s, generator=g, dtype=torch.float64)
                * torch.exp2(torch.randint(-20, 21, s, generator=g).double()) for s in (self_shape, target_shape))
        a, b = a.to(dtype), b.to(dtype)
        for beta in (1.0, 0.25, 0.0):
            total = _fixed_order_sum(torch.ops.torch_aclnn.smooth_l1_loss(a, b, 0, beta))
            n = a.expand(torch.broadcast_shapes(a.shape, b.shape)).numel()
            for reduction, want in ((2, total), (1, total / n)):
                got = torch.ops.torch_aclnn.smooth_l1_loss(a, b, reduction, beta).double().item().hex()
                want = torch.tensor(want, dtype=torch.float64).to(dtype).double().item().hex()
                assert got == want, (self_shape, target_shape, beta, reduction)
