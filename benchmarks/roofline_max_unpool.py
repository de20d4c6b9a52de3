"""Memory roofline of the max_unpool3d_backward benchmark case (CPU, AVX-512).

max_unpool3d_backward of a 2x2x2 pooling reads all of grad_output (8 values
per pooled element), the int64 indices, and writes the result. This probe
times a kernel that moves exactly those bytes in the order torch_aclnn's
window runs read them (per pooled row: rows 2h and 2h+1 of planes 2d and 2d+1,
each read whole) and does no indexing at all: it sums the four rows' vectors
and adds the converted indices, so nothing can be optimised away. Its time is
what a kernel that reads these bytes in this order costs on the machine;
aten's time over it is the most a kernel reading them could reach against
aten's gather in the same run.

    python benchmarks/roofline_max_unpool.py [--threads 1 2] [--rounds 5]

Needs a C++ compiler (torch.utils.cpp_extension.load_inline) and an AVX-512
CPU; it prints a note and exits otherwise.
"""
import argparse
import os
import statistics
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch.utils.benchmark import Timer

SRC = r'''
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

torch::Tensor window_stream(torch::Tensor go, torch::Tensor idx) {
  const int64_t P = go.size(0) * go.size(1), D = go.size(2), H = go.size(3), W = go.size(4);
  const int64_t pD = D / 2, pH = H / 2, pW = W / 2;
  TORCH_CHECK(pW % 16 == 0 && go.is_contiguous() && idx.is_contiguous());
  auto out = torch::empty({P, pD, pH, pW}, go.options());
  const float* g = go.data_ptr<float>();
  const int64_t* ix = idx.data_ptr<int64_t>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, P * pD * pH, 64, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t p = r / (pD * pH), d = r / pH % pD, h = r % pH;
      const float* r0 = g + ((p * D + 2 * d) * H + 2 * h) * W;  // rows 2h, 2h+1 of plane 2d
      const float* r1 = r0 + H * W;                             // the same rows of plane 2d+1
      for (int64_t k = 0; k < pW; k += 16) {
        const __m512 a = _mm512_add_ps(_mm512_loadu_ps(r0 + 2 * k), _mm512_loadu_ps(r0 + 2 * k + 16));
        const __m512 b2 = _mm512_add_ps(_mm512_loadu_ps(r0 + W + 2 * k), _mm512_loadu_ps(r0 + W + 2 * k + 16));
        const __m512 c = _mm512_add_ps(_mm512_loadu_ps(r1 + 2 * k), _mm512_loadu_ps(r1 + 2 * k + 16));
        const __m512 d2 = _mm512_add_ps(_mm512_loadu_ps(r1 + W + 2 * k), _mm512_loadu_ps(r1 + W + 2 * k + 16));
        const __m512i i0 = _mm512_loadu_si512(ix + r * pW + k), i1 = _mm512_loadu_si512(ix + r * pW + k + 8);
        const __m512i t = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(i0)),
                                             _mm512_cvtepi64_epi32(i1), 1);
        const __m512 s = _mm512_add_ps(_mm512_add_ps(a, b2), _mm512_add_ps(c, d2));
        _mm512_storeu_ps(o + r * pW + k, _mm512_add_ps(s, _mm512_cvtepi32_ps(t)));
      }
    }
  });
  return out;
}
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    if "avx512f" not in flags:
        print("note: no AVX-512 on this CPU; the probe (and torch_aclnn's window runs) need it")
        return 0
    try:
        from torch.utils.cpp_extension import load_inline
        probe = load_inline("torch_aclnn_roofline_max_unpool", cpp_sources=SRC, functions=["window_stream"],
                            extra_cflags=["-O3", "-mavx512f", "-mavx512dq", "-mavx512vl", "-mavx512bw", "-fopenmp"],
                            extra_ldflags=["-fopenmp"], build_directory=tempfile.mkdtemp(), verbose=False)
    except Exception as e:  # no compiler, no headers
        print(f"note: could not build the probe: {e}")
        return 0
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import torch_aclnn  # noqa: F401  (registers torch.ops.torch_aclnn)

    x = torch.randn(2, 32, 32, 64, 64)  # the bench's case: 2x2x2 pooling of (2, 32, 32, 64, 64)
    pooled, idx = F.max_pool3d(x, 2, return_indices=True)
    go = torch.randn_like(x)
    o1, o2 = torch.empty_like(pooled), torch.empty_like(pooled)
    want = go.flatten(-3).gather(-1, idx.flatten(-3)).view_as(pooled)
    got = torch.ops.torch_aclnn.max_unpool3d_backward(go, pooled, idx, [32, 64, 64], [2, 2, 2], [0, 0, 0])
    assert torch.equal(got, want)
    fns = {
        "torch_aclnn out=": lambda: torch.ops.torch_aclnn.max_unpool3d_backward.grad_input(
            go, pooled, idx, [32, 64, 64], [2, 2, 2], [0, 0, 0], grad_input=o1),
        "aten gather out=": lambda: torch.gather(go.flatten(-3), -1, idx.flatten(-3), out=o2.flatten(-3)),
        "bytes only": lambda: probe.window_stream(go, idx),
    }
    print(f"max_unpool3d_backward, 2x2x2 pooling of {tuple(x.shape)} float32: median of {args.rounds} "
          "interleaved rounds (ms)")
    for th in args.threads:
        torch.set_num_threads(th)
        times = {k: [] for k in fns}
        for r in range(args.rounds):
            names = list(fns)[r % 3:] + list(fns)[:r % 3]
            for k in names:
                t = Timer("f()", globals={"f": fns[k]}, num_threads=th).blocked_autorange(min_run_time=0.3)
                times[k].append(t.median * 1e3)
        med = {k: statistics.median(v) for k, v in times.items()}
        aten, ours, floor = med["aten gather out="], med["torch_aclnn out="], med["bytes only"]
        print(f"  {th} thread(s): " + ", ".join(f"{k} {v:.3f}" for k, v in med.items())
              + f"; aten / torch_aclnn {aten / ours:.2f}x, aten / bytes only {aten / floor:.2f}x"
              f" (torch_aclnn at {100 * floor / ours:.0f}% of the bytes-only speed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
