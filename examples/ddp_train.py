#!/usr/bin/env python
"""The train_unet3d.py model under DistributedDataParallel (gloo backend).

Two processes on one machine:

    torchrun --nproc-per-node 2 examples/ddp_train.py
    torchrun --nproc-per-node 2 examples/ddp_train.py --patch --steps 50
    torchrun --nproc-per-node 2 examples/ddp_train.py --compile --plot ddp_loss.png

Every process builds the same global batch (synthetic, seeded by the step)
and trains on its own slice of it; DDP averages the gradients, which then
equal the gradients of one process on the whole batch. At step 0, rank 0
checks exactly that against a single-process run of the same weights and
prints the largest difference. ``--dump-grads FILE`` also saves rank 0's
step-0 gradients and the initial weights (tests/test_examples.py uses it).

Without a GLOO_SOCKET_IFNAME, a run whose MASTER_ADDR is 127.0.0.1 or
localhost (torchrun's default) keeps gloo on the loopback interface.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch_aclnn  # noqa: E402
from train_unet3d import (UNet3d, describe, gradients, layers_namespace, loss_module, make_batch,  # noqa: E402
                          max_grad_diff, report, write_plot)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=30, help="training steps (default 30)")
    p.add_argument("--batch", type=int, default=4, help="global batch, split evenly over the processes (default 4)")
    p.add_argument("--size", type=int, default=16, help="volume edge, a multiple of 4 (default 16)")
    p.add_argument("--channels", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--patch", action="store_true", help="plain torch.nn model routed by torch_aclnn.patch()")
    p.add_argument("--dump-grads", metavar="FILE", help="rank 0 saves the initial weights and step-0 gradients")
    p.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    p.add_argument("--compile", action="store_true", help="torch.compile(DDP model, fullgraph=False)")
    p.add_argument("--backend", default="inductor", help="torch.compile backend (default inductor)")
    p.add_argument("--plot", default="", metavar="PNG", help="rank 0 writes the loss curve there (needs matplotlib)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if os.environ.get("MASTER_ADDR") in ("127.0.0.1", "localhost") and "GLOO_SOCKET_IFNAME" not in os.environ \
            and os.path.exists("/sys/class/net/lo"):
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        if rank == 0:
            print(f"--batch {args.batch} does not split evenly over {world} processes", file=sys.stderr)
        dist.destroy_process_group()
        return 2
    local = args.batch // world
    mine = slice(rank * local, (rank + 1) * local)

    torch.manual_seed(args.seed)
    use_aclnn_modules = not args.patch
    model = UNet3d(layers_namespace(use_aclnn_modules), args.channels)
    ddp = DDP(model)  # broadcasts rank 0's weights
    # (DDP's gradient hooks split a compiled graph at bucket boundaries, so no fullgraph)
    run = torch.compile(ddp, backend=args.backend) if args.compile else ddp
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    loss_fn = loss_module(use_aclnn_modules)
    optim = torch.optim.Adam(ddp.parameters(), lr=args.lr)

    if args.patch:
        torch_aclnn.patch()
    how = describe(args)
    if rank == 0:
        print(f"DDP (gloo) x {world} processes, UNet3d on {how}; global batch {args.batch} "
              f"({local} per process), {args.steps} steps")
    losses, start = [], time.monotonic()
    try:
        for step in range(args.steps):
            noisy, clean = make_batch(step, args.batch, args.size, args.seed)  # the same on every rank
            optim.zero_grad(set_to_none=True)
            loss = loss_fn(run(noisy[mine]), clean[mine])
            loss.backward()  # DDP all-reduces (averages) the gradients here
            if step == 0 and rank == 0:
                grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
                single = UNet3d(layers_namespace(use_aclnn_modules), args.channels)
                single.load_state_dict(initial)
                _, ref = gradients(single, loss_module(use_aclnn_modules), (noisy, clean))
                print(f"step 0: DDP gradients vs one process on the whole batch: "
                      f"max |difference| = {max_grad_diff(grads, ref):.3e}")
                if args.dump_grads:
                    torch.save({"initial": initial, "grads": grads, "world": world,
                                "args": vars(args)}, args.dump_grads)
            optim.step()
            global_loss = loss.detach().clone()
            dist.all_reduce(global_loss)
            losses.append(global_loss.item() / world)
            if rank == 0:
                report(step, args.steps, losses[-1], start, prefix=f"rank 0/{world}: ")
        if rank == 0:
            print(f"{args.steps} steps in {time.monotonic() - start:.1f}s; final loss {losses[-1]:.4f}")
            if args.patch:
                print(f"routed to torch_aclnn (rank 0): {torch_aclnn.patch_stats().routed}")
            if args.plot:
                write_plot(losses, args.plot, f"UNet3d, DDP x {world}, on {how}")
    finally:
        if args.patch:
            torch_aclnn.unpatch()
        # Gloo's worker threads free each finished collective (and the Python
        # tensors it holds) a moment after wait() returns. DDP keeps the process
        # group alive through reference cycles, so without this the group would
        # outlive main() and a worker could free a tensor while the interpreter
        # is finalising, which aborts the process. Dropping every holder first
        # lets destroy_process_group() join the workers while Python is alive.
        ddp = run = model = optim = None  # noqa: F841
        gc.collect()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
