"""``python -m torch_aclnn bench``: benchmarks of every operator against aten (CPU, or CUDA with --device cuda).

For every case in torch_aclnn/harness/bench_cases.py: the torch_aclnn call, the aten
call a user would otherwise make, and a bandwidth reference are timed in the
same process, interleaved (rounds of ``Timer.blocked_autorange``, the order
rotating each round; the reported time is the median of the round medians).
Reported per case: both times, the ratio aten time / our time (> 1: we are
faster), achieved GB/s of logical traffic (each tensor read or written once)
and that as a % of the reference — a plain aten op with the same read:write
mix (copy_ for 1R+1W, add(out=) for 2R+1W, addcmul(out=) for 3R+1W, sum for
read-only) on float32 tensors moving the same number of bytes. Next to
them, the case's floor: the least work it needs, timed in the same rounds as
plain aten ops — its traffic (every input read once by sum, the result's bytes
written once by fill_) or, where the case names one (Setup.compute), its
compute, whichever is slower — and the ratio and % of the reference a kernel
running at the floor would score; a missed target that asks for more than
that is marked "beyond floor".
1-element calls measure per-call overhead (reported, like every row, as the
ratio aten time / our time; their targets are kept as our time / aten time);
there a round's time is the fastest of short blocks of calls, ours and aten
alternating block by block (timing.fastest_blocks), as noise only adds time.

Output: a markdown table (printed, and written to <host>-<date>.md in the
current directory or --out DIR), the same data as JSON, and a PNG bar
chart of the ratios (needs matplotlib). Operators without a kernel for the
device in this build are skipped with a note. On CUDA the tensors live on the
current GPU and every timed block ends with a synchronize (torch.utils.benchmark
does this for CUDA), so times are device times plus launch cost; targets are
bench_cases.targets'. Speed is reported, never asserted: the exit
status is 0 unless the harness itself fails.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import socket
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Optional

import torch

from .._torch_api import has_kernel
from . import bench_cases, bench_model, host, timing
from ._progress import Progress
from .bench_cases import OPERATORS
from .case import Case

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}

# size level -> (rounds, blocked_autorange min_run_time per timer and round).
# "large" (bench_cases: past a GPU's L2) is what --device cuda runs without --quick/--tiny.
MODES = {"full": (5, 0.2), "large": (5, 0.2), "quick": (3, 0.01), "tiny": (1, 0.001)}
# The levels the targets refer to.
TARGET_SIZES = ("full", "large")


def _short(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _missing_kernel(case: Case, device: str = "cpu") -> Optional[str]:
    """Why the case cannot run on ``device`` in this build (None if it can)."""
    if not hasattr(torch.ops.torch_aclnn, case.op):
        return f"torch_aclnn::{case.op} is not registered"
    key = device.upper()
    try:
        ok = has_kernel(case.op, key)
    except RuntimeError:
        ok = False
    return None if ok else f"{case.qualname} has no {key} kernel in this build"


# ---------------------------------------------------------------------------
# Bandwidth references: a plain aten op with the case's read:write mix.

_REFERENCE_OPS = {
    (1, 1): "copy_",
    (2, 1): "torch.add(a, b, out=c)",
    (3, 1): "torch.addcmul(a, b, c, out=d)",
    (0, 1): "zero_",
}


def _reference_name(reads: int, writes: int) -> str:
    if writes == 0:
        return "sum (read only)"
    return _REFERENCE_OPS.get((reads, writes), "")


def _reference_fn(reads: int, writes: int, nbytes: int):
    """A callable moving ~nbytes of float32 with the given mix, or None."""
    if writes == 0:
        a = torch.ones(max(nbytes // 4, 1))
        return lambda: a.sum()
    if (reads, writes) not in _REFERENCE_OPS:
        return None
    n = max(nbytes // (4 * (reads + writes)), 1)
    t = [torch.ones(n) for _ in range(reads + writes)]
    if reads == 0:
        return t[0].zero_
    if reads == 1:
        return lambda: t[1].copy_(t[0])
    if reads == 2:
        return lambda: torch.add(t[0], t[1], out=t[2])
    return lambda: torch.addcmul(t[0], t[1], t[2], out=t[3])


def _results(result) -> list:
    """The case's result tensors (an operator may have several: values, indices)."""
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [t for t in items if isinstance(t, torch.Tensor)]


