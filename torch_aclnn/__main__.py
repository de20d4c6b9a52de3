"""The torch_aclnn command line (also installed as ``torch-aclnn``).

    python -m torch_aclnn check   verification report (numerics, gradcheck, opcheck, compile, errors)
    python -m torch_aclnn bench   benchmarks against aten
    python -m torch_aclnn info    versions, build, devices
"""
from __future__ import annotations

import argparse
import sys


def _info(args) -> int:
    import platform

    import torch

    import torch_aclnn
    from torch_aclnn import _loader

    rows = [
        ("torch_aclnn", torch_aclnn.__version__),
        ("torch", torch.__version__),
        ("python", platform.python_version()),
        ("CPU kernels", f"{_loader.cpu_isa} (aten capability {torch.backends.cpu.get_cpu_capability()})"),
        ("CUDA kernels compiled in", str(_loader.has_cuda_kernels())),
        ("CUDA available", f"{torch.cuda.is_available()} (torch built with CUDA {torch.version.cuda})"),
        ("Ascend NPU available", "True" if torch_aclnn.npu.is_available()
         else f"False ({torch_aclnn.npu.unavailable_reason()})"),
    ]
    for k, v in rows:
        print(f"{k:<26}{v}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torch_aclnn",
        description="torch_aclnn: aclnn backward operators for PyTorch. Subcommands: check (verify every "
                    "operator against the spec), bench (time against aten), info (versions and build).")
    sub = parser.add_subparsers(dest="command", required=True)
    from . import check
    p = sub.add_parser("check", help="verification report: numerics vs the float64 spec reference, gradcheck, "
                                     "opcheck, torch.compile and contract errors for every operator")
    check.add_arguments(p)
    p.set_defaults(func=check.main)
    p = sub.add_parser("info", help="versions, build flags and available devices")
    p.set_defaults(func=_info)
    try:
        from . import bench
    except ImportError:
        bench = None
    if bench is not None:
        p = sub.add_parser("bench", help="benchmarks against aten (ratios and GB/s)")
        bench.add_arguments(p)
        p.set_defaults(func=bench.main)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
