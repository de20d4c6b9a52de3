"""What a TorchFunctionMode costs a host-bound training step, and so patch(level="function").

    python benchmarks/mode_cost.py [--rounds 15] [--steps 20] [--threads 1]
                                   [--device cuda --size 2 16 64]

Times one training step of a torch_aclnn/harness/bench_model.py U-Net (by default the
smallest, batch 1, 2 channels, 8³ on the CPU: the kernels take microseconds,
so the step time is the per-call cost on the host) five ways, alternating
within each round:

    torch              the model as it is
    empty mode         inside a TorchFunctionMode whose __torch_function__ only
                       calls the function (the least any mode can do)
    patch(dispatcher)  inside torch_aclnn.patched(level="dispatcher"): aten's
                       kernels replaced, no mode (patch()'s default level)
    patch(function)    inside torch_aclnn.patched(level="function"): a mode
    convert()          torch_aclnn.nn.convert() of the model, no mode

and what one torch call that patch(level="function") does not route costs plain,
inside the empty mode and inside that mode: a tensor attribute (``x.shape``), an
optimizer's gradient read (``p.grad``) and an op (``torch.add``), each timed
100 to a ``with`` block (so entering the mode adds about 1% to a call), the
three alternating block by block. A mode sees every torch call of the step,
the optimizer's per-parameter reads included, so "empty mode" against "torch"
is the part of patch(level="function")'s cost that no work inside torch_aclnn's
handler can remove.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import statistics
import time

import torch
from torch.overrides import TorchFunctionMode

import torch_aclnn
from torch_aclnn.harness import bench_model
from torch_aclnn.harness.timing import fastest_blocks, rotated


class EmptyMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class CountingMode(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--size", type=int, nargs=3, default=(1, 2, 8), metavar=("BATCH", "CHANNELS", "EDGE"))
    a = parser.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    n, c, edge = a.size
    base = bench_model.UNet3d(torch.nn, c).to(a.device)
    batch = bench_model._batch(n, edge, a.device)
    contexts = bench_model._contexts()  # (the model benchmark's; no dispatcher level on torch < 2.9)
    models = {"torch": (copy.deepcopy(base), contexts["torch"]),
              "empty mode": (copy.deepcopy(base), EmptyMode),
              **{mode: (copy.deepcopy(base), contexts[mode]) for mode in ("patch(dispatcher)", "patch(function)")
                 if mode in contexts},
              "convert()": (torch_aclnn.nn.convert(copy.deepcopy(base)), contexts["convert()"])}
    steps = {name: bench_model._stepper(model, batch, False, "") for name, (model, _) in models.items()}
    counter = CountingMode()
    with counter:
        bench_model._stepper(copy.deepcopy(base), batch, False, "")()
    for name, step in steps.items():
        with models[name][1]():
            for _ in range(a.steps):
                step()
    times = {name: [] for name in steps}
    for r in range(a.rounds):
        for name in rotated(list(steps), r):
            step = steps[name]
            with models[name][1]():  # (entered and left outside the timing, whatever entering a mode costs)
                bench_model._sync(a.device)
                t0 = time.perf_counter()
                for _ in range(a.steps):
                    step()
                bench_model._sync(a.device)
                times[name].append((time.perf_counter() - t0) / a.steps)
    ref = statistics.median(times["torch"])
    print(f"step of batch {n}, {c} channels, {edge}^3 on {a.device} ({a.threads} thread(s)), median of {a.rounds} "
          f"rounds of {a.steps} steps; {counter.calls} torch calls per step reach a mode")
    for name, ts in times.items():
        t = statistics.median(ts)
        print(f"  {name:17s} {t * 1e6:8.0f} us/step   torch / this = {ref / t:.2f}x")
    _per_call(a)


def _per_call(a) -> None:
    """One call of a function patch(level="function") does not route, plain /
    inside the empty mode / inside that mode (see the module's docstring)."""
    x = torch.randn(1, device=a.device)
    p = torch.nn.Parameter(torch.randn(1, device=a.device))
    p.grad = torch.zeros_like(p)
    calls = {"x.shape": lambda: x.shape, "p.grad": lambda: p.grad, "torch.add": lambda: torch.add(x, x)}
    modes = {"plain": contextlib.nullcontext, "empty mode": EmptyMode,
             "the function level's mode": bench_model._contexts()["patch(function)"]}

    def hundred(call, mode):
        def run():
            with mode():
                for _ in range(100):
                    call()
        return run
    print("one call, plain / inside the empty mode / inside the function level's mode:")
    for name, call in calls.items():
        fns = {m: hundred(call, mode) for m, mode in modes.items()}
        times = fastest_blocks(fns, a.rounds, a.threads, a.device)
        print(f"  {name}: " + ", ".join(f"{m} {min(v) / 100 * 1e9:.0f} ns" for m, v in times.items()))


if __name__ == "__main__":
    main()
