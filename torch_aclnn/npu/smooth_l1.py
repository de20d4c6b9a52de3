"""NPU glue of the SmoothL1 family (docs/spec.md §4).

torch_npu's aten kernels (op-plugin op_plugin/ops/opapi/
SmoothL1LossKernelNpuOpApi.cpp, SmoothL1LossBackwardKernelNpuOpApi.cpp) call
aclnnSmoothL1Loss / aclnnSmoothL1LossBackward.

Corrections (where torch_npu/aclnn and the spec differ):
  * Broadcasting and dtype: op-plugin sizes the forward's 'none' result
    from self alone (smooth_l1_loss_npu_output_size(self, reduction)), which
    aclnn rejects when target broadcasts self to more elements, and gives the
    backward's grad_input self's dtype instead of the promoted one
    (apply_tensor_without_format(self, ...)). The glue casts the inputs to the
    promoted dtype and expands self and target to the broadcast shape first.
  * 'mean' with broadcasting: the spec's norm is 1 / numel(broadcast(self,
    target)) (aten divides by self.numel()); with self and target expanded to
    that shape both agree. When grad_output itself broadcasts the shape
    further, the kernel is called with 'none' and the norm applied here (in
    float32 for half/bfloat16, rounded once), since it is not documented
    which count SmoothL1LossGradV2 divides by.
  * half/bfloat16: aclnn casts the inputs to the promoted dtype and runs
    SmoothL1Loss / SmoothL1LossGradV2 in it; whether those widen internally
    is not documented. The spec computes in float32 and rounds once, so the
    glue calls the kernels in float32 for half/bfloat16 and rounds the result.
  * beta == 0 at d == 0: the gradient is 0 (sign(0) = 0, as aclnn's document
    writes it; aten's raw kernel gives -1). Applied on the device for
    beta == 0: grad_input = 0 * grad_output where self - target == 0.
Device limits (torch_aclnn/npu/limits.py): float64 and more than 8 dims go
to the CPU kernel. Empty input returns without a device call ('mean' of
nothing is NaN, 'sum' 0, as the CPU kernel and aclnnSmoothL1Loss's own
empty-tensor path give).
"""
from __future__ import annotations

import types

import torch

from . import _glue, limits

_ops = torch.ops.torch_aclnn
_aten = torch.ops.aten

ATEN_FORWARD = _aten.smooth_l1_loss.default
ATEN_BACKWARD = _aten.smooth_l1_loss_backward.default

NONE, MEAN, SUM = 0, 1, 2


def _geometry(dtype, *tensors):
    return types.SimpleNamespace(dtype=dtype, ndim=max(t.dim() for t in tensors))


def loss_kernel(self, target, reduction=MEAN, beta=1.0):
    op = "smooth_l1_loss"
    overload = _ops.smooth_l1_loss.default
    m = _glue.validate(overload, self, target, reduction, beta)
    device = _glue.call_device(self, target)
    shape = torch.broadcast_shapes(self.shape, target.shape)
    if self.numel() == 0 or target.numel() == 0:
        return _glue.like(m, device).fill_(float("nan") if reduction == MEAN else 0.0)
    beyond = limits.beyond_split(op, _geometry(m.dtype, self, target))
    if beyond is not None:
        return _glue.cpu_path(op, beyond, overload, device, self, target, reduction, beta)
    opmath = _glue.opmath(m.dtype)
    s, t = self.to(device, opmath).expand(shape), target.to(device, opmath).expand(shape)
    return _glue.conform(ATEN_FORWARD(s, t, reduction, beta).to(m.dtype), m)


def backward_kernel(grad_output, self, target, reduction, beta):
    op = "smooth_l1_loss_backward"
    overload = _ops.smooth_l1_loss_backward.default
    args = (grad_output, self, target, reduction, beta)
    m = _glue.validate(overload, *args)
    device = _glue.call_device(grad_output, self, target)
    done = _glue.without_device(op, overload, m, device, _geometry(m.dtype, grad_output, self, target), *args)
    if done is not None:
        return done
    dtype, shape = m.dtype, m.shape
    opmath = _glue.opmath(dtype)
    s, t = self.to(device, opmath).expand(shape), target.to(device, opmath).expand(shape)
    g = grad_output.to(device, opmath)
    st_shape = torch.broadcast_shapes(self.shape, target.shape)
    if reduction == MEAN and tuple(st_shape) != tuple(shape):
        # grad_output adds elements: 'none', then the spec's norm.
        result = ATEN_BACKWARD(g, s, t, NONE, beta) * (1.0 / _numel(st_shape))
    else:
        result = ATEN_BACKWARD(g, s, t, reduction, beta)
    if beta == 0:  # d == 0 exactly where self == target and finite (inf - inf is NaN, as on the CPU)
        result = torch.where(s - t == 0, g.expand(shape) * 0, result)
    return _glue.conform(result.to(dtype), m)


def _numel(shape) -> int:
    n = 1
    for v in shape:
        n *= int(v)
    return n


_glue.register_with_backward("smooth_l1_loss", loss_kernel, backward_kernel)
