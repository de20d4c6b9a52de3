"""NPU glue of the upsample-nearest family (docs/spec.md §1, §2).

torch_npu's aten kernels (op-plugin, op_plugin/ops/opapi/
UpsampleNearest3d[Backward]KernelNpuOpApi.cpp and
UpsampleNearestExact3d[Backward]KernelNpuOpApi.cpp) call
aclnnUpsampleNearest[Exact]3d[Backward] with ``scales_x.value_or(0)``.

Corrections (where torch_npu/aclnn and the spec differ):
  * Scales for some axes only: the spec uses scales all-or-nothing. The aclnn
    forwards and the exact backward do too (they use the scales only when all
    three are > 0), but the nearest backward's document (older CANN, e.g.
    cann-ops src/image/upsample_nearest3d_grad/docs) says the scales are used
    when they are "not all 0", and its AI CPU path receives the raw values.
    The glue therefore passes the three scales only when all are > 0 and
    None for all three otherwise, so every kernel maps with the sizes.
  * Layout: op-plugin allocates the result with apply_tensor_without_format
    (contiguous); the result is returned in the layout of every other
    backend (channels_last_3d for channels_last_3d input).
Determinism: aclnnUpsampleNearest3dBackward is non-deterministic by default
(its document's Constraints); torch_npu switches CANN's deterministic mode
(ACL_OPT_DETERMINISTIC) on under torch.use_deterministic_algorithms(True).
The glue does not change that global setting per call.
Device limits: torch_aclnn/npu/limits.py (split along N*C, CPU beyond that);
empty input (N or C == 0, which aclnn rejects: inputSize / C must be > 0)
returns without a device call.
"""
from __future__ import annotations

import types

import torch

from . import _glue, limits

_ops = torch.ops.torch_aclnn
_aten = torch.ops.aten

NEAREST, EXACT = "nearest", "nearest-exact"

# The torch_npu-backed aten operators (module attributes so tests can spy on them).
ATEN_FORWARD = {NEAREST: _aten.upsample_nearest3d.default, EXACT: _aten._upsample_nearest_exact3d.default}
ATEN_BACKWARD = {NEAREST: _aten.upsample_nearest3d_backward.default,
                 EXACT: _aten._upsample_nearest_exact3d_backward.default}
_NAMES = {NEAREST: ("upsample_nearest3d", "upsample_nearest3d_backward"),
          EXACT: ("upsample_nearest_exact3d", "upsample_nearest_exact3d_backward")}


def device_scales(scales):
    """All three scales when all are given and > 0, else None for all three."""
    if all(s is not None and s > 0 for s in scales):
        return tuple(scales)
    return (None, None, None)


def geometry(N, C, out, inp, scales, dtype):
    """What the limits table measures: N, C, output D,H,W, input D,H,W, the
    per-axis up-scale factor the kernel uses, the dtype."""
    out, inp = [int(v) for v in out], [int(v) for v in inp]
    if scales[0] is not None:
        factors = [float(s) for s in scales]
    else:
        factors = [o / i for o, i in zip(out, inp)]
    return types.SimpleNamespace(N=int(N), C=int(C), out=out, inp=inp, factors=factors, dtype=dtype)


def _run(op, x, g, result, call):
    """Calls the device kernel once, or once per N*C chunk when a per-call
    limit needs it; ``call(chunk, n, c)`` returns the device result of a chunk."""
    per_call = limits.planes_per_call(op, g)
    chunks = list(_glue.plane_chunks(g.N, g.C, per_call))
    if len(chunks) == 1:
        return _glue.conform(call(x, g.N, g.C), result)
    for n0, n1, c0, c1 in chunks:
        result[n0:n1, c0:c1].copy_(call(x[n0:n1, c0:c1], n1 - n0, c1 - c0))
    return result


def _forward_kernel(mode):
    op, _ = _NAMES[mode]
    overload = getattr(_ops, op).default

    def kernel(self, output_size, scales_d=None, scales_h=None, scales_w=None):
        aten_op = ATEN_FORWARD[mode]
        m = _glue.validate(overload, self, output_size, scales_d, scales_h, scales_w)
        result = _glue.like(m, self.device)
        if self.numel() == 0:
            return result
        scales = device_scales((scales_d, scales_h, scales_w))
        g = geometry(self.shape[0], self.shape[1], output_size, self.shape[2:], scales, self.dtype)
        beyond = limits.beyond_split(op, g)
        if beyond is not None:
            return _glue.cpu_path(op, beyond, overload, self.device, self, output_size, scales_d, scales_h, scales_w)
        out = [int(v) for v in output_size]
        return _run(op, self, g, result, lambda x, n, c: aten_op(x, out, *scales))

    kernel.__name__ = f"{op}_npu"
    return kernel


def _backward_kernel(mode):
    _, op = _NAMES[mode]
    overload = getattr(_ops, op).default

    def kernel(grad_output, output_size, input_size, scales_d=None, scales_h=None, scales_w=None):
        aten_op = ATEN_BACKWARD[mode]
        m = _glue.validate(overload, grad_output, output_size, input_size, scales_d, scales_h, scales_w)
        result = _glue.like(m, grad_output.device)
        if grad_output.numel() == 0:  # N or C == 0: the result is empty too
            return result.zero_()
        scales = device_scales((scales_d, scales_h, scales_w))
        inp = [int(v) for v in input_size]
        g = geometry(inp[0], inp[1], output_size, inp[2:], scales, grad_output.dtype)
        beyond = limits.beyond_split(op, g)
        if beyond is not None:
            return _glue.cpu_path(op, beyond, overload, grad_output.device, grad_output, output_size, input_size,
                                  scales_d, scales_h, scales_w)
        out = [int(v) for v in output_size]
        return _run(op, grad_output, g, result,
                    lambda x, n, c: aten_op(x, out, [n, c, *inp[2:]], *scales))

    kernel.__name__ = f"{op}_npu"
    return kernel


for _mode in (NEAREST, EXACT):
    _glue.register_with_backward(_NAMES[_mode][0], _forward_kernel(_mode), _backward_kernel(_mode))
