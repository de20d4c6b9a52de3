"""NPU glue of the ELU family (docs/spec.md §3).

torch_npu's aten kernels (op-plugin op_plugin/ops/opapi/EluKernelNpuOpApi.cpp,
EluBackwardKernelNpuOpApi.cpp) call aclnnElu / aclnnEluBackward.

Corrections (where aclnn and the spec differ):
  * elu with a non-finite alpha, scale, input_scale or alpha * scale: aclnnElu then computes
    ``scale * threshold(x, 0, -alpha)`` instead of the formula
    (ops-nn activation/elu/op_api/aclnn_elu.cpp, NeedInfNanHandling), which
    is the formula's limit only for input_scale = +inf and x < 0 (x == 0,
    input_scale = -inf or NaN give other numbers than the spec's). The glue
    evaluates the spec's formula with aten elementwise operators on the
    device instead, in float32 for half/bfloat16. With finite coefficients
    the sign of a zero result at x = +-0 for a negative alpha * scale is
    aclnnElu's (not verified on a device).
  * half/bfloat16: aclnnElu / aclnnEluBackward run Elu / EluGradV2 in the
    input dtype; whether they widen internally is not documented. The spec
    computes in float32 and rounds once, so the glue calls them in float32
    for half/bfloat16 and rounds the result.
Device limits (torch_aclnn/npu/limits.py): float64 goes to the CPU kernel
(aclnnEluBackward has no DOUBLE; aclnnElu takes the parameters as float32).
Empty input returns without a device call.
"""
from __future__ import annotations

import math

import torch

from . import _glue

_aten = torch.ops.aten

ATEN_FORWARD = _aten.elu.default
ATEN_BACKWARD = _aten.elu_backward.default


def _finite(v) -> bool:
    return math.isfinite(float(v))


def _negcoef(alpha, scale, opmath, device):
    """alpha * scale rounded in the opmath dtype, as the kernels form it."""
    return torch.tensor(float(alpha), dtype=opmath, device=device) * float(scale)


def _elu_formula(self, alpha, scale, input_scale):
    """The spec's elu with aten elementwise operators (x >= 0, +-0 included,
    takes the positive branch; NaN the negative one), computed in float32 for
    half/bfloat16."""
    opmath = _glue.opmath(self.dtype)
    x = self.to(opmath)
    neg = torch.expm1(x * float(input_scale)) * _negcoef(alpha, scale, opmath, x.device)
    return torch.where(x >= 0, x * float(scale), neg).to(self.dtype)


def elu_kernel(self, alpha=1, scale=1, input_scale=1):
    m, done = _glue.begin("elu", self, alpha, scale, input_scale)
    if done is not None:
        return done
    opmath = _glue.opmath(self.dtype)
    if not (_finite(alpha) and _finite(input_scale) and _finite(scale)
            and bool(_negcoef(alpha, scale, opmath, "cpu").isfinite())):
        return _glue.conform(_elu_formula(self, alpha, scale, input_scale), m)
    return _glue.conform(ATEN_FORWARD(self.to(opmath), alpha, scale, input_scale).to(self.dtype), m)


def elu_backward_kernel(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    m, done = _glue.begin("elu_backward", grad_output, alpha, scale, input_scale, is_result, self_or_result)
    if done is not None:
        return done
    opmath, device = _glue.opmath(grad_output.dtype), _glue.call_device(grad_output, self_or_result)
    result = ATEN_BACKWARD(grad_output.to(device, opmath), alpha, scale, input_scale, is_result,
                           self_or_result.to(device, opmath))
    return _glue.conform(result.to(grad_output.dtype), m)


_glue.register_with_backward("elu", elu_kernel, elu_backward_kernel)
