"""``python -m torch_aclnn bench --model unet3d``: a full 3-D training step.

The model (:class:`UNet3d`) is a two-level encoder-decoder that uses every
operator family: ELU / SELU / CELU, ``MaxPool3d(return_indices=True)`` with
``MaxUnpool3d``, nearest and nearest-exact x2 ``Upsample``, and a
``SmoothL1Loss``. A step is forward, loss, backward and an SGD update.

Modes, each on its own copy of the same initial weights and batch:

    torch                        plain torch.nn, eager
    patch(dispatcher)            the same model under torch_aclnn.patched(level="dispatcher"):
                                 aten's kernels replaced, no TorchFunctionMode (patch()'s
                                 default level where torch >= 2.9)
    patch(function)              under torch_aclnn.patched(level="function"): a TorchFunctionMode
    convert()                    torch_aclnn.nn.convert() of the model (no TorchFunctionMode)
    torch, compile               torch.compile(model, fullgraph=True)
    patch(<level>), compile      the same, compiled and run under torch_aclnn.patched(level=...)

The modes alternate within each round, their order rotating from round to
round (so drift in clock or load, and the state one mode leaves to the next,
hit them alike); a round times ``steps`` steps of each; the figure is the median over
rounds of the mean step time, and the ratio is torch's time over the mode's
(> 1: faster than torch). Then, under ``torch.use_deterministic_algorithms(True)``:
whether torch alone can run a step, and whether two patched runs of a few
steps end with bitwise equal weights. Convolutions dominate such a model, so
the ratios measure what routing costs or saves at the model level, not the
operators' own speed (``bench`` without ``--model`` does that).
"""
from __future__ import annotations

import contextlib
import copy
import datetime
import json
import socket
import statistics
import time
from pathlib import Path
from typing import Callable, Optional

import torch
import torch.nn as tnn

from . import host
from .timing import rotated

__all__ = ["UNet3d", "run", "markdown", "main"]


class UNet3d(tnn.Module):
    """Two-level 3-D encoder-decoder. ``layers`` is the module namespace
    that provides ELU, SELU, CELU, Upsample and MaxUnpool3d: ``torch.nn``
    or ``torch_aclnn.nn`` (the state_dicts of the two are interchangeable)."""

    def __init__(self, layers=tnn, channels: int = 8):
        super().__init__()
        c = channels
        self.enc1 = tnn.Sequential(tnn.Conv3d(1, c, 3, padding=1), layers.ELU())
        self.enc2 = tnn.Sequential(tnn.Conv3d(c, 2 * c, 3, padding=1), layers.ELU(alpha=0.5))
        self.pool = tnn.MaxPool3d(2, return_indices=True)
        self.mid = tnn.Sequential(tnn.Conv3d(2 * c, 2 * c, 3, padding=1), layers.SELU())
        self.unpool = layers.MaxUnpool3d(2)
        self.up_nearest = layers.Upsample(scale_factor=2, mode="nearest")
        self.up_exact = layers.Upsample(scale_factor=2, mode="nearest-exact")
        self.dec2 = tnn.Sequential(tnn.Conv3d(4 * c, c, 3, padding=1), layers.CELU(alpha=1.5))
        self.dec1 = tnn.Sequential(tnn.Conv3d(2 * c, c, 3, padding=1), layers.ELU(), tnn.Conv3d(c, 1, 1))

    def forward(self, x):
        e1 = self.enc1(x)                       # (N, c, D, H, W)
        p1, i1 = self.pool(e1)                  # (N, c, D/2, ...)
        e2 = self.enc2(p1)                      # (N, 2c, D/2, ...)
        p2, i2 = self.pool(e2)                  # (N, 2c, D/4, ...)
        m = self.mid(p2)
        u2 = torch.cat([self.unpool(m, i2), self.up_nearest(m)], dim=1)       # (N, 4c, D/2, ...)
        d2 = self.dec2(u2)                                                     # (N, c, D/2, ...)
        u1 = torch.cat([self.unpool(d2, i1), self.up_exact(d2)], dim=1)       # (N, 2c, D, ...)
        return x + self.dec1(u1)                # predict the correction to the noisy input


