"""The torch_aclnn command line (also installed as ``torch-aclnn``).

    python -m torch_aclnn check   verification report (numerics, gradcheck, opcheck, compile, errors)
    python -m torch_aclnn bench   benchmarks against aten
    python -m torch_aclnn info    versions, build, devices
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
from pathlib import Path

DESCRIPTION = """\
torch_aclnn: the backward operators of Huawei CANN's aclnn library (and the
forward each pairs with) as PyTorch custom operators on CPU, CUDA and Ascend
NPU. This command checks that they work on your machine, times them, and
says how the package was built."""

EPILOG = """\
examples:
  python -m torch_aclnn info                       what is installed and built
  python -m torch_aclnn check                      verify every operator on the CPU (a few minutes)
  python -m torch_aclnn check --quick --op elu_backward --dtype float32
  python -m torch_aclnn check --device cuda --json report.json
  python -m torch_aclnn bench --quick                  time the operators against aten
  python -m torch_aclnn <command> --help           the options of one command

In Python, run an existing training script on these kernels with one line:
  import torch_aclnn; torch_aclnn.patch()
(see docs/patch.md). `torch-aclnn` is the same command, installed by pip."""

CHECK_EPILOG = """\
What it checks, per operator x dtype x memory layout: the largest error
against a float64 reference written from the spec (and whether it is within
tolerance); per operator: gradcheck and gradgradcheck (float64), opcheck
(schema, fake tensor, autograd registration), torch.compile(fullgraph=True,
dynamic=True) against eager, bitwise equality with aten where the spec
promises it, and that every documented contract error is raised, on real and
meta tensors. Operators are checked in worker processes, one per core (at
most 4; --jobs 1: in this process); each is seeded on its own, so the report
is the same either way. A progress bar goes to stderr; the report (Markdown
tables) to stdout. Exit status 0 if everything passed, 1 if anything failed,
2 for a bad argument or an unavailable device.

examples:
  python -m torch_aclnn check
  python -m torch_aclnn check --quick
  python -m torch_aclnn check --jobs 1
  python -m torch_aclnn check --op upsample_nearest3d_backward --dtype float16 --dtype bfloat16
  python -m torch_aclnn check --device cuda --json cuda-report.json"""

BENCH_EPILOG = """\
Times every operator case against the aten call a user would otherwise make
(interleaved rounds, median of round medians) and reports the ratio (> 1:
torch_aclnn is faster), GB/s and % of a bandwidth reference; writes Markdown,
JSON and a PNG chart (with matplotlib) to benchmarks/results/. Speed is
reported, never asserted.

examples:
  python -m torch_aclnn bench --quick
  python -m torch_aclnn bench --op elu_backward --dtype float32 --threads 1
  python -m torch_aclnn bench --tiny --out /tmp/bench     # a smoke run of the harness"""

INFO_EPILOG = """\
Prints the versions of torch_aclnn, torch, Python and numpy; which CPU kernel
module (instruction set) is loaded and which were built; whether CUDA kernels
are compiled in and a GPU is usable; whether torch_npu is installed and an
Ascend NPU is usable; and on which backends each operator has a kernel.

examples:
  python -m torch_aclnn info
  python -m torch_aclnn info --json > info.json"""

# dispatch key -> the name used in the report
_BACKENDS = (("CPU", "cpu"), ("CUDA", "cuda"), ("PrivateUse1", "npu"), ("Meta", "meta"))


