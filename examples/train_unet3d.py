#!/usr/bin/env python
"""Train a small 3-D encoder-decoder on torch_aclnn's kernels.

The model denoises synthetic volumes (a few random Gaussian blobs plus
noise, generated here: no downloads). It uses every torch_aclnn operator
family: ELU / SELU / CELU activations, MaxPool3d(return_indices=True) with
MaxUnpool3d, nearest and nearest-exact Upsample, and SmoothL1Loss.

    python examples/train_unet3d.py                  # torch_aclnn.nn modules
    python examples/train_unet3d.py --patch          # plain torch.nn model + torch_aclnn.patch()
    python examples/train_unet3d.py --patch function     # ... + torch_aclnn.patch(level="function")
    python examples/train_unet3d.py --compile        # torch.compile(fullgraph=True) of the model
    python examples/train_unet3d.py --steps 50 --plot ''   # shorter, no PNG

At step 0 the gradients are compared with the same model (same weights, same
batch) computed by plain PyTorch, and the largest difference is printed. At
the end, training steps are timed with torch_aclnn and with plain PyTorch
(same weights, batches and compile setting, after warm-up steps) in
interleaved rounds, one step of each per round in alternating order; the
medians, their ratio and the spread of the per-round ratios (how noisy the
machine is) are printed: a ratio inside that spread around 1.00 is no
difference. The loss curve is written as a PNG (needs
matplotlib; skipped with a note without it). Runs on CPU in well under two
minutes with the defaults.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import math
import statistics
import sys
import time
from typing import Optional

import torch
import torch.nn as tnn

import torch_aclnn
from torch_aclnn.harness.bench_model import UNet3d  # the model `python -m torch_aclnn bench --model unet3d` times


def layers_namespace(use_aclnn: bool):
    """torch_aclnn.nn, or torch.nn."""
    return torch_aclnn.nn if use_aclnn else tnn


def loss_module(use_aclnn: bool) -> tnn.Module:
    return (torch_aclnn.nn if use_aclnn else tnn).SmoothL1Loss(beta=0.1)


def make_batch(step: int, batch: int, size: int, seed: int = 0):
    """(noisy, clean) volumes of shape (batch, 1, size, size, size); the same
    (step, seed) always gives the same batch, so processes can agree on it."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    axis = torch.linspace(-1, 1, size)
    zz, yy, xx = torch.meshgrid(axis, axis, axis, indexing="ij")
    grid = torch.stack([zz, yy, xx])                                  # (3, S, S, S)
    blobs = 3
    centers = torch.rand(batch, blobs, 3, 1, 1, 1, generator=g) * 1.4 - 0.7
    widths = torch.rand(batch, blobs, 1, 1, 1, generator=g) * 0.25 + 0.1
    amps = torch.rand(batch, blobs, 1, 1, 1, generator=g) * 1.5 + 0.5
    d2 = ((grid - centers) ** 2).sum(dim=2)                            # (batch, blobs, S, S, S)
    clean = (amps * torch.exp(-d2 / (2 * widths ** 2))).sum(dim=1, keepdim=True)
    noisy = clean + 0.3 * torch.randn(clean.shape, generator=g)
    return noisy, clean


def gradients(model: tnn.Module, loss_fn, batch) -> tuple[float, dict]:
    model.zero_grad(set_to_none=True)
    noisy, clean = batch
    loss = loss_fn(model(noisy), clean)
    loss.backward()
    return loss.item(), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def max_grad_diff(a: dict, b: dict) -> float:
    return max((a[n] - b[n]).abs().max().item() for n in a)


def describe(args) -> str:
    """How the model runs, for the printed lines and the plot title."""
    patch = "patch()" if args.patch == "default" else f"patch(level={args.patch!r})"
    return (f"plain torch.nn + torch_aclnn.{patch}" if args.patch else "torch_aclnn.nn modules") + \
        (f", torch.compile({args.backend})" if args.compile else "")


