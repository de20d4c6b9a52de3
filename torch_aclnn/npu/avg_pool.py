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
lists) goes to the CPU kernels. Empty results return without a device call.
"""
from __future__ import annotations

import torch

from . import _glue

ATEN_FORWARD = torch.ops.aten.avg_pool3d.default
ATEN_BACKWARD = torch.ops.aten.avg_pool3d_backward.default


def forward_kernel(self, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
                   divisor_override=None):
    m, done = _glue.begin("avg_pool3d", self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    if done is not None:
        return done
    result = ATEN_FORWARD(self, list(kernel_size), list(stride), list(padding), bool(ceil_mode),
                          bool(count_include_pad), divisor_override)
    return _glue.conform(result, m)


def backward_kernel(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override):
    m, done = _glue.begin("avg_pool3d_backward", grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    if done is not None:
        return done
    result = ATEN_BACKWARD(grad_output, self, list(kernel_size), list(stride), list(padding), bool(ceil_mode),
                           bool(count_include_pad), divisor_override)
    return _glue.conform(result, m)


_glue.register_with_backward("avg_pool3d", forward_kernel, backward_kernel)
