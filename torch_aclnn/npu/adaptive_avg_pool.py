"""NPU glue of the AdaptiveAvgPool3d family (docs/spec.md §13).

Forward: torch_npu's aten._adaptive_avg_pool3d (op-plugin
op_plugin/ops/opapi/AdaptiveAvgPool3dKernelNpuOpApi.cpp) calls
aclnnAdaptiveAvgPool3d; the result is conformed to the spec's layout (self's).

Backward: torch_npu's aten._adaptive_avg_pool3d_backward (op-plugin
op_plugin/ops/opapi/AdaptiveAvgPool3dBackwardKernelNpuOpApi.cpp) calls
aclnnAdaptiveAvgPool3dBackward.

Corrections (where aclnn and the spec differ):
  * Empty batch of planes (contract row 4 accepts a first axis of 0; aclnn
    before the Ascend 950 does not): returned without a device call.
  * Layout: the results take self's layout (channels_last_3d when self is),
    whatever torch_npu returns.
Not verified here: the order in which the NPU kernels add (the backward's
document calls it non-deterministic by default, deterministic through
aclrtCtxSetSysParamOpt, which torch.use_deterministic_algorithms(True) sets
in torch_npu), so whether float32 results are bitwise the spec's; and
whether float16/bfloat16 accumulate in float32.
Device limits (torch_aclnn/npu/limits.py): float64 (not in the aclnn dtype
lists) goes to the CPU kernels. aclnnAdaptiveAvgPool3d has no BFLOAT16 on
the Atlas inference products, which the glue cannot tell apart: there
torch_npu's own error is raised.
"""
from __future__ import annotations

import torch

from . import _glue

ATEN_FORWARD = torch.ops.aten._adaptive_avg_pool3d.default
ATEN_BACKWARD = torch.ops.aten._adaptive_avg_pool3d_backward.default


def forward_kernel(self, output_size):
    m, done = _glue.begin("adaptive_avg_pool3d", self, output_size)
    if done is not None:
        return done
    return _glue.conform(ATEN_FORWARD(self, [int(v) for v in output_size]), m)


def backward_kernel(grad_output, self):
    m, done = _glue.begin("adaptive_avg_pool3d_backward", grad_output, self)
    if done is not None:
        return done
    return _glue.conform(ATEN_BACKWARD(grad_output, self), m)


_glue.register_with_backward("adaptive_avg_pool3d", forward_kernel, backward_kernel)
