"""``python -m torch_aclnn check``: the verification report.

For every operator x dtype x memory layout on the chosen device: the max error
against the float64 spec reference (and whether it is within the tolerance
stated once in torch_aclnn.testing.TOLERANCES); per operator: float64
gradcheck and gradgradcheck, torch.library.opcheck, torch.compile
(fullgraph, dynamic) vs eager, bitwise equality with aten where the spec
promises it, and every contract-error row on real and meta tensors.
Exit status 1 if anything fails.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import traceback
from typing import Callable

import torch

from .._index_checks import check_index_errors, failed_checks, set_sync_index_checks
from .._torch_api import recompile_limit
from ..testing import LAYOUTS, OPS, results, tolerance
from ._progress import Progress

DTYPE_NAMES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
               "bfloat16": torch.bfloat16, "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16,
               "int32": torch.int32, "int64": torch.int64}


def _short(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _status(fn: Callable[[], object]) -> tuple[str, str]:
    try:
        fn()
        return "ok", ""
    except Exception as e:  # the report records any failure
        return "FAIL", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def _numerics(info, device, dtype):
    """{layout: (max abs error, max error over tolerance, within tolerance, max relative error)} over
    the samples of each layout; the relative error is a sample's max |error| over its max |reference|."""
    res = {}
    for s in info.samples(device, dtype):
        # (an operator with several results is judged by all: indices exactly)
        outs = results(info.op(*s.args, **s.kwargs))
        cpu = s.map_tensors(lambda t: t.detach().cpu())
        refs = results(info.reference(*cpu.args, **cpu.kwargs))
        ok = len(outs) == len(refs) and all(
            o.shape == r.shape and bool(torch.isclose(o.detach().cpu().to(r.dtype), r, equal_nan=True,
                                                      **tolerance(o.dtype)).all()) for o, r in zip(outs, refs))
        out, ref = outs[0], refs[0]
        got = out.detach().cpu().double()
        tol = tolerance(out.dtype)
        finite = torch.isfinite(ref) & torch.isfinite(got) if got.shape == ref.shape else torch.zeros(0, dtype=torch.bool)
        err = ratio = rel = 0.0
        if finite.any():
            diff = (got - ref).abs()[finite]
            err = diff.max().item()
            # relative to the sample's largest |reference| (normwise), so a large error on large values reads small
            scale = ref.abs()[finite].max().item()
            rel = err / scale if scale > 0 else (0.0 if err == 0 else float("inf"))
            # the error in units of the allowed error (atol + rtol * |ref|): <= 1 passes
            ratio = (diff / (tol["atol"] + tol["rtol"] * ref.abs()[finite])).max().item() if tol["atol"] or \
                tol["rtol"] else (0.0 if err == 0 else float("inf"))
        prev = res.get(s.layout, (0.0, 0.0, True, 0.0))
        res[s.layout] = (max(prev[0], err), max(prev[1], ratio), prev[2] and ok, max(prev[3], rel))
    return res


def _grad_inputs(info, s):
    return [s.args[i] for i in info.grad_argnums if isinstance(s.args[i], torch.Tensor)]


def _gradchecks(info, device):
    def run(second: bool):
        for s in info.samples(device, torch.float64, True):
            inputs = _grad_inputs(info, s)
            if not inputs or any(t.numel() == 0 for t in inputs):
                continue

            def fn(*ts, s=s):
                args = list(s.args)
                for i, t in zip(info.grad_argnums, ts):
                    args[i] = t
                return info.op(*args, **s.kwargs)  # (gradcheck leaves out integer results)

            check = torch.autograd.gradgradcheck if second else torch.autograd.gradcheck
            if not check(fn, inputs, fast_mode=True):
                raise AssertionError(f"{s}")
    return run


