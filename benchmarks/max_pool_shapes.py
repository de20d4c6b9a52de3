"""max_pool3d on the CPU at a 3-D model's shapes: torch_aclnn against aten,
forward and backward through autograd, as a training step runs them.

    python benchmarks/max_pool_shapes.py [--rounds 7] [--threads 2]

A 2x2x2 pooling with indices (nn.MaxPool3d(2, return_indices=True)), and a
3x3x3 one with stride 2 and padding 1, of the inputs a small U-Net pools
(bench --model unet3d at its CPU sizes: 8, 16 and 32 voxels a side) and of a
larger one: ``F.max_pool3d`` against
``torch_aclnn.max_pool3d_with_indices``, each followed by the backward of
the values' sum. Each time is the median of interleaved rounds of
blocked_autorange (torch_aclnn/harness/timing.py's method); ratio = aten / torch_aclnn.
"""
from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F

import torch_aclnn
from torch_aclnn.harness.timing import interleaved

SHAPES = ((2, 16, 8, 8, 8), (2, 8, 16, 16, 16), (2, 16, 32, 32, 32), (2, 32, 32, 64, 64))
WINDOWS = ((2, 2, 0), (3, 2, 1))  # (kernel_size, stride, padding)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-run-time", type=float, default=0.2)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.rounds} interleaved rounds")
    for (kernel, stride, padding) in WINDOWS:
        for shape in SHAPES:
            x = torch.randn(shape, requires_grad=True)

            def aten():
                F.max_pool3d(x, kernel, stride, padding, return_indices=True)[0].sum().backward()

            def ours():
                torch_aclnn.max_pool3d_with_indices(x, kernel, stride, padding)[0].sum().backward()

            times = interleaved({"aten": aten, "ours": ours}, args.rounds, args.min_run_time, args.threads)
            a, o = (statistics.median(times[k]) * 1e6 for k in ("aten", "ours"))
            print(f"k{kernel} s{stride} p{padding} {str(shape):22s} forward+backward  aten {a:9.1f} us  "
                  f"torch_aclnn {o:9.1f} us  ratio {a / o:5.2f}")

if __name__ == "__main__":
    main()