def _traffic_floor(reads: list, result):
    """The least memory traffic the case needs, as plain aten ops: every input
    read once (sum) and every result's bytes written once (fill_ of a tensor
    like it), one after the other. An estimate, not a strict bound: a kernel
    that overlaps its reads and writes may run a little faster."""
    reads = [t for t in reads if isinstance(t, torch.Tensor) and t.numel() > 1]
    sinks = [torch.empty_like(t) for t in _results(result) if t.numel() > 1]

    def floor():
        for t in reads:
            t.sum()
        for t in sinks:
            t.fill_(0)
    return floor


# ---------------------------------------------------------------------------
# Measurement

def _nbytes(t) -> int:
    return sum(r.numel() * r.element_size() for r in _results(t))


def _compare(ours, aten, exact: bool) -> str:
    """'' when the two results agree, else a short note (a sanity check, not a test)."""
    if isinstance(ours, tuple) and isinstance(aten, tuple) and len(ours) == len(aten):
        return next((n for n in (_compare(a, b, exact) for a, b in zip(ours, aten)) if n), "")
    if not (isinstance(ours, torch.Tensor) and isinstance(aten, torch.Tensor)):
        return ""
    if ours.shape != aten.shape or ours.dtype != aten.dtype:
        return f"results differ: ours {tuple(ours.shape)} {_short(ours.dtype)}, aten {tuple(aten.shape)} " \
               f"{_short(aten.dtype)}"
    if exact and ours.dtype == torch.float32:
        if torch.equal(ours, aten):
            return ""
    else:
        tol = dict(rtol=1e-4, atol=1e-5) if ours.dtype == torch.float32 else dict(rtol=2e-2, atol=1e-2)
        if torch.allclose(ours.float(), aten.float(), equal_nan=True, **tol):
            return ""
    diff = (ours.double() - aten.double()).abs().max().item() if ours.numel() else 0.0
    return f"results differ from aten{' (not bitwise)' if exact else ''}: max |diff| {diff:.3g}"


def _run_case(case: Case, size: str, rounds: int, min_run_time: float, threads: int,
              device: str = "cpu") -> dict:
    ratio, pct, overhead = bench_cases.targets(case, device)
    row = {"op": case.op, "case": case.name, "dtype": _short(case.dtype), "form": case.form, "kind": case.kind,
           "aten": case.aten_name, "status": "ok", "note": "",
           "target": {"ratio": ratio, "pct_of_reference": pct, "overhead": overhead}}
    why = _missing_kernel(case, device)
    if why:
        row.update(status="skipped", note=why)
        return row
    try:
        with torch.device(device):  # the cases' factory calls create their tensors there
            setup = case.build(size)
        r_ours, r_aten = setup.ours(), setup.aten()  # also the warm-up
        row["note"] = _compare(r_ours, r_aten, setup.exact)
        read = sum(_nbytes(t) for t in setup.reads)
        written = _nbytes(r_ours)
        n_read = sum(1 for t in setup.reads if t.numel() > 1)
        n_written = sum(1 for t in _results(r_ours) if t.numel() > 1)
        fns = {"ours": setup.ours, "aten": setup.aten}
        if case.kind == "throughput":
            with torch.device(device):
                ref = _reference_fn(n_read, n_written, read + written)
            if ref is not None:
                fns["reference"] = ref
            fns["traffic floor"] = _traffic_floor(setup.reads, r_ours)
            if setup.compute is not None:
                fns["compute floor"] = setup.compute[1]
            for k in fns.keys() - {"ours", "aten"}:
                fns[k]()  # warm-up (ours and aten ran above)
        del r_ours, r_aten
        times = (timing.interleaved(fns, rounds, min_run_time, threads) if case.kind == "throughput"
                 else timing.fastest_blocks(fns, rounds, threads, device))
    except Exception as e:  # one broken case must not stop the suite
        row.update(status="error", note=f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}")
        return row
    finally:
        gc.collect()
    med = {k: statistics.median(v) for k, v in times.items()}
    spread = max((max(v) - min(v)) / med[k] for k, v in times.items() if k in ("ours", "aten"))
    row.update(ours_s=med["ours"], aten_s=med["aten"], ratio=med["aten"] / med["ours"],
               overhead=med["ours"] / med["aten"], spread_pct=100.0 * spread, rounds=times)
    if case.kind == "throughput":
        total = read + written
        row.update(bytes=total, mix=f"{n_read}R+{n_written}W", ours_gbps=total / med["ours"] / 1e9,
                   aten_gbps=total / med["aten"] / 1e9)
        if "reference" in med:
            row.update(reference=_reference_name(n_read, n_written), reference_gbps=total / med["reference"] / 1e9)
            row["pct_of_reference"] = 100.0 * row["ours_gbps"] / row["reference_gbps"]
        # The floor: the slower of the traffic floor and the compute floor (a
        # kernel overlaps the two at best); what a kernel at the floor would score.
        floors = {"traffic": med["traffic floor"]}
        if "compute floor" in med:
            floors[setup.compute[0]] = med["compute floor"]
        kind, floor_s = max(floors.items(), key=lambda kv: kv[1])
        row.update(floor=kind, floor_s=floor_s, floors_s=floors, ratio_at_floor=med["aten"] / floor_s)
        if "reference" in med:
            row["pct_of_reference_at_floor"] = 100.0 * med["reference"] / floor_s
    row["met"] = _met(row)
    row["beyond_floor"] = _beyond_floor(row)
    return row