def _opcheck(info, device, limit):
    dtype = torch.float64 if torch.float64 in info.dtypes else info.dtypes[0]
    for rg in ((False, True) if dtype.is_floating_point else (False,)):
        for i, s in enumerate(info.samples(device, dtype, rg)):
            if i >= limit:
                break
            torch.library.opcheck(info.op, s.args, s.kwargs)


def _compile(info, device, limit):
    """One compiled function per operator, called on every sample: each sample runs a graph traced
    for it or one whose guards it passes (dynamic shapes), never eager. (The recompile limit is
    set above the number of samples; past it dynamo would fall back to eager without a word.)"""
    dtype = torch.float32 if torch.float32 in info.dtypes else info.dtypes[0]
    samples = list(itertools.islice(info.samples(device, dtype), limit))
    torch.compiler.reset()
    with recompile_limit(len(samples) + 1):
        fn = torch.compile(lambda *a, **k: info.op(*a, **k), fullgraph=True, dynamic=True, backend="aot_eager")
        for s in samples:
            torch.testing.assert_close(fn(*s.args, **s.kwargs), info.op(*s.args, **s.kwargs), rtol=0, atol=0,
                                       equal_nan=True)


def _aten(info, device):
    n = ok = 0
    # The spec promises bitwise equality with aten's CPU kernels; on an NPU
    # aten's operators are the aclnn kernels the glue itself calls.
    if info.aten is None or str(device).split(":")[0] == "npu":
        return "n/a"
    for dtype in (torch.float32, torch.float64):
        if dtype not in info.dtypes:
            continue
        for s in info.samples(device, dtype):
            if s.exact_vs_aten:
                n += 1
                ok += all(torch.equal(a, b) for a, b in zip(results(info.op(*s.args, **s.kwargs)),
                                                            results(info.aten(*s.args, **s.kwargs)), strict=True))
    return f"{ok}/{n}" if n else "n/a"


def _raises(target, sample, e, pattern) -> bool:
    """Whether the call raises e.exc matching pattern, at the call or at the
    index check that follows it (a CUDA call's deferred check)."""
    try:
        target(*sample.args, **sample.kwargs)
        check_index_errors()
    except e.exc as ex:
        return bool(re.search(pattern, str(ex)))
    except Exception:
        return False
    return False


def _errors(info, device):
    for _ in failed_checks():  # (an earlier call's failed checks are not this op's to report)
        pass
    n = ok = 0
    for e in info.errors(device):
        target = info.op if e.overload == "default" else getattr(info.packet, e.overload)
        pattern = rf"^\[torch_aclnn {e.code}\] {info.name}: .*{e.match}"
        if not e.data_dependent:
            for s in (e.sample, e.sample.map_tensors(lambda t: t.to("meta"))):
                n += 1
                ok += _raises(target, s, e, pattern)
            continue
        # Both index-check modes: synchronous raises at the call; the default
        # raises at the check that follows, tagged on CUDA (docs/spec.md §7).
        tagged = rf"^\[torch_aclnn {e.code}\] deferred: {info.name}: .*{e.match}"
        cuda = torch.device(device).type == "cuda"
        for sync in (True, False):
            previous = set_sync_index_checks(sync)
            try:
                n += 1
                ok += _raises(target, e.sample, e, tagged if cuda and not sync else pattern)
            finally:
                set_sync_index_checks(previous)
    return ok, n


_COLUMNS = ("gradcheck", "gradgradcheck", "opcheck", "compile", "bitwise vs aten", "contract errors")


