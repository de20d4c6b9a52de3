"""NPU glue of the upsample-trilinear family (docs/spec.md §10).

torch_npu's aten kernels (op-plugin, op_plugin/ops/opapi/
UpsampleTrilinear3dKernelNpuOpApi.cpp and UpsampleTrilinear3dBackwardKernelNpuOpApi.cpp)
call aclnnUpsampleTrilinear3d[Backward] with ``scales_x.value_or(0)``.

Corrections (where torch_npu/aclnn and the spec differ):
  * Scales: the spec uses an axis's scale only when align_corners is False and
    the scale is > 0, as the aclnn documents do; the glue passes exactly those
    scales and None (0 on the device) for the others, so a negative scale or
    one given with align_corners never reaches the kernel.
  * Layout: the result is returned in the layout of every other backend
    (channels_last_3d for channels_last_3d input).
Determinism: aclnnUpsampleTrilinear3dBackward is non-deterministic by default;
torch_npu switches CANN's deterministic mode on under
torch.use_deterministic_algorithms(True). The glue does not change that
global setting per call.
Device limits: torch_aclnn/npu/limits.py (the forward's: split along N*C, CPU
beyond that); empty input (N or C == 0, which aclnn rejects) returns without a
device call.
"""
from __future__ import annotations

import types

import torch

from . import _glue, limits
from .upsample import _run as run_in_planes

_ops = torch.ops.torch_aclnn
_aten = torch.ops.aten

# The torch_npu-backed aten operators (module attributes so tests can spy on them).
ATEN_FORWARD = _aten.upsample_trilinear3d.default
ATEN_BACKWARD = _aten.upsample_trilinear3d_backward.default
FORWARD, BACKWARD = "upsample_trilinear3d", "upsample_trilinear3d_backward"


def device_scales(align_corners, scales):
    """The scales the spec uses (align_corners False, > 0), None for the others."""
    return tuple(None if align_corners or s is None or not s > 0 else float(s) for s in scales)


def geometry(N, C, out, inp, dtype):
    """What the limits table measures: N, C, output and input D, H, W, the
    per-axis down-scale factor (input / output), the dtype."""
    out, inp = [int(v) for v in out], [int(v) for v in inp]
    return types.SimpleNamespace(N=int(N), C=int(C), out=out, inp=inp, down=[i / o for i, o in zip(inp, out)],
                                 dtype=dtype)


def _forward(self, output_size, align_corners, scales_d=None, scales_h=None, scales_w=None):
    overload = _ops.upsample_trilinear3d.default
    m = _glue.validate(overload, self, output_size, align_corners, scales_d, scales_h, scales_w)
    result = _glue.like(m, self.device)
    if self.numel() == 0:
        return result
    scales = device_scales(align_corners, (scales_d, scales_h, scales_w))
    g = geometry(self.shape[0], self.shape[1], output_size, self.shape[2:], self.dtype)
    beyond = limits.beyond_split(FORWARD, g)
    if beyond is not None:
        return _glue.cpu_path(FORWARD, beyond, overload, self.device, self, output_size, align_corners, scales_d,
                              scales_h, scales_w)
    out = [int(v) for v in output_size]
    return run_in_planes(FORWARD, self, g, result, lambda x, n, c: ATEN_FORWARD(x, out, align_corners, *scales))


def _backward(grad_output, output_size, input_size, align_corners, scales_d=None, scales_h=None, scales_w=None):
    overload = _ops.upsample_trilinear3d_backward.default
    m = _glue.validate(overload, grad_output, output_size, input_size, align_corners, scales_d, scales_h, scales_w)
    result = _glue.like(m, grad_output.device)
    if grad_output.numel() == 0:  # N or C == 0: the result is empty too
        return result.zero_()
    scales = device_scales(align_corners, (scales_d, scales_h, scales_w))
    inp = [int(v) for v in input_size]
    g = geometry(inp[0], inp[1], output_size, inp[2:], grad_output.dtype)
    beyond = limits.beyond_split(BACKWARD, g)
    if beyond is not None:
        return _glue.cpu_path(BACKWARD, beyond, overload, grad_output.device, grad_output, output_size, input_size,
                              align_corners, scales_d, scales_h, scales_w)
    out = [int(v) for v in output_size]
    return run_in_planes(BACKWARD, grad_output, g, result,
                         lambda x, n, c: ATEN_BACKWARD(x, out, [n, c, *inp[2:]], align_corners, *scales))


_forward.__name__ = "upsample_trilinear3d_npu"
_backward.__name__ = "upsample_trilinear3d_backward_npu"
_glue.register_with_backward(FORWARD, _forward, _backward)
