"""Where a 1-element call's time goes: the entry from Python, the kernel, the
autograd recording and the backward node, torch_aclnn against aten.

    python benchmarks/entry_cost.py [--rounds 9] [--device cuda]

elu on one element, timed two ways into each library: torch_aclnn through
``torch.ops`` and through its direct call (the Python API's entry,
csrc/direct_call.cpp), aten through the same ``torch.ops`` entry and through
``F.elu`` (a generated C binding); each without and with
an input that requires grad (the call is then recorded for backward). Then a
chain of 20 calls, forward and backward (``torch.autograd.grad``), less a chain
of 1: what one recorded call and its backward node cost. Then every
operator's Python API against its torch.ops entry and the torch call a user
makes (bench's 1-element cases). Last, the drop-in
layer on one element with requires_grad: the operator alone, the same call
through the drop-in decision (torch_aclnn/_dropin.py, what patch(),
torch_aclnn.nn.functional and the torch_aclnn.nn modules run), the torch.nn
functional it replaces, and a torch_aclnn.nn module against its torch.nn twin;
and that functional with patch(level="dispatcher")'s routes off and on (the
routes are process-wide, so off and on alternate round by round). What a call
that patch() does not route pays inside a TorchFunctionMode: benchmarks/mode_cost.py.
Per-call times are the fastest of short blocks, the candidates alternating
block by block (torch_aclnn/harness/timing.py's method for its 1-element rows).
"""
from __future__ import annotations

import argparse

import torch
import torch.nn as tnn
import torch.nn.functional as F

import torch_aclnn.nn
from torch_aclnn import _dropin
from torch_aclnn.harness.bench_overhead import overhead_cases
from torch_aclnn.harness.timing import fastest_blocks
from torch_aclnn.ops import elu as _elu


def _chain(op, x, n):
    g = torch.ones_like(x)

    def run():
        y = x
        for _ in range(n):
            y = op(y)
        torch.autograd.grad(y, x, g)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    ours = lambda t: torch.ops.torch_aclnn.elu(t, 1.0, 1.0, 1.0)  # noqa: E731
    direct = _elu._ELU.direct
    aten = lambda t: torch.ops.aten.elu(t, 1.0, 1.0, 1.0)  # noqa: E731
    for grad in (False, True):
        x = torch.randn(1, device=args.device, requires_grad=grad)
        fns = {"torch.ops.torch_aclnn.elu": lambda: ours(x),
               "elu direct call": lambda: direct(x, 1.0, 1.0, 1.0),
               "torch.ops.aten.elu": lambda: aten(x), "F.elu": lambda: F.elu(x)}
        times = fastest_blocks(fns, args.rounds, args.threads, args.device)
        print(f"1 element, {'requires_grad' if grad else 'no grad'}:")
        for name, t in times.items():
            print(f"  {name:28s} {min(t) * 1e6:6.2f} us")
    x = torch.randn(1, device=args.device, requires_grad=True)
    fns = {f"{name} x{n}": _chain(op, x, n) for name, op in (("torch_aclnn", ours), ("aten", aten)) for n in (1, 21)}
    times = {k: min(v) for k, v in fastest_blocks(fns, args.rounds, args.threads, args.device).items()}
    print("a recorded call and its backward node (chain of 21 less chain of 1, per call):")
    for name in ("torch_aclnn", "aten"):
        print(f"  {name:28s} {(times[f'{name} x21'] - times[f'{name} x1']) / 20 * 1e6:6.2f} us")
    _api_costs(args)
    _dropin_costs(args)


def _api_costs(args) -> None:
    """Every operator on one element with requires_grad, three ways: its
    Python API (torch_aclnn.<op>, bench's 1-element case), the same call
    through torch.ops (torch.ops.torch_aclnn.<op>.default) and the torch call
    a user makes for the same result (F's function, else aten's operator)."""
    print("1 element, requires_grad: Python API / torch.ops entry / the torch call (bench's cases):")
    for case in overhead_cases(True):
        with torch.device(args.device):
            setup = case.build("tiny")
        fns = {"api": setup.ours, "entry": setup.entry, "torch": setup.aten}
        t = {k: min(v) * 1e6 for k, v in fastest_blocks(fns, args.rounds, args.threads, args.device).items()}
        print(f"  {case.op:34s} {t['api']:5.2f} / {t['entry']:5.2f} / {t['torch']:5.2f} us ({case.aten_name}): "
              f"API {t['api'] / t['torch']:.2f}x, entry {t['entry'] / t['torch']:.2f}x")


