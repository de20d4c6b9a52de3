"""Nsight Compute's view of the CUDA kernels that sat furthest below their
bandwidth reference (docs/performance.md), torch_aclnn's and aten's side by
side: `.ci/gpu-check`'s opt-in ncu step (NCU_S=<seconds>) runs

    ncu --profile-from-start off --section SpeedOfLight --section MemoryWorkloadAnalysis \\
        --section Occupancy --section WarpStateStats python benchmarks/ncu_cases.py

Each case is `bench --device cuda`'s case of the same name (torch_aclnn/harness/bench_cases.py, at the
"large" sizes: past the GPU's L2), elu_backward as the kernel that reaches the reference. Each
side is called once to warm up, then once between cudaProfilerStart and cudaProfilerStop, so
that ncu profiles exactly those launches (every kernel of the call: a window table, an index
flag's memset, the kernel itself). `--device cpu` makes the same calls on the CPU at the tiny
sizes, without the profiler: a check of this script (tests/test_bench.py)."""
import argparse
import sys

import torch

import torch_aclnn  # noqa: F401  (registers the operators)
from torch_aclnn.harness import bench_cases

F32, BF16 = torch.float32, torch.bfloat16
# (operator, case, dtype, form) of bench_cases.all_cases()
CASES = [
    ("upsample_nearest3d_backward", "scale 2 channels_last_3d", F32, "functional"),
    ("upsample_nearest3d_backward", "scale 2 channels_last_3d", BF16, "functional"),
    ("upsample_nearest3d_backward", "scale 1.5 NCDHW", F32, "functional"),
    ("upsample_nearest3d_backward", "scale 0.5 NCDHW", F32, "functional"),
    ("upsample_nearest3d_backward", "scale 1.5 channels_last_3d", F32, "functional"),
    ("upsample_nearest3d_backward", "scale 2 NCDHW", F32, "functional"),
    ("max_unpool3d_backward", "2x2x2 pooling", F32, "functional"),
    ("max_unpool3d_backward", "2x2x2 pooling", BF16, "functional"),
    ("max_unpool3d", "2x2x2 pooling", F32, "functional"),
    ("elu_backward", "is_result=False", F32, "functional"),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = ap.parse_args(argv)
    cuda = args.device == "cuda"
    size = "large" if cuda else "tiny"
    by_key = {(c.op, c.name, c.dtype, c.form): c for c in bench_cases.all_cases()}
    for key in CASES:
        case = by_key[key]  # (a renamed bench case fails here, loudly)
        with torch.device(args.device):
            setup = case.build(size)
        for side, fn in (("torch_aclnn", setup.ours), ("aten", setup.aten)):
            fn()  # warm-up: allocations, the index flag's pinned buffer, caches
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.profiler.start()
            fn()
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
            print(f"profiled: {case.op} / {case.name} / {str(case.dtype)[6:]} / {side}", flush=True)
        del setup
        if cuda:
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
