"""NPU glue of the MaxUnpool3d family (docs/spec.md §5).

Forward: torch_npu's aten.max_unpool3d (op-plugin
op_plugin/ops/opapi/MaxUnpool3dKernelNpuOpApi.cpp) calls aclnnMaxUnpool3d, a
scatter (ops-nn index/scatter_elements/docs/aclnnMaxUnpool3d.md). Backward:
aclnnMaxUnpool3dBackward is a GatherElements over the flattened D, H, W axes;
aten has no max_unpool3d_backward, so the glue calls that gather itself:
``grad_output.flatten(-3).gather(-1, indices.flatten(-3))``.

Corrections (where aclnn and the spec differ):
  * Index range (contract row 15, data dependent, so not checked by the Meta
    kernel): checked on the device before any scatter or gather, raising the
    CPU kernel's IndexError (first offending position in logical order).
    aclnn does not check index values.
  * Duplicate indices in the forward: the spec says the element with the
    largest flat input position wins. aclnnMaxUnpool3d is documented as
    deterministic but not which duplicate wins, so when a plane has
    duplicates the glue sends every losing element to a spare slot: it sorts
    each plane's indices (stable), keeps the last of each run of equal
    indices, and scatters into oD*oH*oW + 1 slots (output_size
    [1, 1, oD*oH*oW + 1]), dropping the spare slot afterwards. Without
    duplicates (max_pool3d with stride >= kernel) the call is the plain one.
Device limits (torch_aclnn/npu/limits.py): bfloat16 (not in aclnnMaxUnpool3d's
dtype list) goes to the CPU kernel. Empty input returns without a device call.
"""
from __future__ import annotations

import torch

from ..ops._errors import invalid
from . import _glue, limits

_ops = torch.ops.torch_aclnn
_aten = torch.ops.aten

ATEN_FORWARD = _aten.max_unpool3d.default
ATEN_GATHER = _aten.gather.default


def _volume(output_size) -> int:
    return int(output_size[0]) * int(output_size[1]) * int(output_size[2])


def check_indices(op: str, indices: torch.Tensor, output_size) -> None:
    """Row 15: every index in [0, oD*oH*oW), else the CPU kernel's IndexError."""
    if indices.numel() == 0:
        return
    volume = _volume(output_size)
    where = _glue.first_true((indices < 0) | (indices >= volume))
    if where is None:
        return
    value = int(indices[tuple(where)])
    raise invalid(op, f"indices{where} = {value} is outside [0, {volume}), the flattened output_size "
                      f"{[int(v) for v in output_size]}", IndexError)


def _planes(t: torch.Tensor) -> torch.Tensor:
    """(N, [C,] D, H, W) -> (N, C, D*H*W) (C = 1 for 4-D)."""
    t = t.flatten(-3)
    return t if t.dim() == 3 else t.unsqueeze(1)


def _deduplicated(self, indices, volume):
    """Values and indices with every duplicate but the last (largest flat
    position) sent to the spare slot ``volume``, in plane layout (N, C, S)."""
    idx = _planes(indices)
    keys, order = torch.sort(idx, dim=-1, stable=True)
    last = torch.ones_like(keys, dtype=torch.bool)
    last[..., :-1] = keys[..., 1:] != keys[..., :-1]
    target = torch.where(last, keys, torch.full_like(keys, volume))
    return _planes(self).gather(-1, order), target


def _has_duplicates(indices, volume) -> bool:
    idx = _planes(indices)
    counts = torch.zeros((*idx.shape[:-1], volume), dtype=torch.int32, device=idx.device)
    counts.scatter_add_(-1, idx, torch.ones_like(idx, dtype=torch.int32))
    return bool((counts > 1).any())


def forward_kernel(self, indices, output_size, stride, padding):
    op = "max_unpool3d"
    overload = _ops.max_unpool3d.default
    args = (self, indices, output_size, stride, padding)
    m = _glue.validate(overload, *args)
    check_indices(op, indices, output_size)  # returns at once when empty
    done = _glue.without_device(op, overload, m, self.device, _glue.geometry_of(self), *args)
    if done is not None:
        return done
    volume = _volume(output_size)
    out = [int(v) for v in output_size]
    if not _has_duplicates(indices, volume):
        return _glue.conform(ATEN_FORWARD(self, indices, out, list(stride), list(padding)), m)
    values, target = _deduplicated(self, indices, volume)
    n, c, s = values.shape
    spread = ATEN_FORWARD(values.reshape(n, c, 1, 1, s), target.reshape(n, c, 1, 1, s), [1, 1, volume + 1],
                          list(stride), list(padding))
    return _glue.conform(spread[..., :volume].reshape(m.shape), m)


def backward_kernel(grad_output, self, indices, output_size, stride, padding):
    op = "max_unpool3d_backward"
    overload = _ops.max_unpool3d_backward.default
    m = _glue.validate(overload, grad_output, self, indices, output_size, stride, padding)
    device = grad_output.device
    if m.numel() == 0:
        return _glue.like(m, device)
    check_indices(op, indices, output_size)
    result = ATEN_GATHER(_planes(grad_output), -1, _planes(indices))
    return _glue.conform(result.reshape(m.shape), m)


_glue.register_with_backward("max_unpool3d", forward_kernel, backward_kernel)