def _met(row: dict) -> Optional[bool]:
    t = row["target"]
    checks = []
    if row["kind"] == "overhead":
        if t["overhead"] is not None:
            checks.append(row["overhead"] <= t["overhead"])
    else:
        if t["ratio"] is not None:
            checks.append(row["ratio"] >= t["ratio"])
        if t["pct_of_reference"] is not None and "pct_of_reference" in row:
            checks.append(row["pct_of_reference"] >= t["pct_of_reference"])
    return all(checks) if checks else None


def _beyond_floor(row: dict) -> Optional[bool]:
    """For a missed target: True when every part it misses asks for more than
    a kernel running at the case's floor would reach in this run."""
    if row.get("met") is not False or "floor_s" not in row:
        return None
    t, parts = row["target"], []
    if t["ratio"] is not None and row["ratio"] < t["ratio"]:
        parts.append(row["ratio_at_floor"] < t["ratio"])
    if t["pct_of_reference"] is not None and row.get("pct_of_reference", 100.0) < t["pct_of_reference"]:
        parts.append(row.get("pct_of_reference_at_floor", 100.0) < t["pct_of_reference"])
    return all(parts) if parts else None


def run(cases: list, size: str = "full", rounds: Optional[int] = None, min_run_time: Optional[float] = None,
        threads: Optional[int] = None, device: str = "cpu") -> dict:
    """Measure ``cases`` at a size level; returns the report as a dict (what the JSON holds)."""
    from .. import _loader, __version__

    d_rounds, d_min = MODES[size]
    rounds = rounds or d_rounds
    min_run_time = min_run_time or d_min
    threads = threads or torch.get_num_threads()
    meta = {"host": socket.gethostname(), "date": datetime.date.today().isoformat(),
            "time": datetime.datetime.now().isoformat(timespec="seconds"), "size": size,
            "sizes": bench_cases.describe_sizes(size), "rounds": rounds, "min_run_time_s": min_run_time,
            "threads": threads, "cpu": host.cpu_model(), "cpus": os.cpu_count(), "torch": torch.__version__,
            "torch_aclnn": __version__, "cpu_kernels": _loader.cpu_isa,
            "aten_cpu_capability": torch.backends.cpu.get_cpu_capability(), "load_start": host.load(),
            "device": device, "huge_pages": host.huge_pages()}
    if device == "cuda":
        meta.update(host.gpu())
    bar = Progress(len(cases), label="bench")
    rows = []
    start = time.monotonic()
    for case in cases:
        bar.step(f"{case.op} {_short(case.dtype)} {case.form}")
        rows.append(_run_case(case, size, rounds, min_run_time, threads, device))
    bar.close()
    meta.update(load_end=host.load(), seconds=round(time.monotonic() - start, 1))
    return {"meta": meta, "cases": rows}


# ---------------------------------------------------------------------------
# Report

def _target_cell(row: dict) -> str:
    t = row["target"]
    if row["kind"] == "overhead":  # (kept as ours/aten <= t; shown as the ratio aten/ours >= 1/t)
        return f">= {1 / t['overhead']:.2f}x" if t["overhead"] is not None else ""
    parts = []
    if t["ratio"] is not None:
        parts.append(f">= {t['ratio']:g}x")
    if t["pct_of_reference"] is not None:
        parts.append(f">= {t['pct_of_reference']:g}%")
    return ", ".join(parts)


