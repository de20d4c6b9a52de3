"""Non-temporal ("streaming") stores: the elementwise driver shared by elu
and smooth_l1 (csrc/cpu/elementwise.h), the upsample backward's x2 fold, its
float32 permute-block rows (AVX-512) and its channels_last_3d pixel-vector
rows, and max_pool3d's channels_last_3d backward write pass (float32 in
whole lines) write with them when their operands exceed the last-level
cache.

Those stores must not change a single bit: the same calls with every pass
streamed (TORCH_ACLNN_STREAM_BYTES=0, read once at start-up, hence
subprocesses) and with none streamed give identical results, for outputs at
every alignment, lengths around the vector width, every floating dtype, 1 and
2 threads, and each CPU kernel variant this machine can run. The elementwise
driver first writes a partial block up to the output's first 64-byte
boundary; the upsample backward's paths stream only rows that start on
one."""
import os
import subprocess
import sys

import pytest
import torch

import torch_aclnn  # noqa: F401

ops = torch.ops.torch_aclnn

SCRIPT = r"""
import sys
import torch
import torch_aclnn  # noqa: F401
ops = torch.ops.torch_aclnn
torch.manual_seed(0)
results = []
for threads in (1, 2):
    torch.set_num_threads(threads)
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
        for n in (1, 15, 33, 100, 1000, 4099, 70001):
            g, x, t = (torch.randn(n).to(dtype) for _ in range(3))
            for shift in (0, 1, 3):  # the result at an element offset: not 64-byte aligned
                def out():
                    return torch.full((n + shift,), float("nan"), dtype=dtype)[shift:]
                results.append(ops.elu(x, 1.0, 1.0, 1.0))
                for is_result in (False, True):
                    results.append(ops.elu_backward(g, 1.0, 1.0, 1.0, is_result, x))
                    o = out()
                    ops.elu_backward.grad_input(g, 1.0, 1.0, 1.0, is_result, x, grad_input=o)
                    results.append(o)
                results.append(ops.smooth_l1_loss(x, t, 0, 1.0))
                o = out()
                ops.smooth_l1_loss_backward.grad_input(g, x, t, 0, 1.0, grad_input=o)
                results.append(o)
                o = out()
                ops.smooth_l1_loss_backward.grad_input(g[0].clone().reshape(()), x, t, 1, 0.5, grad_input=o)
                results.append(o)
# upsample backward (nearest and nearest-exact), functional and out=, the latter also at an
# element offset (not 64-byte aligned)
def upsample_calls(dtype, insz, out_size):
    g = torch.randn(*insz[:2], *out_size).to(dtype)
    for ours in (ops.upsample_nearest3d_backward, ops.upsample_nearest_exact3d_backward):
        results.append(ours(g, out_size, insz))
        for shift in (0, 1):
            o = torch.full((insz[0] * insz[1] * insz[2] * insz[3] * insz[4] + shift,), float("nan"), dtype=dtype)
            o = o[shift:].view(insz)
            ours.grad_input(g, out_size, insz, grad_input=o)
            results.append(o)
for threads in (1, 2):
    torch.set_num_threads(threads)
    # W up-scaled by exactly 2: rows of 16 / 32 elements (64-byte multiples in float32 /
    # bfloat16) stream, 24 do not
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        for iw in (16, 24, 32, 64):
            upsample_calls(dtype, [2, 3, 4, 5, iw], [8, 10, 2 * iw])
    # W up-scaled by 1.5 or down-scaled by 0.7, D and H windows of 1 or 2: float32 rows the
    # permute blocks cover (AVX-512) are summed block by block and stream when they start on a
    # 64-byte boundary (iw 16, 32, 64)
    for dtype in (torch.float32, torch.bfloat16):
        for iw in (16, 21, 32, 64):
            for ow in (iw * 3 // 2, iw * 7 // 10):
                upsample_calls(dtype, [2, 3, 4, 5, iw], [6, 7, ow])
# channels_last_3d upsample backward with one vector of channels per pixel (8 or 16 channels:
# AVX2 / AVX-512), W up-scaled by 2 or 1.5, odd and even widths
for threads in (1, 2):
    torch.set_num_threads(threads)
    for dtype in (torch.float32, torch.bfloat16):
        for channels in (8, 16):
            for iw, ow in ((4, 8), (5, 10), (6, 9), (3, 4)):
                insz, out_size = [2, channels, 3, 4, iw], [6, 8, ow]
                g = torch.randn(2, channels, *out_size).to(dtype).contiguous(memory_format=torch.channels_last_3d)
                results.append(ops.upsample_nearest3d_backward(g, out_size, insz).contiguous())
                o = torch.full(insz, float("nan"), dtype=dtype).contiguous(memory_format=torch.channels_last_3d)
                ops.upsample_nearest3d_backward.grad_input(g, out_size, insz, grad_input=o)
                results.append(o.contiguous())
# max_pool3d backward, channels_last_3d, disjoint windows (the write pass): whole vectors of float32
# channels (16, 32: 64-byte lines with AVX-512) stream; 20 channels, bfloat16 and a result at an element
# offset do not
window = ([2, 2, 2], [2, 2, 2], [0, 0, 0], [1, 1, 1], False)
for threads in (1, 2):
    torch.set_num_threads(threads)
    for dtype in (torch.float32, torch.bfloat16):
        for channels in (16, 20, 32):
            x = torch.randn(2, channels, 4, 6, 8).to(dtype).contiguous(memory_format=torch.channels_last_3d)
            v, i = ops.max_pool3d_with_indices(x, *window)
            g = torch.randn(v.shape).to(dtype).contiguous(memory_format=torch.channels_last_3d)
            results.append(ops.max_pool3d_with_indices_backward(g, x, i, *window).contiguous())
            for shift in (0, 1):
                o = torch.full((x.numel() + shift,), float("nan"), dtype=dtype)[shift:]
                o = o.view(2, 4, 6, 8, channels).permute(0, 4, 1, 2, 3)  # (channels_last_3d strides)
                ops.max_pool3d_with_indices_backward.grad_input(g, x, i, *window, grad_input=o)
                results.append(o.contiguous())
torch.save([r.view(torch.int16 if r.element_size() == 2 else torch.int32 if r.element_size() == 4 else torch.int64)
            for r in results], sys.argv[1])
"""