def _version(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return "not installed" if importlib.util.find_spec(module) is None else "installed (version unknown)"


def _npu_status() -> tuple[str, str]:
    """(torch_npu, NPU available) without importing torch_npu when it is absent."""
    import torch_aclnn

    installed = importlib.util.find_spec("torch_npu") is not None
    package = _version("torch_npu") if installed else "not installed"
    npu = getattr(torch_aclnn, "npu", None)  # the NPU glue, where this build has it
    if npu is not None and hasattr(npu, "is_available"):
        available = "True" if npu.is_available() else f"False ({npu.unavailable_reason()})"
    elif not installed:
        available = "False (torch_npu is not installed)"
    else:
        import torch

        available = str(bool(getattr(torch, "npu", None) and torch.npu.is_available()))
    return package, available


def info_rows() -> list[tuple[str, object]]:
    import torch

    import torch_aclnn
    from torch_aclnn import _loader
    from torch_aclnn._patch import ROUTED_FUNCTIONS, route_keys
    from torch_aclnn._registry import OPERATORS
    from torch_aclnn._torch_api import has_kernel

    package_dir = Path(torch_aclnn.__file__).parent
    built = sorted(p.name.split(".")[0].removeprefix("_cpu_") for p in package_dir.glob("_cpu_*.so"))
    cuda_kernels = _loader.has_cuda_kernels()
    if torch.cuda.is_available():
        gpu = f"True ({torch.cuda.get_device_name(0)}; torch built with CUDA {torch.version.cuda})"
    else:
        gpu = f"False (torch built with CUDA {torch.version.cuda})"
    npu_package, npu_available = _npu_status()
    ops = sorted(OPERATORS)
    # A registered NPU kernel is usable only where an NPU is: say so beside it.
    npu_name = "npu" if npu_available == "True" else "npu (registered, unusable: no NPU, see above)"
    backends = {}
    for op in ops:
        have = [npu_name if name == "npu" else name for key, name in _BACKENDS
                if has_kernel(op, key)]
        backends[op] = ", ".join(have) or "none"
    if torch_aclnn.default_patch_level() == "dispatcher":
        routes = [f"aten::{aten} ({key})" for aten, key in route_keys()]
    else:
        routes = [f"F.{f}" for f in ROUTED_FUNCTIONS]
    return [
        ("torch_aclnn", f"{torch_aclnn.__version__} ({package_dir})"),
        ("torch", torch.__version__),
        ("python", f"{platform.python_version()} ({platform.platform()})"),
        ("numpy", _version("numpy")),
        ("CPU kernels loaded", f"{(_loader.cpu_isa or '').removeprefix('_cpu_')} "
                               f"(aten CPU capability {torch.backends.cpu.get_cpu_capability()}, "
                               f"{torch.get_num_threads()} threads)"),
        ("CPU kernels built", ", ".join(built) or "none"),
        ("CUDA kernels compiled in", str(cuda_kernels)),
        ("CUDA available", gpu),
        ("torch_npu", npu_package),
        ("Ascend NPU available", npu_available),
        ("patch() level", torch_aclnn.default_patch_level()),
        ("patch() routes", ", ".join(routes)),
        ("operators", backends),
    ]


def _info(args) -> int:
    rows = info_rows()
    if args.json:
        print(json.dumps(dict(rows), indent=2))
        return 0
    for key, value in rows:
        if isinstance(value, dict):
            print(f"{key}:")
            for op, have in value.items():
                print(f"  {op:<34}{have}")
        else:
            print(f"{key:<26}{value}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    prog = "torch-aclnn" if Path(sys.argv[0]).name == "torch-aclnn" else "python -m torch_aclnn"
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, epilog=EPILOG, formatter_class=formatter)
    sub = parser.add_subparsers(dest="command", required=True, title="commands")
    from .harness import check

    p = sub.add_parser("check", formatter_class=formatter, epilog=CHECK_EPILOG,
                       help="verify every operator: numerics vs the spec, gradcheck, opcheck, torch.compile, "
                            "contract errors",
                       description="The verification report: does every torch_aclnn operator compute what\n"
                                   "the spec says, on this machine and device?")
    check.add_arguments(p)
    p.set_defaults(func=check.main)
    p = sub.add_parser("info", formatter_class=formatter, epilog=INFO_EPILOG,
                       help="versions, build (CPU instruction set, CUDA), devices (GPU, Ascend NPU)",
                       description="What is installed and how torch_aclnn was built.")
    p.add_argument("--json", action="store_true", help="print the same as JSON")
    p.set_defaults(func=_info)
    try:
        from .harness import bench
    except ImportError:
        bench = None
    if bench is not None:
        p = sub.add_parser("bench", formatter_class=formatter, epilog=BENCH_EPILOG,
                           help="time every operator against aten (ratios and GB/s)",
                           description="Benchmarks of the torch_aclnn operators against aten's (CPU).")
        bench.add_arguments(p)
        p.set_defaults(func=bench.main)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