def _ratio_target(row: dict) -> Optional[float]:
    """The least ratio (aten time / torch_aclnn time) the row's target asks for, where it asks for one."""
    t = row["target"]
    if row["kind"] == "overhead":
        return None if t["overhead"] is None else 1 / t["overhead"]
    return t["ratio"]


def _met_cell(row: dict) -> str:
    cell = {True: "yes", False: "**no**", None: ""}[row.get("met")]
    return cell + (" (beyond floor)" if row.get("beyond_floor") else "")


def _floor_cell(row: dict) -> str:
    """The floor's time and kind, and the ratio (and % of reference) a kernel at the floor would score."""
    if "floor_s" not in row:
        return "- | -"
    at = f"{row['ratio_at_floor']:.2f}x"
    if "pct_of_reference_at_floor" in row:
        at += f", {row['pct_of_reference_at_floor']:.0f}%"
    return f"{row['floor_s'] * 1e3:.3f} {row['floor']} | {at}"


def markdown(report: dict) -> str:
    m, rows = report["meta"], report["cases"]
    cuda = m.get("device") == "cuda"
    if cuda:
        where = (f"{m['gpu']} ({m['gpu_sms']} SMs, {m['gpu_memory_gib']} GiB), CUDA {m['cuda']}; host {m['cpu']}; "
                 "times include the launch and a synchronize per timed block")
    else:
        where = (f"CPU kernels {m['cpu_kernels']}, aten capability {m['aten_cpu_capability']}); {m['cpu']}, "
                 f"{m['cpus']} CPUs, {m['threads']} threads")
    out = [f"## torch_aclnn {'CUDA' if cuda else 'CPU'} benchmarks — {m['host']}, {m['time']}\n",
           f"torch {m['torch']}, torch_aclnn {m['torch_aclnn']} ({where}" + (")" if cuda else "") + "; "
           f"load average {m['load_start']} at start, {m['load_end']} at end; {m['seconds']} s.",
           f"Sizes ({m['size']}): {m['sizes']}.",
           *([] if cuda or "huge_pages" not in m else
             [f"Output memory: {m['huge_pages']} (functional forms: the first write to each fresh page of "
              "the output is a page fault; see benchmarks/README.md)."]),
           f"Each time is the median of {m['rounds']} interleaved rounds of blocked_autorange "
           f"(min_run_time {m['min_run_time_s']} s); for the 1-element rows, a round's time is the fastest of "
           f"{timing.BLOCKS} blocks of {timing.CALLS} calls, ours and aten alternating. ratio = aten time / torch_aclnn time (> 1: torch_aclnn is "
           "faster). GB/s counts each tensor read or written once; ref = a plain aten op with the same "
           "read:write mix moving the same bytes in float32 (copy_ 1R+1W, add out= 2R+1W, addcmul out= 3R+1W, "
           "sum read-only), measured in the same rounds. spread = (slowest - fastest round) / median, the larger of "
           "the two sides: a large spread means a noisy measurement. floor = the least work the case needs, timed "
           "in the same rounds as plain aten ops: traffic (every input read once by sum, the result's bytes "
           "written once by fill_) or, where the case names one, compute (elu_backward: its exps, in cache), "
           "whichever is slower; at floor = the ratio and % of ref a kernel running at the floor would score "
           "(an estimate: a kernel can overlap reads and writes a little better than sum then fill_). "
           "A missed target marked 'beyond floor' asks for more than that in this run."]
    cpus = m.get("cpus") or 1
    # The load before the run (at the end it includes the benchmark's own threads).
    if not cuda and m["load_start"] is not None and m["load_start"] > 0.5 * cpus:
        out.append(f"\n**Note:** the machine was busy (load average above {0.5 * cpus:g} on {cpus} CPUs at the start); "
                   "timings are noisy (multi-threaded kernels wait for preempted threads; `--threads 1` is steadier).")
    if m["size"] not in TARGET_SIZES:
        out.append(f"\n**Note:** {m['size']} run — smaller tensors than the suite's sizes; "
                   "not the numbers the targets refer to.")
    thr = [r for r in rows if r["kind"] == "throughput" and r["status"] == "ok"]
    if thr:
        out += ["\n### Throughput\n",
                "| operator | case | dtype | form | aten ms | ours ms | ratio | spread | ours GB/s | aten GB/s | mix "
                "| ref GB/s | ours % ref | floor ms | at floor | target | met |",
                "|---|---|---|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|---|---|"]
        for r in thr:
            ref = f"{r['reference_gbps']:.1f}" if "reference_gbps" in r else "-"
            pct = f"{r['pct_of_reference']:.0f}%" if "pct_of_reference" in r else "-"
            out.append(f"| {r['op']} | {r['case']} | {r['dtype']} | {r['form']} | {r['aten_s'] * 1e3:.3f} "
                       f"| {r['ours_s'] * 1e3:.3f} | {r['ratio']:.2f} | {r['spread_pct']:.0f}% | {r['ours_gbps']:.1f} | {r['aten_gbps']:.1f} "
                       f"| {r['mix']} | {ref} | {pct} | {_floor_cell(r)} | {_target_cell(r)} | {_met_cell(r)} |")
    ovh = [r for r in rows if r["kind"] == "overhead" and r["status"] == "ok"]
    if ovh:
        out += ["\n### Per-call overhead (1-element tensors; ratio = aten time / torch_aclnn time, as above)\n",
                "| operator | case | aten call | aten µs | ours µs | ratio | spread | target | met |",
                "|---|---|---|--:|--:|--:|--:|---|---|"]
        for r in ovh:
            out.append(f"| {r['op']} | {r['case']} | {r['aten']} | {r['aten_s'] * 1e6:.1f} | {r['ours_s'] * 1e6:.1f} "
                       f"| {r['ratio']:.2f} | {r['spread_pct']:.0f}% | {_target_cell(r)} | {_met_cell(r)} |")
    judged = [r for r in rows if r["status"] == "ok" and r.get("met") is not None]
    missed = [r for r in judged if not r["met"]]
    slower = [r for r in rows if r["status"] == "ok" and r["ratio"] < 1.0]
    beyond = [r for r in missed if r.get("beyond_floor")]
    out.append(f"\n**Targets:** {len(judged) - len(missed)} of {len(judged)} measured cases meet their target"
               + (f"; {len(beyond)} of the {len(missed)} missed ask for more than a kernel at the case's floor "
                  "would reach in this run" if missed else "")
               + f". torch_aclnn slower than aten (ratio < 1) in {len(slower)} of "
               f"{sum(r['status'] == 'ok' for r in rows)} cases.")
    notes = [r for r in rows if r["status"] == "ok" and r["note"]]
    if notes:
        out.append("\n### Result mismatches (sanity check against aten)\n")
        out += [f"- {r['op']} {r['case']} {r['dtype']} {r['form']}: {r['note']}" for r in notes]
    skipped = [r for r in rows if r["status"] != "ok"]
    if skipped:
        out.append("\n### Not measured\n")
        seen = set()
        for r in skipped:
            key = (r["op"], r["status"]) if r["status"] == "skipped" else id(r)
            if r["status"] == "skipped" and key in seen:
                continue
            seen.add(key)
            what = r["op"] if r["status"] == "skipped" else f"{r['op']} {r['case']} {r['dtype']} {r['form']}"
            out.append(f"- {what}: {r['status']} — {r['note']}")
    return "\n".join(out) + "\n"