# (batch, base channels, volume edge) per device and size level. The first
# CPU size is host-bound: its kernels take microseconds, so the step time is
# the per-call cost on the host (Python, dispatch, autograd), as in a GPU step
# whose kernels are queued faster than the host issues them.
SIZES = {
    ("cpu", "full"): [(1, 2, 8), (2, 8, 16), (2, 16, 32)],
    ("cuda", "full"): [(2, 16, 64), (2, 32, 96)],
    ("cpu", "quick"): [(2, 8, 16)],
    ("cuda", "quick"): [(2, 16, 64)],
    ("cpu", "tiny"): [(1, 2, 8)],
    ("cuda", "tiny"): [(1, 2, 8)],
}
# rounds, steps timed per mode and round, warm-up steps per mode (compilation happens there)
SCHEDULE = {"full": (20, 5, 3), "quick": (3, 3, 2), "tiny": (1, 1, 1)}
MODES = ("torch", "patch(dispatcher)", "patch(function)", "convert()", "torch, compile",
         "patch(dispatcher), compile", "patch(function), compile")


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _stepper(model: tnn.Module, batch, compiled: bool, backend: str) -> Callable[[], float]:
    """A function running one training step of ``model``; returns its loss.
    The caller runs it inside the mode's context (:func:`_contexts`)."""
    run = torch.compile(model, fullgraph=True, backend=backend) if compiled else model
    loss_fn = tnn.SmoothL1Loss(beta=0.1)
    optim = torch.optim.SGD(model.parameters(), lr=1e-4)
    noisy, clean = batch

    def step() -> float:
        optim.zero_grad(set_to_none=True)
        loss = loss_fn(run(noisy), clean)
        loss.backward()
        optim.step()
        return loss

    return step


def _modes() -> tuple:
    """MODES, without the dispatcher level where this torch cannot have it (torch < 2.9)."""
    from .._patch import ROUTED_OPERATORS

    return MODES if ROUTED_OPERATORS else tuple(m for m in MODES if "dispatcher" not in m)


def _level(mode: str) -> Optional[str]:
    """The patch level of a mode ("patch(function), compile" -> "function"), None for an unpatched one."""
    return mode[len("patch("):mode.index(")")] if mode.startswith("patch(") else None


def _contexts() -> dict:
    """mode -> the context its steps run in (entered around each block of steps, outside its timing)."""
    import torch_aclnn

    return {mode: (lambda lv=_level(mode): torch_aclnn.patched(level=lv)) if _level(mode) else contextlib.nullcontext
            for mode in _modes()}


def _models(base: UNet3d) -> dict:
    """mode -> (its model, compiled?)"""
    import torch_aclnn

    return {mode: (torch_aclnn.nn.convert(copy.deepcopy(base)) if mode == "convert()" else copy.deepcopy(base),
                   mode.endswith(", compile"))
            for mode in _modes()}


def _batch(batch: int, edge: int, device: str):
    g = torch.Generator().manual_seed(0)
    clean = torch.rand(batch, 1, edge, edge, edge, generator=g)
    noisy = clean + 0.1 * torch.randn(clean.shape, generator=g)
    return noisy.to(device), clean.to(device)


def _time_size(batch: int, channels: int, edge: int, device: str, size: str, backend: str) -> list:
    rounds, steps, warmup = SCHEDULE[size]
    torch.manual_seed(0)
    base = UNet3d(tnn, channels).to(device)
    data = _batch(batch, edge, device)
    steppers = {name: _stepper(m, data, compiled, backend) for name, (m, compiled) in _models(base).items()}
    contexts = _contexts()
    for name, step in steppers.items():
        with contexts[name]():
            for _ in range(warmup):
                step()
    times = {name: [] for name in steppers}
    for r in range(rounds):
        for name in rotated(list(steppers), r):
            step = steppers[name]
            with contexts[name]():  # (entered and left outside the timing, whatever entering a mode costs)
                _sync(device)
                t0 = time.perf_counter()
                for _ in range(steps):
                    step()
                _sync(device)
                times[name].append((time.perf_counter() - t0) / steps)
    torch_ms = statistics.median(times["torch"]) * 1e3
    rows = []
    for name, ts in times.items():
        ms = statistics.median(ts) * 1e3
        rows.append({"batch": batch, "channels": channels, "edge": edge, "mode": name, "ms_per_step": round(ms, 3),
                     "ratio_vs_torch": round(torch_ms / ms, 3), "rounds_ms": [round(t * 1e3, 3) for t in ts]})
    return rows