def _op_report(name: str, device: str, dtypes, quick: bool, seed: int):
    """One operator's part of the report: (numerics per dtype, the per-operator row, failures).
    Seeded per operator, so its samples are the same whichever operators run and in which process."""
    torch.manual_seed(seed)
    info, failures, numerics = OPS[name], [], []
    for dtype in info.dtypes:
        if dtypes and dtype not in dtypes:
            continue
        try:
            res = _numerics(info, device, dtype)
        except Exception as e:
            res = {"error": (float("nan"), float("nan"), False, float("nan"))}
            failures.append(f"{name} {_short(dtype)}: {type(e).__name__}: {e}")
        numerics.append((dtype, res))
    limit = 2 if quick else 1000
    floating = torch.float64 in info.dtypes
    row = {}
    row["gradcheck"] = _status(lambda: _gradchecks(info, device)(False)) if floating else ("n/a", "")
    row["gradgradcheck"] = _status(lambda: _gradchecks(info, device)(True)) if floating else ("n/a", "")
    row["opcheck"] = _status(lambda: _opcheck(info, device, 3 if quick else limit))
    row["compile"] = _status(lambda: _compile(info, device, limit))
    row["bitwise vs aten"] = (_aten(info, device), "")
    ok, n = _errors(info, device)
    row["contract errors"] = (f"{ok}/{n}", "")
    for k, (v, why) in row.items():
        if v == "FAIL" or ("/" in v and v.split("/")[0] != v.split("/")[1]):
            failures.append(f"{name} {k}: {why or v}")
    return numerics, row, failures


def _worker_init(device: str, threads: int) -> None:
    torch.set_num_threads(threads)
    if device.split(":")[0] == "npu":
        from .. import npu  # noqa: F401  (imports torch_npu, as main() does)


