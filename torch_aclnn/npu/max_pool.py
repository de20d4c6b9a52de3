"""NPU glue of the MaxPool3d family (docs/spec.md §9).

Forward: torch_npu's aten.max_pool3d_with_indices (op-plugin
op_plugin/ops/opapi/MaxPool3dWithIndicesKernelNpuOpApi.cpp) calls
aclnnMaxPool3dWithArgmax; its indices are conformed to the spec's int64 and
layout. Not verified here: whether its NaN and tie rules are aten's (the
spec's); the document does not say.

Backward: torch_npu's aten.max_pool3d_with_indices_backward (op-plugin
op_plugin/ops/opapi/MaxPool3dWithIndicesBackwardKernelNpuOpApi.cpp) calls
aclnnMaxPool3dWithArgmaxBackward, which adds each gradient at its index
("相同坐标处累加": terms at one position accumulate).

Corrections (where aclnn and the spec differ):
  * Window rule (contract row 12, data dependent, so not checked by the Meta
    kernel): every index is checked against the window of its own output
    position on the device before the call, raising the CPU kernel's
    IndexError (first offending position in logical order). aclnn does not
    check index values.
  * Argument lists: the spec's 1- or 3-element lists (and an empty stride)
    are passed as they are; aten's signature takes them the same way.
    Indices go to aten as int64, the dtype its schema's kernels take (int32
    indices are the spec's too).
Not verified here: the order in which aclnnMaxPool3dWithArgmaxBackward adds
several terms at one position (overlapping windows), which decides whether
its float32 result is bitwise the spec's.
Device limits (torch_aclnn/npu/limits.py): float64 (not in the aclnn dtype
lists) goes to the CPU kernels. Empty input returns without a device call.
"""
from __future__ import annotations

import torch

from ..ops._errors import invalid
from ..ops.max_pool import triples
from . import _glue, limits

_ops = torch.ops.torch_aclnn
ATEN_FORWARD = torch.ops.aten.max_pool3d_with_indices.default
ATEN_BACKWARD = torch.ops.aten.max_pool3d_with_indices_backward.default


def check_windows(op: str, self: torch.Tensor, indices: torch.Tensor, kernel_size, stride, padding,
                  dilation) -> None:
    """Row 12: every index is a position of its own output's pooling window,
    else the CPU kernel's IndexError."""
    if indices.numel() == 0:
        return
    k, s, p, d = triples(kernel_size, stride, padding, dilation)
    D, H, W = (int(v) for v in self.shape[-3:])
    v = indices.to(torch.int64)
    pos = (v // (H * W), (v // W) % H, v % W)
    ok = (v >= 0) & (v < D * H * W)
    for axis in range(3):
        o = torch.arange(indices.shape[axis - 3], device=v.device).view([-1] + [1] * (2 - axis))
        t = pos[axis] - (o * s[axis] - p[axis])
        ok &= (t >= 0) & (t % d[axis] == 0) & (t // d[axis] < k[axis])
    where = _glue.first_true(~ok)
    if where is None:
        return
    start = [where[-3 + a] * s[a] - p[a] for a in range(3)]
    raise invalid(op, f"indices{where} = {int(indices[tuple(where)])} is not a position of that output's "
                      f"pooling window (self's D*H*W = {D * H * W}; the window starts at (D, H, W) {start} with "
                      f"kernel_size {k} and dilation {d})", IndexError)


def forward_kernel(self, kernel_size, stride, padding, dilation, ceil_mode):
    op = "max_pool3d_with_indices"
    overload = _ops.max_pool3d_with_indices.default
    args = (self, kernel_size, stride, padding, dilation, ceil_mode)
    m_values, m_indices = _glue.validate(overload, *args)
    device = self.device
    if m_values.numel() == 0:
        return _glue.like(m_values, device), _glue.like(m_indices, device)
    beyond = limits.beyond_split(op, _glue.geometry_of(self))
    if beyond is not None:
        return _glue.cpu_path(op, beyond, overload, device, *args)
    values, indices = ATEN_FORWARD(self, list(kernel_size), list(stride), list(padding), list(dilation),
                                   bool(ceil_mode))
    return _glue.conform(values, m_values), _glue.conform(indices, m_indices)


def backward_kernel(grad_output, self, indices, kernel_size, stride, padding, dilation, ceil_mode):
    op = "max_pool3d_with_indices_backward"
    overload = _ops.max_pool3d_with_indices_backward.default
    args = (grad_output, self, indices, kernel_size, stride, padding, dilation, ceil_mode)
    m = _glue.validate(overload, *args)
    check_windows(op, self, indices, kernel_size, stride, padding, dilation)  # returns at once when empty
    done = _glue.without_device(op, overload, m, grad_output.device, _glue.geometry_of(grad_output), *args)
    if done is not None:
        return done
    result = ATEN_BACKWARD(grad_output, self, list(kernel_size), list(stride), list(padding), list(dilation),
                           bool(ceil_mode), indices.to(torch.int64))
    return _glue.conform(result, m)


_glue.register_with_backward("max_pool3d_with_indices", forward_kernel, backward_kernel)
