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
from torch_aclnn.testing import OPS, tolerance
assert _loader.cpu_isa == "_cpu_" + EXPECTED, (_loader.cpu_isa, torch.backends.cpu.get_cpu_capability())
checked = 0
for name, info in OPS.items():
    for dtype in info.dtypes:
        for i, s in enumerate(info.samples("cpu", dtype)):
            if i >= 4:
                break
            out = info.op(*s.args, **s.kwargs)
            torch.testing.assert_close(out.double(), info.reference(*s.args, **s.kwargs), check_dtype=False,
                                       equal_nan=True, **tolerance(out.dtype))
            if s.exact_vs_aten and info.aten is not None and dtype in (torch.float32, torch.float64):
                assert torch.equal(out, info.aten(*s.args, **s.kwargs)), (name, s)
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