def _default_jobs() -> int:
    """Worker processes for the command line's report: one per usable core, at most 4."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def _reports(names, device, dtypes, quick, seed, jobs, bar):
    """{name: _op_report(name)}: in this process, or spread over `jobs` spawned worker processes (the
    operators are independent; each worker runs whole operators). A worker that dies fails, with
    the reason, the operators not yet reported, instead of ending the report."""
    if jobs <= 1:
        out = {}
        for name in names:
            bar.step(name)
            out[name] = _op_report(name, device, dtypes, quick, seed)
        return out
    import concurrent.futures as cf
    import multiprocessing

    threads = max(1, torch.get_num_threads() // jobs)
    out = {}
    with cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                initializer=_worker_init, initargs=(device, threads)) as pool:
        futures = {pool.submit(_op_report, name, device, dtypes, quick, seed): name for name in names}
        for fut in cf.as_completed(futures):
            name = futures[fut]
            bar.step(name)
            try:
                out[name] = fut.result()
            except Exception as e:  # (a worker process that died, or a result that could not come back)
                why = f"{type(e).__name__}: {e}"
                out[name] = ([], dict.fromkeys(_COLUMNS, ("FAIL", why)), [f"{name}: {why}"])
    return out


def run(device: str = "cpu", dtypes=None, ops=None, quick: bool = False, json_path=None, stream=None,
        seed: int = 0, jobs: int = 1) -> int:
    stream = sys.stdout if stream is None else stream  # (the stdout of the call, not of the import)
    names = [n for n in OPS if not ops or n in ops]
    jobs = max(1, min(jobs, len(names)))
    bar = Progress(len(names), label=f"check {device}" + (f" ({jobs} processes)" if jobs > 1 else ""))
    reports = _reports(names, device, dtypes, quick, seed, jobs, bar)
    bar.close()
    numerics, per_op, failures = [], {}, []
    for name in names:
        op_numerics, row, op_failures = reports[name]
        numerics += [(name, dtype, res) for dtype, res in op_numerics]
        per_op[name] = row
        failures += op_failures

    w = stream.write
    w(f"\n## torch_aclnn verification report — device {device}, torch {torch.__version__}\n\n")
    w("### Against the float64 spec reference: ok or FAIL, the worst error as a fraction of the\n"
      "### tolerance stated in torch_aclnn.testing.TOLERANCES (atol + rtol*|ref|; <= 1 is ok),\n"
      "### then the max relative error (a sample's max |error| over its max |reference|)\n\n")
    w("| operator | dtype | " + " | ".join(LAYOUTS) + " |\n|---|---|" + "---|" * len(LAYOUTS) + "\n")
    for name, dtype, res in numerics:
        cells = []
        for layout in LAYOUTS:
            if layout in res:
                err, ratio, ok, rel = res[layout]
                cells.append(f"{'ok' if ok else 'FAIL'} {ratio:.2f} tol (rel err {rel:.1e})")
                if not ok:
                    failures.append(f"{name} {_short(dtype)} {layout}: max error {err:.3e} out of tolerance")
            else:
                cells.append("-")
        w(f"| {name} | {_short(dtype)} | " + " | ".join(cells) + " |\n")
    w("\n### Per operator\n\n| operator | " + " | ".join(_COLUMNS) + " |\n|---|" + "---|" * len(_COLUMNS) + "\n")
    for name, row in per_op.items():
        w(f"| {name} | " + " | ".join(row[c][0] for c in _COLUMNS) + " |\n")
    w(f"\n{'ALL PASSED' if not failures else f'{len(failures)} FAILED'}\n")
    for f in failures:
        w(f"  FAIL {f}\n")
    if json_path:
        with open(json_path, "w") as fh:
            numerics_json = [{"op": n, "dtype": _short(d),
                              "layouts": {k: {"max_error": v[0], "error_over_tolerance": v[1], "ok": v[2],
                                              "max_relative_error": v[3]}
                                          for k, v in r.items()}} for n, d, r in numerics]
            json.dump({"device": device, "torch": torch.__version__, "failures": failures, "numerics": numerics_json,
                       "per_op": {n: {k: v[0] for k, v in row.items()} for n, row in per_op.items()}},
                      fh, indent=2)
    return 1 if failures else 0


def _at_least_one(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="cpu",
                   help="cpu (default), cuda or npu (needs torch_npu; results are compared with the CPU reference)")
    p.add_argument("--dtype", action="append", choices=sorted(DTYPE_NAMES), help="only these dtypes (repeatable)")
    p.add_argument("--op", action="append", help="only these operators (repeatable), e.g. elu_backward")
    p.add_argument("--quick", action="store_true", help="fewer opcheck/compile samples")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the samples' random values, set per operator (default 0)")
    p.add_argument("--jobs", "-j", type=_at_least_one, default=None, metavar="N",
                   help="operators checked in N worker processes at once (default: one per core, at most 4; "
                        "1: all in this process)")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")


def main(args: argparse.Namespace) -> int:
    if args.op:
        unknown = [o for o in args.op if o not in OPS]
        if unknown:
            print(f"unknown operator(s) {unknown}; known: {sorted(OPS)}", file=sys.stderr)
            return 2
    if args.device.split(":")[0] == "npu":
        from .. import npu  # imports torch_npu (guarded) when autoload has not

        if not npu.is_available():
            print(f"device {args.device!r} is not available: {npu.unavailable_reason()}", file=sys.stderr)
            return 2
    try:
        torch.empty(0, device=args.device)
    except Exception as e:
        print(f"device {args.device!r} is not available: {e}", file=sys.stderr)
        return 2
    dtypes = [DTYPE_NAMES[d] for d in args.dtype] if args.dtype else None
    if dtypes:  # an operator without a kernel in any of these dtypes is said so, not passed over in silence
        names = args.op or list(OPS)
        lacking = [n for n in names if not set(dtypes) & set(OPS[n].dtypes)]
        asked = "/".join(map(_short, dtypes))
        if args.op and lacking or len(lacking) == len(names):
            for n in lacking:
                print(f"{n} has no {asked} kernel (its dtypes: {', '.join(map(_short, OPS[n].dtypes))})",
                      file=sys.stderr)
            return 2
        if lacking:
            print(f"not checked: {', '.join(lacking)} (no {asked} kernel)", file=sys.stderr)
    jobs = _default_jobs() if args.jobs is None else args.jobs
    try:  # (the samples' random values are seeded per operator: the same report on every run)
        return run(args.device, dtypes, args.op, args.quick, args.json, seed=args.seed, jobs=jobs)
    except Exception:
        traceback.print_exc()
        return 1