def _calls(args) -> dict:
    """name -> (the operator, (its decision, args, kwargs), the torch.nn functional,
    the torch.nn module, the torch_aclnn.nn module, the modules' inputs), on one element."""
    ops = torch.ops.torch_aclnn
    x = torch.randn(1, 1, 1, 1, 1, device=args.device, requires_grad=True)
    t = torch.randn(1, 1, 1, 1, 1, device=args.device)
    pooled, idx = F.max_pool3d(torch.randn(1, 1, 2, 2, 2, device=args.device), 2, return_indices=True)
    pooled.requires_grad_()
    calls = {
        "elu": (lambda: ops.elu(x, 1.0, 1.0, 1.0), (_dropin.elu, (x,), {}), lambda: F.elu(x),
                tnn.ELU(), torch_aclnn.nn.ELU(), (x,)),
        "interpolate": (lambda: ops.upsample_nearest3d(x, [2, 2, 2], 2.0, 2.0, 2.0),
                        (_dropin.interpolate, (x,), {"scale_factor": 2}), lambda: F.interpolate(x, scale_factor=2),
                        tnn.Upsample(scale_factor=2), torch_aclnn.nn.Upsample(scale_factor=2), (x,)),
        "smooth_l1_loss": (lambda: ops.smooth_l1_loss(x, t, 1, 1.0), (_dropin.smooth_l1_loss, (x, t), {}),
                           lambda: F.smooth_l1_loss(x, t), tnn.SmoothL1Loss(), torch_aclnn.nn.SmoothL1Loss(),
                           (x, t)),
        "max_unpool3d": (lambda: ops.max_unpool3d(pooled, idx, [2, 2, 2], [2, 2, 2], [0, 0, 0]),
                         (_dropin.max_unpool3d, (pooled, idx, 2), {}), lambda: F.max_unpool3d(pooled, idx, 2),
                         tnn.MaxUnpool3d(2), torch_aclnn.nn.MaxUnpool3d(2), (pooled, idx)),
    }
    return calls


def _dropin_costs(args) -> None:
    calls = _calls(args)
    print("drop-in layer, 1 element, requires_grad:")
    for name, (op, (decision, a, kw), torch_fn, torch_module, ours_module, inputs) in calls.items():
        fns = {"operator": op, "decision + operator": lambda d=decision, a=a, kw=kw: _dropin.decide(d, a, kw),
               "torch.nn.functional": torch_fn, "torch.nn module": lambda m=torch_module, i=inputs: m(*i),
               "torch_aclnn.nn module": lambda m=ours_module, i=inputs: m(*i)}
        times = fastest_blocks(fns, args.rounds, args.threads, args.device)
        print(f"  {name}: " + ", ".join(f"{k} {min(v) * 1e6:.2f} us" for k, v in times.items()))
    if not torch_aclnn._patch.ROUTED_OPERATORS:
        print("patch(level='dispatcher'): not available (torch < 2.9)")
        return
    print("torch.nn.functional, 1 element, requires_grad, patch(level='dispatcher')'s routes off / on:")
    for name, (_, _, torch_fn, _, _, _) in calls.items():
        off, on = [], []
        for _ in range(args.rounds):
            off += fastest_blocks({name: torch_fn}, 1, args.threads, args.device)[name]
            with torch_aclnn.patched(level="dispatcher"):
                on += fastest_blocks({name: torch_fn}, 1, args.threads, args.device)[name]
        print(f"  {name}: off {min(off) * 1e6:.2f} us, on {min(on) * 1e6:.2f} us ({min(on) / min(off):.2f}x)")


if __name__ == "__main__":
    main()