_VARIANTS = {"AVX512": [None, "avx2"], "AVX2": [None]}.get(torch.backends.cpu.get_cpu_capability(), [None])


def _run(tmp_path, name, stream_bytes, isa):
    env = dict(os.environ, TORCH_ACLNN_STREAM_BYTES=str(stream_bytes))
    if isa is not None:
        env["ATEN_CPU_CAPABILITY"] = isa
    path = tmp_path / f"{name}.pt"
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return torch.load(path)


@pytest.mark.parametrize("isa", _VARIANTS, ids=lambda v: v or "native")
def test_streaming_stores_change_no_bit(tmp_path, isa):
    streamed = _run(tmp_path, "streamed", 0, isa)
    plain = _run(tmp_path, "plain", 2 ** 62, isa)
    assert len(streamed) == len(plain) > 0
    for i, (a, b) in enumerate(zip(streamed, plain)):
        assert torch.equal(a, b), i


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_pass_larger_than_the_cache(dtype):
    """8M elements (96 MiB of float32 operands, more than this machine's
    last-level cache: streamed by default) against the same calls on strided
    inputs, which take the TensorIterator path and never stream: identical."""
    n = 8 << 20
    g, x, t = (torch.randn(n).to(dtype) for _ in range(3))
    strided = [torch.empty(2 * n, dtype=dtype)[::2].copy_(v) for v in (g, x, t)]

    def calls(g, x, t):
        return (ops.elu_backward(g, 1.0, 1.0, 1.0, False, x), ops.elu_backward(g, 1.0, 1.0, 1.0, True, x),
                ops.smooth_l1_loss_backward(g, x, t, 0, 1.0), ops.smooth_l1_loss(x, t, 0, 1.0))

    for i, (a, b) in enumerate(zip(calls(g, x, t), calls(*strided))):
        assert torch.equal(a, b), i
