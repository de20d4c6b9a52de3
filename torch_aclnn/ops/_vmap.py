"""How torch.vmap (and the torch.func transforms built on it) batches the
operators: the rules' registration and the pieces they are made of."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import torch


def register_vmap(qualname: str, rule: Callable) -> None:
    """``torch.library.register_vmap(qualname, rule)``: how torch.vmap (and
    the torch.func transforms built on it) batches the operator. The
    dispatcher leaves out trailing arguments equal to their defaults: the
    rule's signature gives them the schema's defaults."""
    torch.library.register_vmap(qualname, rule)


def batch_first(t: torch.Tensor, bdim: Optional[int], batch_size: int) -> torch.Tensor:
    """A vmap rule's argument with its batch dimension first; an unbatched one
    (``bdim`` None) expanded to the batch (stride 0, no copy)."""
    return t.movedim(bdim, 0) if bdim is not None else t.expand(batch_size, *t.shape)


def fold_batch(tensors: Sequence[torch.Tensor], in_dims: Sequence[Optional[int]], batch_size: int,
               ranks: Sequence[int] = (5, 6)) -> Optional[tuple]:
    """A vmap rule's tensors with the batch dimension folded into N, and the
    (batch, N) sizes to unflatten the result with; None where their logical
    ranks differ or are not ``ranks`` (left to the unbatched calls, whose
    error it is). For operators whose planes (n, c) are independent."""
    full = [batch_first(t, d, batch_size) for t, d in zip(tensors, in_dims)]
    if any(t.dim() != full[0].dim() for t in full) or full[0].dim() not in ranks:
        return None
    return [t.flatten(0, 1) for t in full], full[0].shape[:2]


def plane_vmap(op: Callable, tensors: int, shape_only: Sequence[int] = ()) -> Callable:
    """The vmap rule of an operator whose first ``tensors`` arguments hold
    independent (n, c) planes (the rest plain, no schema defaults): the batch
    folded into N and one call, its results unflattened; else
    :func:`vmap_loop`. An unbatched argument at a position in ``shape_only``
    lends only its shape and dtype: the folded call gets a stride-0 stand-in,
    not a copy per batch element."""

    def rule(info, in_dims, *args):
        planes = [a.new_zeros(()).expand(a.shape) if i in shape_only and in_dims[i] is None else a
                  for i, a in enumerate(args[:tensors])]
        folded = fold_batch(planes, in_dims[:tensors], info.batch_size)
        if folded is None:
            return vmap_loop(op, info.batch_size, in_dims, *args)
        parts, batch_n = folded
        out = op(*parts, *args[tensors:])
        if isinstance(out, tuple):  # several results
            return tuple(r.unflatten(0, batch_n) for r in out), (0,) * len(out)
        return out.unflatten(0, batch_n), 0

    return rule


def vmap_loop(op: Callable, batch_size: int, in_dims: tuple, *args: Any) -> tuple:
    """The exact vmap rule of any operator: ``op`` once per batch element,
    the results stacked along dimension 0 (so every error is the unbatched
    call's)."""
    # None for the defaults the rule filled in; a list argument has a list of Nones.
    in_dims = (*in_dims, *(None,) * (len(args) - len(in_dims)))
    if batch_size == 0:  # nothing to compute: the result's shape and dtype come from the Meta kernel
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        meta = [(a.new_empty(a.shape[:d] + a.shape[d + 1:], device="meta") if isinstance(d, int) else
                 a.to("meta") if isinstance(a, torch.Tensor) else a) for a, d in zip(args, in_dims)]
        like = op(*meta)
        if isinstance(like, tuple):  # several results
            return tuple(torch.empty((0, *r.shape), dtype=r.dtype, device=device) for r in like), (0,) * len(like)
        return torch.empty((0, *like.shape), dtype=like.dtype, device=device), 0
    results = [op(*(a.select(d, b) if isinstance(d, int) else a for a, d in zip(args, in_dims)))
               for b in range(batch_size)]
    if isinstance(results[0], tuple):
        return tuple(torch.stack(r) for r in zip(*results)), (0,) * len(results[0])
    return torch.stack(results), 0