def chart(report: dict, path: Path) -> Optional[str]:
    """A PNG bar chart of the ratio aten time / torch_aclnn time per case (the
    tables' direction), each bar's target as a tick in the same direction;
    returns a note instead when it cannot."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no chart (pip install matplotlib)"
    rows = [r for r in report["cases"] if r["status"] == "ok"]
    if not rows:
        return "nothing measured: no chart"
    labels = [f"{r['op']} · {r['case']} · {r['dtype']} · {r['form']}" for r in rows]
    values = [r["ratio"] for r in rows]
    colors = ["#999999" if r.get("met") is None else ("#2e8b57" if r["met"] else "#c0392b") for r in rows]
    fig, ax = plt.subplots(figsize=(11, 0.28 * len(rows) + 1.6))
    y = range(len(rows))
    ax.barh(list(y), values, color=colors)
    ax.set_yticks(list(y))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    for i, v in zip(y, values):
        ax.text(v, i, f" {v:.2f}", va="center", fontsize=6)
    targets = [(i, _ratio_target(r)) for i, r in zip(y, rows)]
    targets = [(i, t) for i, t in targets if t is not None]
    if targets:
        ax.scatter([t for _, t in targets], [i for i, _ in targets], marker="|", s=60, color="black", zorder=3)
    m = report["meta"]
    ax.set_xlabel("ratio = aten time / torch_aclnn time (log scale; > 1: torch_aclnn faster; |: the target ratio; "
                  "green: target met, red: missed)")
    ax.set_title(f"torch_aclnn vs aten — {m['host']} {m['time']} ({m['size']}, {m['threads']} threads)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


def _default_out_dir() -> Path:
    """Where the files go without --out: the current directory (never the source tree)."""
    return Path.cwd()


def write(report: dict, out_dir: Path) -> dict:
    """Writes <host>-<date>[-size].{md,json,png}; returns {kind: path or note}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    m = report["meta"]
    stem = (f"{m['host']}-{m['date']}" + ("-cuda" if m.get("device") == "cuda" else "")
            + ("" if m["size"] in TARGET_SIZES else f"-{m['size']}"))
    md = out_dir / f"{stem}.md"
    md.write_text(markdown(report))
    js = out_dir / f"{stem}.json"
    js.write_text(json.dumps(report, indent=1) + "\n")
    png = out_dir / f"{stem}.png"
    note = chart(report, png)
    return {"markdown": str(md), "json": str(js), "chart": note or str(png)}


