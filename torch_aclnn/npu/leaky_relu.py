"""NPU glue of the LeakyReLU family (docs/spec.md §11).

torch_npu's aten kernels (op-plugin op_plugin/ops/opapi/LeakyReluKernelNpuOpApi.cpp,
LeakyReluBackwardKernelNpuOpApi.cpp) call aclnnLeakyRelu / aclnnLeakyReluBackward.

Corrections (where aclnn and the spec differ):
  * a non-finite negative_slope: aclnnLeakyRelu's document states
    ``max(0, x) + negative_slope * min(0, x)``, which gives NaN for x > 0 with
    an infinite slope (inf * 0) where the spec gives x; the backward's kernel
    is not documented for such slopes. The glue evaluates the spec's formulas
    with aten elementwise operators on the device instead, in float32 for
    half/bfloat16.
  * half/bfloat16: whether the kernels widen internally is not documented.
    The spec computes in float32 and rounds once, so the glue calls them in
    float32 for half/bfloat16 and rounds the result.
Device limits (torch_aclnn/npu/limits.py): float64 goes to the CPU kernel
(aclnnLeakyRelu takes negative_slope as float32). Empty input returns
without a device call.
"""
from __future__ import annotations

import math

import torch

from . import _glue

_aten = torch.ops.aten

ATEN_FORWARD = _aten.leaky_relu.default
ATEN_BACKWARD = _aten.leaky_relu_backward.default


def _select(x, value, negative_slope, dtype):
    """The spec's ``x > 0 ? value : value * negative_slope`` in x's (opmath) dtype."""
    slope = torch.tensor(float(negative_slope), dtype=x.dtype, device=x.device)
    return torch.where(x > 0, value, value * slope).to(dtype)


def leaky_relu_kernel(self, negative_slope=0.01):
    m, done = _glue.begin("leaky_relu", self, negative_slope)
    if done is not None:
        return done
    x = self.to(_glue.opmath(self.dtype))
    if not math.isfinite(float(negative_slope)):
        return _glue.conform(_select(x, x, negative_slope, self.dtype), m)
    return _glue.conform(ATEN_FORWARD(x, negative_slope).to(self.dtype), m)


def leaky_relu_backward_kernel(grad_output, self, negative_slope, self_is_result):
    m, done = _glue.begin("leaky_relu_backward", grad_output, self, negative_slope, self_is_result)
    if done is not None:
        return done
    opmath, device = _glue.opmath(grad_output.dtype), _glue.call_device(grad_output, self)
    g, x = grad_output.to(device, opmath), self.to(device, opmath)
    if not math.isfinite(float(negative_slope)):
        return _glue.conform(_select(x, g, negative_slope, grad_output.dtype), m)
    result = ATEN_BACKWARD(g, x, negative_slope, self_is_result)
    return _glue.conform(result.to(grad_output.dtype), m)


_glue.register_with_backward("leaky_relu", leaky_relu_kernel, leaky_relu_backward_kernel)
