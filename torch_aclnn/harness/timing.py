"""How the benchmarks time their calls: rounds in which every contender runs
once, the order rotating from round to round (so drift in clock or load, and
the state one call leaves to the next, hit them alike)."""
from __future__ import annotations

import time

import torch
from torch.utils.benchmark import Timer


def rotated(names: list, r: int) -> list:
    """The timing order of round r: the names rotated by r."""
    return names[r % len(names):] + names[:r % len(names)]


def interleaved(fns: dict, rounds: int, min_run_time: float, threads: int) -> dict:
    """{name: [median per round]}: each round runs every timer once, the order rotating."""
    timers = {k: Timer("fn()", globals={"fn": f}, num_threads=threads) for k, f in fns.items()}
    names = list(timers)
    out = {k: [] for k in names}
    for r in range(rounds):
        order = rotated(names, r)
        for k in order:
            out[k].append(timers[k].blocked_autorange(min_run_time=min_run_time).median)
    return out


# Overhead (1-element) rows: a round's time per call is the fastest of
# BLOCKS blocks of CALLS calls, the two sides alternating block by block.
# Noise on a shared machine only adds time, and at a few microseconds per call
# a round-long median mixes its bursts in (spreads of 40-130% on a 2-core VM).
BLOCKS, CALLS = 30, 200


def fastest_blocks(fns: dict, rounds: int, threads: int, device: str) -> dict:
    """{name: [per-call seconds per round]}: each round, the fastest of its
    alternating blocks (the order rotating between rounds)."""
    names = list(fns)
    out = {k: [] for k in names}
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for r in range(rounds):
            order = rotated(names, r)
            best = {k: float("inf") for k in names}
            for _ in range(BLOCKS):
                for k in order:
                    fn = fns[k]
                    sync()
                    start = time.perf_counter()
                    for _ in range(CALLS):
                        fn()
                    sync()
                    best[k] = min(best[k], (time.perf_counter() - start) / CALLS)
            for k in names:
                out[k].append(best[k])
    finally:
        torch.set_num_threads(previous)
    return out