# ---------------------------------------------------------------------------
# CLI

def add_arguments(p: argparse.ArgumentParser) -> None:
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="~8x smaller tensors and fewer repetitions (< 1 minute; with --device cuda: the in-cache "
                           "sizes instead of the ones past the L2)")
    size.add_argument("--tiny", action="store_true",
                      help="smoke run: tiny tensors, one round (checks the harness; the numbers mean nothing)")
    p.add_argument("--op", action="append", metavar="NAME", choices=OPERATORS,
                   help="only this torch_aclnn operator (repeatable): " + ", ".join(OPERATORS))
    p.add_argument("--dtype", action="append", choices=sorted(DTYPES), help="only this dtype (repeatable)")
    p.add_argument("--kind", choices=("throughput", "overhead"),
                   help="only the large-tensor cases, or only the 1-element (per-call cost) cases")
    p.add_argument("--out", metavar="DIR", type=Path,
                   help="where the .md/.json/.png go (default: the current directory)")
    p.add_argument("--rounds", type=int, help="interleaved rounds per case (default: 5, quick 3)")
    p.add_argument("--min-run-time", type=float, help="blocked_autorange min_run_time per timer and round")
    p.add_argument("--threads", type=int, help="torch threads (default: torch.get_num_threads())")
    p.add_argument("--model", choices=("unet3d",),
                   help="time a full training step of a 3-D model with torch alone, patch() and convert(), eager "
                        "and compiled, and check determinism (torch_aclnn/harness/bench_model.py) instead of the operators")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where the tensors live (default cpu; cuda times against aten CUDA with the CUDA targets of bench_cases.targets)")


def select(ops=None, dtypes=None, kind=None) -> list:
    return [c for c in bench_cases.all_cases()
            if (not ops or c.op in ops) and (not dtypes or _short(c.dtype) in dtypes) and (not kind or c.kind == kind)]


def main(args: argparse.Namespace) -> int:
    size = "quick" if args.quick else "tiny" if args.tiny else "full"
    if args.model:
        return bench_model.main(args.device, size, args.threads, args.out or _default_out_dir())
    cases = select(args.op, args.dtype, args.kind)
    if not cases:
        print("no benchmark case matches the given --op/--dtype/--kind", file=sys.stderr)
        return 2
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: torch sees no CUDA device", file=sys.stderr)
        return 2
    if device == "cuda" and size == "full":
        size = "large"
    missing = sorted({c.op for c in cases if _missing_kernel(c, device) and c.overload == "default"})
    for op in missing:
        print(f"note: skipping {op}: no {device.upper()} kernel for torch_aclnn::{op} in this build", file=sys.stderr)
    try:
        report = run(cases, size, args.rounds, args.min_run_time, args.threads, device)
        text = markdown(report)
        files = write(report, args.out or _default_out_dir())
    except Exception:
        traceback.print_exc()
        return 1
    print(text)
    for kind, where in files.items():
        print(f"{kind}: {where}")
    return 0
