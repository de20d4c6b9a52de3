"""Runs the benchmark suite: the same as ``python -m torch_aclnn bench`` (all its options work here).

The harness and the cases live in the package, so the installed CLI has them too:
    torch_aclnn/harness/bench.py        timing, bandwidth references, report (markdown, JSON, chart)
    torch_aclnn/harness/bench_cases.py  the cases: sizes, aten counterparts, targets
Results go to benchmarks/results/<host>-<date>.{md,json,png}.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the torch_aclnn of this source tree

from torch_aclnn.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
