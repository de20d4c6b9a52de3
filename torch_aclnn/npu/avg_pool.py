"""NPU glue of the AvgPool3d family (docs/spec.md §12).

Forward: torch_npu's aten.avg_pool3d (op-plugin
op_plugin/ops/opapi/AvgPool3dKernelNpuOpApi.cpp) calls aclnnAvgPool3d.
Backward: torch_npu's aten.avg_pool3d_backward (op-plugin
op_plugin/ops/opapi/AvgPool3dBackwardKernelNpuOpApi.cpp) calls
aclnnAvgPool3dBackward. Both take aten's arguments, which are the spec's
(aten's optional divisor_override; op-plugin passes 0 for None).

Corrections (where aclnn and the spec differ): none known. Not verified
here: whether the NPU kernels' float16/bfloat16 results are rounded once
from float32 sums (the documents do not say), and the order in which
aclnnAvgPool3dBackward adds the terms of one position (documented as
non-deterministic unless deterministic mode is set), which decides whether
its float32 result is bitwise the spec's.
Device limits (torch_aclnn/npu/limits.py): float64 (not in the aclnn dtype
lists) and, for the forward, a kernel_size larger than self on some axis
(refused by aclnnAvgPool3d's document) go to the CPU kernels. Empty results
return without a device call.
"""
from __future__ import annotations

import types

import torch

from ..ops.max_pool import triples
from . import _glue, limits

_ops = torch.ops.torch_aclnn
ATEN_FORWARD = torch.ops.aten.avg_pool3d.default
ATEN_BACKWARD = torch.ops.aten.avg_pool3d_backward.default


def _geometry(self, dtype, kernel_size, stride, padding):
    k, _, _, _ = triples(kernel_size, stride, padding, [1])
    beyond = any(k[a] > int(self.shape[a - 3]) for a in range(3))
    return types.SimpleNamespace(dtype=dtype, kernel_beyond_self=beyond)


def forward_kernel(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    op = "avg_pool3d"
    overload = _ops.avg_pool3d.default
    args = (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    m = _glue.validate(overload, *args)
    device = self.device
    if m.numel() == 0:
        return _glue.like(m, device)
    beyond = limits.beyond_split(op, _geometry(self, self.dtype, kernel_size, stride, padding))
    if beyond is not None:
        return _glue.cpu_path(op, beyond, overload, device, *args)
    result = ATEN_FORWARD(self, list(kernel_size), list(stride), list(padding), bool(ceil_mode),
                          bool(count_include_pad), divisor_override)
    return _glue.conform(result, m)


def backward_kernel(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override):
    op = "avg_pool3d_backward"
    overload = _ops.avg_pool3d_backward.default
    args = (grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    m = _glue.validate(overload, *args)
    device = grad_output.device
    if m.numel() == 0:
        return _glue.like(m, device)
    beyond = limits.beyond_split(op, _geometry(self, grad_output.dtype, kernel_size, stride, padding))
    if beyond is not None:
        return _glue.cpu_path(op, beyond, overload, device, *args)
    result = ATEN_BACKWARD(grad_output, self, list(kernel_size), list(stride), list(padding), bool(ceil_mode),
                           bool(count_include_pad), divisor_override)
    return _glue.conform(result, m)


_glue.register("avg_pool3d", forward_kernel)
_glue.register("avg_pool3d_backward", backward_kernel)
_glue.register("avg_pool3d_backward.grad_input",
               _glue.out_variant(backward_kernel, _ops.avg_pool3d_backward.grad_input))