def _determinism(batch: int, channels: int, edge: int, device: str, steps: int = 3) -> dict:
    """Under use_deterministic_algorithms(True): can torch alone run a step,
    and do two patched runs end bitwise equal?"""
    import torch_aclnn

    contexts = _contexts()

    def train(mode: str):
        torch.manual_seed(1)
        model = UNet3d(tnn, channels).to(device)
        step = _stepper(model, _batch(batch, edge, device), False, "")
        with contexts[mode]():
            for _ in range(steps):
                step()
        return [p.detach().clone() for p in model.parameters()]

    def twice(mode: str) -> str:
        try:
            a, b = train(mode), train(mode)
            return "bitwise equal" if all(torch.equal(x, y) for x, y in zip(a, b)) else "DIFFERENT"
        except RuntimeError as e:
            return "raises: " + str(e).splitlines()[0][:200]

    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        try:
            train("torch")
            torch_alone = "runs"
        except RuntimeError as e:
            torch_alone = "raises: " + str(e).splitlines()[0][:200]
        patched = {mode: twice(mode) for mode in ("patch(dispatcher)", "patch(function)") if mode in contexts}
    finally:
        torch.use_deterministic_algorithms(before)
    routed = {}
    for mode in patched:
        step = _stepper(UNet3d(tnn, channels).to(device), _batch(batch, edge, device), False, "")
        with contexts[mode]() as stats:
            step()
        routed[mode] = stats.routed
    return {"batch": batch, "channels": channels, "edge": edge, "steps": steps, "torch": torch_alone,
            **patched, "routed_per_step": routed}


def run(device: str = "cpu", size: str = "full", threads: Optional[int] = None) -> dict:
    from .. import __version__, default_patch_level

    if threads:
        torch.set_num_threads(threads)
    backend = "aot_eager" if size == "tiny" else "inductor"
    meta = {"host": socket.gethostname(), "date": datetime.date.today().isoformat(),
            "time": datetime.datetime.now().isoformat(timespec="seconds"), "model": "unet3d", "device": device,
            "size": size, "schedule": dict(zip(("rounds", "steps", "warmup"), SCHEDULE[size])),
            "compile_backend": backend, "threads": torch.get_num_threads(), "cpu": host.cpu_model(),
            "torch": torch.__version__, "torch_aclnn": __version__, "patch_default_level": default_patch_level(),
            "load_start": host.load()}
    if device == "cuda":
        meta.update(host.gpu())
    start = time.monotonic()
    rows = [r for b, c, e in SIZES[device, size] for r in _time_size(b, c, e, device, size, backend)]
    b, c, e = SIZES[device, size][0]
    det = _determinism(b, c, e, device)
    meta.update(load_end=host.load(), seconds=round(time.monotonic() - start, 1))
    return {"meta": meta, "steps": rows, "determinism": det}


def markdown(report: dict) -> str:
    m, d = report["meta"], report["determinism"]
    out = [f"# UNet3d training step — {m['host']}, {m['device']}, {m['time']}", "",
           f"torch {m['torch']}, torch_aclnn {m['torch_aclnn']}, {m['threads']} threads, {m['cpu']}"
           + (f", {m['gpu']}" if "gpu" in m else "") + f"; compile backend {m['compile_backend']}; "
           f"{m['schedule']['rounds']} alternating rounds of {m['schedule']['steps']} steps per mode "
           f"(median of the rounds' mean step time); load {m['load_start']} -> {m['load_end']}.", "",
           "ratio = torch's step time / the mode's (> 1: faster than torch).", "",
           "| batch x channels x edge³ | mode | ms / step | ratio vs torch |", "|---|---|---|---|"]
    for r in report["steps"]:
        out.append(f"| {r['batch']} x {r['channels']} x {r['edge']}³ | {r['mode']} | {r['ms_per_step']:.2f} | "
                   f"{r['ratio_vs_torch']:.2f}x |")
    runs = "; ".join(f"two runs with `{mode}`: {d[mode]}" for mode in ("patch(dispatcher)", "patch(function)")
                     if mode in d)
    out += ["", f"`patch()` without a level is `patch({m['patch_default_level']})` here.", "",
            f"Under `torch.use_deterministic_algorithms(True)` ({d['batch']} x {d['channels']} x {d['edge']}³, "
            f"{d['steps']} steps): torch alone {d['torch']}; {runs}. Routed per step: {d['routed_per_step']}.", ""]
    return "\n".join(out)


def main(device: str, size: str, threads: Optional[int], out_dir: Path) -> int:
    if device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: torch sees no CUDA device")
        return 2
    report = run(device, size, threads)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{report['meta']['host']}-{report['meta']['date']}-model-{device}" + ("" if size == "full" else f"-{size}")
    text = markdown(report)
    (out_dir / f"{stem}.md").write_text(text)
    (out_dir / f"{stem}.json").write_text(json.dumps(report, indent=1) + "\n")
    print(text)
    print(f"markdown: {out_dir / (stem + '.md')}\njson: {out_dir / (stem + '.json')}")
    return 0
