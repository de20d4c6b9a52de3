"""The verification and benchmark harness behind ``python -m torch_aclnn check``
and ``python -m torch_aclnn bench`` (docs/cli.md).

    check.py           the verification report (numerics, gradcheck, opcheck,
                       compile, contract errors) over torch_aclnn.testing's OpInfos
    bench.py           the operator benchmarks against aten: timing, report, CLI
    case.py            what one benchmark case is (Case, Setup)
    bench_cases.py     the throughput cases: sizes, aten counterparts, targets
    bench_overhead.py  the 1-element (per-call cost) cases
    bench_model.py     ``bench --model unet3d``: a full 3-D training step
    timing.py          interleaved, rotating rounds (shared by bench, bench_model
                       and benchmarks/*.py)
    host.py            what a report says about the machine
    _progress.py       the progress line on stderr

Nothing here is imported by ``import torch_aclnn``.
"""