def report(step: int, steps: int, loss: float, start: float, prefix: str = "") -> None:
    """A line every tenth of the run (and at its last step)."""
    if (step + 1) % max(1, steps // 10) == 0 or step + 1 == steps:
        print(f"{prefix}step {step + 1}/{steps}: loss {loss:.4f} ({time.monotonic() - start:.1f}s)", flush=True)


def _level(patch: str) -> Optional[str]:
    """The level to pass to torch_aclnn.patch() for a --patch value."""
    return None if patch == "default" else patch


def step_times(sides, batches, warmup: int = 2) -> list:
    """Seconds of each training step (forward, backward, SGD update) of each
    side, timed in interleaved rounds: one step of every side per round, in
    alternating order (so that a slow patch of the machine hits both), each
    batch of ``batches`` a round, after ``warmup`` steps per side (compilation
    happens there). A side is (model, loss_fn, compile backend or None,
    patch level for torch_aclnn.patched() or None: no patch; "default": no
    level given). Returns one list of times per side."""
    runs = []
    for model, loss_fn, backend, patch in sides:
        run = torch.compile(model, fullgraph=True, backend=backend) if backend else model
        optim = torch.optim.SGD(model.parameters(), lr=1e-4)

        def context(patch=patch):
            return torch_aclnn.patched(level=_level(patch)) if patch else contextlib.nullcontext()

        runs.append((run, optim, loss_fn, context))

    def step(side, batch) -> float:
        run, optim, loss_fn, context = runs[side]
        noisy, clean = batch
        with context():
            t0 = time.perf_counter()
            optim.zero_grad(set_to_none=True)
            loss_fn(run(noisy), clean).backward()
            optim.step()
            return time.perf_counter() - t0

    for side in range(len(runs)):
        for _ in range(warmup):
            step(side, batches[0])
    times = [[] for _ in runs]
    for i, batch in enumerate(batches):
        order = range(len(runs)) if i % 2 == 0 else reversed(range(len(runs)))
        for side in order:
            times[side].append(step(side, batch))
    return times


def timing_line(ours: list, theirs: list) -> str:
    """The medians, their ratio, and how much the per-round ratio varies."""
    ratios = sorted(t / o for o, t in zip(ours, theirs))
    n = len(ratios)
    q1, _, q3 = statistics.quantiles(ratios, n=4) if n >= 2 else ratios * 3
    mo, mt = statistics.median(ours), statistics.median(theirs)
    return (f"step time (median of {n}): torch_aclnn {mo * 1e3:.1f} ms, plain PyTorch {mt * 1e3:.1f} ms "
            f"({mt / mo:.2f}x; the ratio of each of the {n} interleaved rounds: {ratios[0]:.2f}-{ratios[-1]:.2f}, "
            f"middle half {q1:.2f}-{q3:.2f}, the machine's noise)")


def write_plot(losses, path: str, title: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"note: matplotlib is not installed, so the loss curve was not written to {path} "
              "(pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(range(len(losses)), losses, lw=1.2)
    ax.set_xlabel("step")
    ax.set_ylabel("SmoothL1 loss")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"loss curve written to {path}")


def parse_args(argv=None, description=__doc__):
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=100, help="training steps (default 100)")
    p.add_argument("--batch", type=int, default=4, help="volumes per step (default 4)")
    p.add_argument("--size", type=int, default=16, help="volume edge, a multiple of 4 (default 16)")
    p.add_argument("--channels", type=int, default=8, help="width of the first level (default 8)")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate (default 3e-3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--patch", nargs="?", const="default", choices=("default", "function", "dispatcher"),
                   default=None, help="build the model from plain torch.nn and route it with torch_aclnn.patch(), "
                                      "at its default level or the one given")
    p.add_argument("--compile", action="store_true", help="torch.compile(model, fullgraph=True)")
    p.add_argument("--backend", default="inductor", help="torch.compile backend (default inductor)")
    p.add_argument("--plot", default="unet3d_loss.png", metavar="PNG",
                   help="where to write the loss curve (default unet3d_loss.png; '' for none)")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (default: torch's choice)")
    p.add_argument("--timing-steps", type=int, default=20,
                   help="interleaved rounds of one step with and one without torch_aclnn, timed at the end "
                        "(default 20; 0 skips the timing)")
    args = p.parse_args(argv)
    if args.size % 4:
        p.error(f"--size must be a multiple of 4 (two 2x poolings), got {args.size}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    use_aclnn_modules = not args.patch
    model = UNet3d(layers_namespace(use_aclnn_modules), args.channels)
    loss_fn = loss_module(use_aclnn_modules)

    # The reference: the same weights in a plain torch.nn model.
    reference = UNet3d(tnn, args.channels)
    reference.load_state_dict(model.state_dict())
    batch0 = make_batch(0, args.batch, args.size, args.seed)
    ref_loss, ref_grads = gradients(reference, tnn.SmoothL1Loss(beta=0.1), batch0)

    if args.patch:
        torch_aclnn.reset_patch_stats()
        torch_aclnn.patch(level=_level(args.patch))
    try:
        run = torch.compile(model, fullgraph=True, backend=args.backend) if args.compile else model
        optim = torch.optim.Adam(model.parameters(), lr=args.lr)
        how = describe(args)
        print(f"UNet3d ({sum(p.numel() for p in model.parameters())} parameters) on {how}; "
              f"{args.steps} steps of {args.batch} x 1 x {args.size}^3")
        losses = []
        start = time.monotonic()
        for step in range(args.steps):
            noisy, clean = batch0 if step == 0 else make_batch(step, args.batch, args.size, args.seed)
            optim.zero_grad(set_to_none=True)
            loss = loss_fn(run(noisy), clean)
            loss.backward()
            if step == 0:
                got = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
                diff = max_grad_diff(got, ref_grads)
                print(f"step 0 gradient check vs plain PyTorch: max |grad difference| = {diff:.3e} "
                      f"(loss {loss.item():.6f} vs {ref_loss:.6f})")
            optim.step()
            losses.append(loss.item())
            report(step, args.steps, losses[-1], start)
        elapsed = time.monotonic() - start
    finally:
        if args.patch:
            torch_aclnn.unpatch()
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} in {elapsed:.1f}s ({args.steps / elapsed:.1f} steps/s)")
    if args.patch:
        print(f"routed to torch_aclnn: {torch_aclnn.patch_stats().routed}")
    if args.timing_steps > 0:
        batches = [make_batch(10_000 + i, args.batch, args.size, args.seed) for i in range(args.timing_steps)]
        backend = args.backend if args.compile else None
        ours, theirs = step_times([(copy.deepcopy(model), loss_fn, backend, args.patch),
                                   (copy.deepcopy(reference), tnn.SmoothL1Loss(beta=0.1), backend, None)], batches)
        print(timing_line(ours, theirs))
    if args.plot:
        write_plot(losses, args.plot, f"UNet3d on {how}")
    bad = not all(math.isfinite(v) for v in losses)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
