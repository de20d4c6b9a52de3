"""What the CPU kernels' huge-page advice (csrc/cpu/cpu_utils.h, with_huge_pages)
does in a loop and on a fresh large output.

    python benchmarks/huge_pages.py [--steps 150] [--threads 2]
    TORCH_ACLNN_HUGE_PAGES=0 python benchmarks/huge_pages.py   # the advice off

First a loop of elu + upsample x2 forward and backward on a (2, 16, 32, 32, 32)
float32 tensor (outputs of 4 and 32 MiB, which an allocator serves again and
again): the number of mappings of the process (/proc/self/maps) after each
block of steps, and the time per step. An advice given to memory an allocator
reuses splits its mapping and saves no fault; the count should stay flat.
Then elu_backward with a fresh 128 MiB result, torch_aclnn against aten: a
fresh mapping, where the advice turns 32768 page faults into 64.
"""
from __future__ import annotations

import argparse
import os
import time

import torch

import torch_aclnn


def _mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=150, help="steps per block (4 blocks)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"TORCH_ACLNN_HUGE_PAGES={os.environ.get('TORCH_ACLNN_HUGE_PAGES', '(unset: on)')}")
    x = torch.randn(2, 16, 32, 32, 32, requires_grad=True)
    counts = [_mappings()]
    start = time.perf_counter()
    for _ in range(4):
        for _ in range(args.steps):
            y = torch_aclnn.upsample_nearest3d(torch_aclnn.elu(x), scale_factor=2)
            y.sum().backward()
        counts.append(_mappings())
    per_step = (time.perf_counter() - start) / (4 * args.steps)
    print(f"loop: mappings {counts} (before, then after each block of {args.steps} steps); "
          f"{per_step * 1e3:.2f} ms per step")
    g, t = torch.randn(32 * 2**20), torch.randn(32 * 2**20)
    for name, fn in (("torch_aclnn", lambda: torch_aclnn.elu_backward(g, 1.0, 1.0, 1.0, False, t)),
                     ("aten", lambda: torch.ops.aten.elu_backward(g, 1.0, 1.0, 1.0, False, t))):
        best = float("inf")
        for _ in range(9):
            begin = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - begin)
        print(f"elu_backward, a fresh 128 MiB result: {name} {best * 1e3:.1f} ms (fastest of 9)")


if __name__ == "__main__":
    main()
