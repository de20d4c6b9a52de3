"""Adversarial inputs, run in a subprocess so that a crash (segfault, abort,
sanitizer report) or a hang is a test failure instead of killing pytest.

Each case either must raise its documented exception type with the
``[torch_aclnn 16100x] <op>:`` message (a contract error of
docs/spec.md), or is valid by the spec and must give the float64
reference's answer. Sizes whose element count overflows int64, or whose
result cannot be allocated, are no contract error of the spec (CPU kernels
have no size limits): they must raise a clear RuntimeError/ValueError (torch's
own "overflowed" / "can't allocate" messages are accepted) without crashing.

All cases run in one child process (``python tests/test_adversarial.py
NAME...``) that prints one JSON line per case; if the child dies, the case
that killed it is reported and the rest run in a fresh child.
"""
import json
import math
import os
import re
import subprocess
import sys

import pytest
import torch

import torch_aclnn  # noqa: F401  (registers torch.ops.torch_aclnn)
from torch_aclnn.testing import adaptive_avg_pool as _adaptive
from torch_aclnn.testing import avg_pool as _avg_pool
from torch_aclnn.testing import elu as _elu
from torch_aclnn.testing import leaky_relu as _leaky_relu
from torch_aclnn.testing import max_pool as _max_pool
from torch_aclnn.testing import max_unpool as _max_unpool
from torch_aclnn.testing import smooth_l1 as _smooth_l1
from torch_aclnn.testing import upsample as _upsample
from torch_aclnn.testing import upsample_trilinear as _trilinear

HERE = os.path.dirname(os.path.abspath(__file__))
I64_MAX, I64_MIN = 2 ** 63 - 1, -2 ** 63
CODE = r"\[torch_aclnn 16100[12]\] "
OVERFLOW = r"overflow"
# A result whose byte size fits in int64 but not in memory: the allocator's
# error (a resource limit), not a contract violation.
ALLOC = r"can't allocate"
ops = torch.ops.torch_aclnn
CASES = {}  # name -> (fn, expectation); expectation: ("raises", exc, regex) or ("ok", check(result))


def case(name, expect):
    def deco(fn):
        CASES[name] = (fn, expect)
        return fn
    return deco


def raises(exc, msg):
    return ("raises", exc, msg)


def torchs_error(reference):
    """A call that torch_aclnn hands to torch: the error torch's own call raises (its type and the
    start of its message), whatever this torch release says."""
    try:
        reference()
    except Exception as e:  # noqa: BLE001  (any error torch raises is the expectation)
        return raises(type(e).__name__, "^" + re.escape(str(e)[:80]))
    return raises("an error", "torch's own call returned")


def _x(*shape, dtype=torch.float32):
    return torch.arange(math.prod(shape), dtype=torch.float64).sub(3).reshape(shape).to(dtype)


def matches(reference):
    """A valid case: equal (NaN where NaN) to the float64 reference, rounded
    to the result dtype (so a float64 value beyond its range is inf), within
    the result dtype's tolerance."""
    def check(out):
        from torch_aclnn.testing import tolerance
        torch.testing.assert_close(out.double(), reference().to(out.dtype).double(), equal_nan=True, check_dtype=False,
                                   **tolerance(out.dtype))
    return ("ok", check)


# --- upsample_nearest3d / _exact3d / backward (docs/spec.md §1, §2) ----------------
for op_name in ("upsample_nearest3d", "upsample_nearest_exact3d"):
    op = getattr(ops, op_name)
    bop = getattr(ops, op_name + "_backward")
    mode = "nearest" if op_name == "upsample_nearest3d" else "nearest-exact"
    P = CODE + op_name + ": "
    PB = CODE + op_name + "_backward: "
    x = _x(1, 2, 3, 4, 5)
    for label, s in (("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf"))):
        case(f"{op_name} scale {label}", raises("ValueError", P + r"scales_\w must be finite"))(
            lambda op=op, x=x, s=s: op(x, [6, 8, 10], s, 2.0, 2.0))
        case(f"{op_name}_backward scale {label}", raises("ValueError", PB + r"scales_\w must be finite"))(
            lambda bop=bop, s=s: bop(_x(1, 2, 6, 8, 10), [6, 8, 10], [1, 2, 3, 4, 5], 2.0, s, 2.0))
    # <= 0 means "not given" (docs/spec.md §1): all three ignored, the sizes decide.
    case(f"{op_name} scales negative (ignored)", matches(
        lambda x=x, mode=mode: _upsample.reference_forward(mode, x, [6, 8, 10])))(
        lambda op=op, x=x: op(x, [6, 8, 10], -2.0, -2.0, -2.0))
    case(f"{op_name} scale huge", raises("ValueError", P + r"output_size\[\d\] must equal floor"))(
        lambda op=op, x=x: op(x, [6, 8, 10], 2.0, 1e308, 2.0))
    case(f"{op_name} scale tiny", raises("ValueError", P + r"output_size\[0\] must equal floor"))(
        lambda op=op, x=x: op(x, [6, 8, 10], 1e-300, 2.0, 2.0))
    case(f"{op_name} output_size 2**40 each", raises("ValueError", CODE + r".*" + OVERFLOW))(
        lambda op=op, x=x: op(x, [2 ** 40] * 3))
    case(f"{op_name} output_size product wraps int64", raises("ValueError", CODE + r".*" + OVERFLOW))(
        lambda op=op, x=x: op(x, [2 ** 62, 2 ** 62, 4]))
    case(f"{op_name} output_size negative", raises("ValueError", P + r"output_size\[2\] must be > 0"))(
        lambda op=op, x=x: op(x, [6, 8, -(2 ** 62)]))
    case(f"{op_name} output_size INT64_MIN", raises("ValueError", P + r"output_size\[0\] must be > 0"))(
        lambda op=op, x=x: op(x, [I64_MIN, 8, 10]))
    for dt, nm in ((torch.bool, "Bool"), (torch.complex64, "ComplexFloat"), (torch.int64, "Long"), (torch.uint8, "Byte")):
        case(f"{op_name} self {nm}", raises("TypeError", P + r"self must be float32, .* got " + nm))(
            lambda op=op, x=x, dt=dt: op(x.to(dt), [6, 8, 10]))
        case(f"{op_name}_backward grad_output {nm}", raises("TypeError", PB + r"grad_output must be .* got " + nm))(
            lambda bop=bop, dt=dt: bop(_x(1, 2, 6, 8, 10).to(dt), [6, 8, 10], [1, 2, 3, 4, 5]))
    case(f"{op_name} self 0-d", raises("ValueError", P + r"self must be 5-D .* got 0-D"))(
        lambda op=op: op(torch.tensor(1.0), [1, 1, 1]))
    case(f"{op_name} self 9-d", raises("ValueError", P + r"self must be 5-D .* got 9-D"))(
        lambda op=op: op(torch.zeros([1] * 9), [1, 1, 1]))
    case(f"{op_name}_backward grad_output 9-d", raises("ValueError", PB + r"grad_output must be 5-D .* got 9-D"))(
        lambda bop=bop: bop(torch.zeros([1] * 9), [1, 1, 1], [1, 1, 1, 1, 1]))
    case(f"{op_name}_backward input_size spatial 2**40 each", raises("ValueError", CODE + r".*" + OVERFLOW))(
        lambda bop=bop: bop(torch.zeros(1, 1, 1, 1, 1), [1, 1, 1], [1, 1, 2 ** 40, 2 ** 40, 2 ** 40]))
    case(f"{op_name}_backward input_size huge N*C", raises("RuntimeError", ALLOC))(
        lambda bop=bop: bop(torch.zeros(1).expand(2 ** 20, 2 ** 20, 1, 1, 1), [1, 1, 1], [2 ** 20, 2 ** 20, 1, 1, 1]))
    case(f"{op_name}_backward input_size N*C wraps int64", raises("ValueError", PB + r"grad_input of shape .* overflows int64"))(
        lambda bop=bop: bop(torch.zeros(1, 1, 1, 1, 1), [1, 1, 1], [2 ** 62, 2 ** 62, 1, 1, 1]))
    case(f"{op_name}_backward input_size negative N", raises("ValueError", PB + r"input_size N and C must be >= 0"))(
        lambda bop=bop: bop(torch.zeros(1, 1, 1, 1, 1), [1, 1, 1], [I64_MIN, 1, 1, 1, 1]))
    case(f"{op_name}_backward input_size negative D", raises("ValueError", PB + r"input_size\[2\] \(D\) must be > 0"))(
        lambda bop=bop: bop(torch.zeros(1, 1, 1, 1, 1), [1, 1, 1], [1, 1, -3, 1, 1]))


# --- elu / elu_backward (docs/spec.md §3) -------------------------------------------
_v = torch.tensor([-2.0, -0.5, 0.0, 0.5, 3.0])
for label, a in (("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf"))):
    # Any real number is a valid parameter; the formula decides the result.
    case(f"elu alpha {label}", matches(lambda a=a: _elu.reference_forward(_v, a, 1.0, 1.0)))(
        lambda a=a: ops.elu(_v, a, 1.0, 1.0))
    case(f"elu input_scale {label}", matches(lambda a=a: _elu.reference_forward(_v, 1.0, 1.0, a)))(
        lambda a=a: ops.elu(_v, 1.0, 1.0, a))
    case(f"elu_backward scale {label}", matches(
        lambda a=a: _elu.reference_backward(_v, 1.0, a, 1.0, False, _v)))(
        lambda a=a: ops.elu_backward(_v, 1.0, a, 1.0, False, _v))
# A finite parameter beyond float32's range is refused for tensors computed in
# float32 (as aten's Scalar conversion refuses it); float64 tensors take it.
for arg, call in (("alpha", lambda: ops.elu(_v, 1e308, 1.0, 1.0)),
                  ("input_scale", lambda: ops.elu(_v, 1.0, 1.0, -1e308)),
                  ("scale", lambda: ops.elu_backward(_v.half(), 1.0, 1e39, 1.0, False, _v.half()))):
    fn = "elu_backward" if arg == "scale" else "elu"
    case(f"{fn} {arg} huge", raises("ValueError", CODE + rf"{fn}: {arg} must fit in float32 .* got -?1e\+\d+"))(call)
case("elu alpha huge float64", matches(
    lambda: _elu.reference_forward(_v.double(), 1e308, 1.0, 1.0)))(
    lambda: ops.elu(_v.double(), 1e308, 1.0, 1.0))
case("elu alpha negative", matches(lambda: _elu.reference_forward(_v, -1.5, 1.0, 1.0)))(
    lambda: ops.elu(_v, -1.5, 1.0, 1.0))
case("elu_backward is_result alpha negative", raises("ValueError", CODE + r"elu_backward: .*alpha"))(
    lambda: ops.elu_backward(_v, -1.0, 1.0, 1.0, True, _v))
case("elu_backward is_result alpha -inf", raises("ValueError", CODE + r"elu_backward: .*alpha"))(
    lambda: ops.elu_backward(_v, float("-inf"), 1.0, 1.0, True, _v))
case("elu alpha bool", raises("TypeError", CODE + r"elu: alpha must be a real number"))(
    lambda: ops.elu(_v, True, 1.0, 1.0))
case("elu scale complex", raises("TypeError", CODE + r"elu: scale must be a real number"))(
    lambda: ops.elu(_v, 1.0, 1j, 1.0))
for dt, nm in ((torch.bool, "Bool"), (torch.complex64, "ComplexFloat"), (torch.int32, "Int"), (torch.int8, "Char")):
    case(f"elu self {nm}", raises("TypeError", CODE + r"elu: self must be float32, .* got " + nm))(
        lambda dt=dt: ops.elu(_v.to(dt)))
    case(f"elu_backward grad_output {nm}", raises("TypeError", CODE + r"elu_backward: grad_output must be .* got " + nm))(
        lambda dt=dt: ops.elu_backward(_v.to(dt), 1, 1, 1, False, _v.to(dt)))
case("elu self 0-d (valid)", matches(lambda: _elu.reference_forward(torch.tensor(-1.0))))(
    lambda: ops.elu(torch.tensor(-1.0)))
case("elu self 9-d", raises("ValueError", CODE + r"elu: self must have at most 8 dims, got 9-D"))(
    lambda: ops.elu(torch.zeros([1] * 9)))
case("elu_backward 9-d", raises("ValueError", CODE + r"elu_backward: grad_output must have at most 8 dims, got 9-D"))(
    lambda: ops.elu_backward(torch.zeros([1] * 9), 1, 1, 1, False, torch.zeros([1] * 9)))


# --- smooth_l1_loss / smooth_l1_loss_backward (docs/spec.md §4) ---------------------
_s, _t = torch.tensor([1.0, -3.0, 0.25, 0.0]), torch.zeros(4)
for label, b in (("nan", float("nan")), ("-inf", float("-inf")), ("negative", -1e-300)):
    case(f"smooth_l1_loss beta {label}", raises("ValueError", CODE + r"smooth_l1_loss: beta must be >= 0"))(
        lambda b=b: ops.smooth_l1_loss(_s, _t, 1, b))
    case(f"smooth_l1_loss_backward beta {label}",
         raises("ValueError", CODE + r"smooth_l1_loss_backward: beta must be >= 0"))(
        lambda b=b: ops.smooth_l1_loss_backward(torch.ones(4), _s, _t, 0, b))
for label, b in (("inf", float("inf")), ("huge", 1e308), ("0", 0.0)):
    case(f"smooth_l1_loss beta {label} (valid)",
         matches(lambda b=b: _smooth_l1.reference_forward(_s, _t, 0, b)))(
        lambda b=b: ops.smooth_l1_loss(_s, _t, 0, b))
    case(f"smooth_l1_loss_backward beta {label} (valid)",
         matches(lambda b=b: _smooth_l1.reference_backward(torch.ones(4), _s, _t, 0, b)))(
        lambda b=b: ops.smooth_l1_loss_backward(torch.ones(4), _s, _t, 0, b))
for r in (3, -1, I64_MAX, I64_MIN):
    case(f"smooth_l1_loss reduction {r}", raises("ValueError", CODE + r"smooth_l1_loss: reduction must be 0"))(
        lambda r=r: ops.smooth_l1_loss(_s, _t, r, 1.0))
for dt, nm in ((torch.bool, "Bool"), (torch.complex64, "ComplexFloat"), (torch.int64, "Long")):
    case(f"smooth_l1_loss self {nm}", raises("TypeError", CODE + r"smooth_l1_loss: .*" + nm))(
        lambda dt=dt: ops.smooth_l1_loss(_s.to(dt), _t.to(dt), 0, 1.0))
case("smooth_l1_loss 0-d (valid)", matches(
    lambda: _smooth_l1.reference_forward(torch.tensor(2.0), torch.tensor(0.5), 1, 1.0)))(
    lambda: ops.smooth_l1_loss(torch.tensor(2.0), torch.tensor(0.5), 1, 1.0))
case("smooth_l1_loss 9-d (valid)", matches(
    lambda: _smooth_l1.reference_forward(_x(1, 2, 1, 1, 1, 1, 1, 2, 1), torch.zeros([1] * 9), 0, 1.0)))(
    lambda: ops.smooth_l1_loss(_x(1, 2, 1, 1, 1, 1, 1, 2, 1), torch.zeros([1] * 9), 0, 1.0))


# --- max_unpool3d / max_unpool3d_backward (docs/spec.md §5) -------------------------
_mx, _mi = _x(1, 1, 2, 1, 1), torch.tensor([0, 5]).view(1, 1, 2, 1, 1)
_sp = ([1, 1, 1], [0, 0, 0])
for label, v in (("-1", -1), ("== bound", 8), ("INT64_MAX", I64_MAX), ("INT64_MIN", I64_MIN)):
    bad = _mi.clone()
    bad[0, 0, 1, 0, 0] = v
    case(f"max_unpool3d index {label}",
         raises("IndexError", CODE + rf"max_unpool3d: indices\[0, 0, 1, 0, 0\] = {v} is outside \[0, 8\)"))(
        lambda bad=bad: ops.max_unpool3d(_mx, bad, [2, 2, 2], *_sp))
    case(f"max_unpool3d_backward index {label}",
         raises("IndexError", CODE + rf"max_unpool3d_backward: indices\[0, 0, 1, 0, 0\] = {v} is outside \[0, 8\)"))(
        lambda bad=bad: ops.max_unpool3d_backward(_x(1, 1, 2, 2, 2), _mx, bad, [2, 2, 2], *_sp))
case("max_unpool3d index bound - 1 (valid)", matches(
    lambda: _max_unpool.reference_forward(_mx, torch.tensor([0, 7]).view(1, 1, 2, 1, 1), [2, 2, 2], *_sp)))(
    lambda: ops.max_unpool3d(_mx, torch.tensor([0, 7]).view(1, 1, 2, 1, 1), [2, 2, 2], *_sp))
for label, out in (("2**40 each", [2 ** 40] * 3), ("product == 2**63", [2 ** 21] * 3),
                   ("product wraps to 2**32", [2 ** 32 + 1, 2 ** 32, 1]), ("2**31 x 2**31", [2 ** 31, 2 ** 31, 1])):
    case(f"max_unpool3d output_size {label}", raises("ValueError", CODE + r".*" + OVERFLOW))(
        lambda out=out: ops.max_unpool3d(_mx, _mi, out, *_sp))
case("max_unpool3d huge N*C (expanded)", raises("RuntimeError", ALLOC))(
    lambda: ops.max_unpool3d(torch.zeros(1, 1, 1, 1, 1).expand(2 ** 30, 2 ** 30, 1, 1, 1),
                             torch.zeros(1, 1, 1, 1, 1, dtype=torch.long).expand(2 ** 30, 2 ** 30, 1, 1, 1),
                             [1, 1, 1], *_sp))
# (no grad_output can have that many elements, so row 11 rejects it first)
case("max_unpool3d_backward output_size product == 2**63",
     raises("ValueError", CODE + r"max_unpool3d_backward: grad_output's last three sizes must equal output_size"))(
    lambda: ops.max_unpool3d_backward(torch.zeros(1, 1, 2, 2, 2), _mx, _mi, [2 ** 21] * 3, *_sp))
case("max_unpool3d output_size negative", raises("ValueError", CODE + r"max_unpool3d: output_size elements must be > 0"))(
    lambda: ops.max_unpool3d(_mx, _mi, [2, I64_MIN, 2], *_sp))
case("max_unpool3d stride INT64_MIN", raises("ValueError", CODE + r"max_unpool3d: stride elements must be > 0"))(
    lambda: ops.max_unpool3d(_mx, _mi, [2, 2, 2], [1, I64_MIN, 1], [0, 0, 0]))
case("max_unpool3d padding huge (unused, valid)", matches(
    lambda: _max_unpool.reference_forward(_mx, _mi, [2, 2, 2], [1, 1, 1], [0, 0, 0])))(
    lambda: ops.max_unpool3d(_mx, _mi, [2, 2, 2], [I64_MAX, 1, 1], [I64_MAX, I64_MIN, -1]))
for dt, nm in ((torch.bool, "Bool"), (torch.complex64, "ComplexFloat"), (torch.uint16, "UInt16")):
    case(f"max_unpool3d self {nm}", raises("TypeError", CODE + r"max_unpool3d: self must be .* got " + nm))(
        lambda dt=dt: ops.max_unpool3d(_mx.to(dt), _mi, [2, 2, 2], *_sp))
case("max_unpool3d indices float", raises("TypeError", CODE + r"max_unpool3d: indices must be int64, got Float"))(
    lambda: ops.max_unpool3d(_mx, _mi.float(), [2, 2, 2], *_sp))
case("max_unpool3d self 0-d", raises("ValueError", CODE + r"max_unpool3d: self must be 4-D .* got 0-D"))(
    lambda: ops.max_unpool3d(torch.zeros(()), torch.zeros((), dtype=torch.long), [1, 1, 1], *_sp))
case("max_unpool3d self 9-d", raises("ValueError", CODE + r"max_unpool3d: self must be 4-D .* got 9-D"))(
    lambda: ops.max_unpool3d(torch.zeros([1] * 9), torch.zeros([1] * 9, dtype=torch.long), [1, 1, 1], *_sp))
case("max_unpool3d_backward self 9-d", raises("ValueError", CODE + r"max_unpool3d_backward: self must be 4-D .* got 9-D"))(
    lambda: ops.max_unpool3d_backward(torch.zeros([1] * 9), torch.zeros([1] * 9), torch.zeros([1] * 9, dtype=torch.long),
                                      [1, 1, 1], *_sp))


# --- max_pool3d_with_indices / max_pool3d_with_indices_backward (docs/spec.md §9) ----
_mp_x = _x(1, 2, 4, 4, 4)
_mp_w = ([2], [2], [0], [1], False)  # kernel_size, stride, padding, dilation, ceil_mode
_mp_v, _mp_i = _max_pool.reference_forward(_mp_x, *_mp_w)
_mp_i = _mp_i.to(torch.int64)
MP = CODE + "max_pool3d_with_indices: "
case("max_pool3d_with_indices 2x2x2 (valid)", matches(lambda: _max_pool.reference_forward(_mp_x, *_mp_w)[0]))(
    lambda: ops.max_pool3d_with_indices(_mp_x, *_mp_w)[0])
case("max_pool3d_with_indices NaN windows (valid)", matches(
    lambda: _max_pool.reference_forward(_mp_x.masked_fill(_mp_x > 20, float("nan")), *_mp_w)[0]))(
    lambda: ops.max_pool3d_with_indices(_mp_x.masked_fill(_mp_x > 20, float("nan")), *_mp_w)[0])
for label, k in (("INT64_MAX", I64_MAX), ("2**32 + 2 (int32 wrap)", 2 ** 32 + 2), ("INT64_MIN", I64_MIN)):
    case(f"max_pool3d_with_indices kernel_size {label}", raises("ValueError", MP + r"kernel_size elements must be"))(
        lambda k=k: ops.max_pool3d_with_indices(_mp_x, [k], [2], [0], [1], False))
case("max_pool3d_with_indices stride INT64_MIN", raises("ValueError", MP + r"stride elements must be > 0"))(
    lambda: ops.max_pool3d_with_indices(_mp_x, [2], [1, I64_MIN, 1], [0], [1], False))
case("max_pool3d_with_indices dilation INT64_MAX", raises("ValueError", MP + r"dilation elements must be"))(
    lambda: ops.max_pool3d_with_indices(_mp_x, [2], [2], [0], [I64_MAX], False))
case("max_pool3d_with_indices self bool", raises("TypeError", MP + r"self must be .* got Bool"))(
    lambda: ops.max_pool3d_with_indices(_mp_x.bool(), *_mp_w))
case("max_pool3d_with_indices self 9-d", raises("ValueError", MP + r"self must be 4-D .* got 9-D"))(
    lambda: ops.max_pool3d_with_indices(torch.zeros([1] * 9), *_mp_w))
MPB = CODE + "max_pool3d_with_indices_backward: "
case("max_pool3d_with_indices_backward (valid)", matches(
    lambda: _max_pool.reference_backward(_mp_v.float(), _mp_x, _mp_i, *_mp_w)))(
    lambda: ops.max_pool3d_with_indices_backward(_mp_v.float(), _mp_x, _mp_i, *_mp_w))
for label, v in (("-1", -1), ("== D*H*W", 64), ("INT64_MAX", I64_MAX), ("INT64_MIN", I64_MIN)):
    def _bad_pool_index(v=v):
        bad = _mp_i.clone()
        bad[0, 1, 1, 0, 1] = v
        return ops.max_pool3d_with_indices_backward(_mp_v.float(), _mp_x, bad, *_mp_w)
    case(f"max_pool3d_with_indices_backward index {label}",
         raises("IndexError", MPB + r"indices\[0, 1, 1, 0, 1\] = "
                + str(v) + " is not a position"))(_bad_pool_index)
case("max_pool3d_with_indices_backward self 9-d", raises("ValueError", MPB + r"self must be 4-D .* got 9-D"))(
    lambda: ops.max_pool3d_with_indices_backward(torch.zeros([1] * 9), torch.zeros([1] * 9),
                                                 torch.zeros([1] * 9, dtype=torch.long), *_mp_w))


# --- leaky_relu / leaky_relu_backward (docs/spec.md §11) ---------------------
_lr_x = _x(2, 3, 4)
LR, LRB = CODE + "leaky_relu: ", CODE + "leaky_relu_backward: "
case("leaky_relu (valid)", matches(lambda: _leaky_relu.reference_forward(_lr_x, -0.5)))(
    lambda: ops.leaky_relu(_lr_x, -0.5))
case("leaky_relu self bool", raises("TypeError", LR + r".*Bool"))(lambda: ops.leaky_relu(_lr_x.bool(), 0.1))
case("leaky_relu self 9-d", raises("ValueError", LR))(lambda: ops.leaky_relu(torch.zeros([1] * 9), 0.1))
case("leaky_relu_backward (valid)", matches(lambda: _leaky_relu.reference_backward(_lr_x, _lr_x, 0.25, True)))(
    lambda: ops.leaky_relu_backward(_lr_x, _lr_x, 0.25, True))
case("leaky_relu_backward self_is_result with a negative slope", raises("ValueError", LRB))(
    lambda: ops.leaky_relu_backward(_lr_x, _lr_x, -0.25, True))
case("leaky_relu_backward shapes differ", raises("ValueError", LRB))(
    lambda: ops.leaky_relu_backward(_lr_x, _lr_x[:1], 0.25, False))

# --- upsample_trilinear3d / upsample_trilinear3d_backward (docs/spec.md §10) -
_ut_x = _x(1, 2, 2, 3, 4)
UT, UTB = CODE + "upsample_trilinear3d: ", CODE + "upsample_trilinear3d_backward: "
case("upsample_trilinear3d (valid)", matches(lambda: _trilinear.reference_forward(_ut_x, [3, 5, 6], False)))(
    lambda: ops.upsample_trilinear3d(_ut_x, [3, 5, 6], False, None, None, None))
case("upsample_trilinear3d output_size INT64_MAX", raises("ValueError", UT))(
    lambda: ops.upsample_trilinear3d(_ut_x, [I64_MAX, 2, 2], False, None, None, None))
case("upsample_trilinear3d output_size -1", raises("ValueError", UT))(
    lambda: ops.upsample_trilinear3d(_ut_x, [-1, 2, 2], False, None, None, None))
case("upsample_trilinear3d self 4-d", raises("ValueError", UT))(
    lambda: ops.upsample_trilinear3d(_x(2, 2, 3, 4), [3, 5, 6], False, None, None, None))
case("upsample_trilinear3d_backward (valid)", matches(
    lambda: _trilinear.reference_backward(_x(1, 2, 3, 5, 6), [3, 5, 6], [1, 2, 2, 3, 4], True)))(
    lambda: ops.upsample_trilinear3d_backward(_x(1, 2, 3, 5, 6), [3, 5, 6], [1, 2, 2, 3, 4], True, None, None, None))
case("upsample_trilinear3d_backward input_size INT64_MIN", raises("ValueError", UTB))(
    lambda: ops.upsample_trilinear3d_backward(_x(1, 2, 3, 5, 6), [3, 5, 6], [1, 2, I64_MIN, 3, 4], False,
                                              None, None, None))
case("upsample_trilinear3d_backward grad_output's shape wrong", raises("ValueError", UTB))(
    lambda: ops.upsample_trilinear3d_backward(_x(1, 2, 3, 5, 7), [3, 5, 6], [1, 2, 2, 3, 4], False,
                                              None, None, None))

# --- avg_pool3d / avg_pool3d_backward (docs/spec.md §12) ----------------------
_ap_x = _x(1, 2, 4, 4, 4)
_ap_w = ([2], [2], [0], False, True, None)
AP, APB = CODE + "avg_pool3d: ", CODE + "avg_pool3d_backward: "
case("avg_pool3d (valid)", matches(lambda: _avg_pool.reference_forward(_ap_x, [3], [2], [1], True, False, None)))(
    lambda: ops.avg_pool3d(_ap_x, [3], [2], [1], True, False, None))
case("avg_pool3d kernel_size INT64_MAX", raises("ValueError", AP))(
    lambda: ops.avg_pool3d(_ap_x, [I64_MAX], [2], [0], False, True, None))
case("avg_pool3d stride INT64_MIN", raises("ValueError", AP))(
    lambda: ops.avg_pool3d(_ap_x, [2], [1, I64_MIN, 1], [0], False, True, None))
case("avg_pool3d padding more than half the kernel", raises("ValueError", AP))(
    lambda: ops.avg_pool3d(_ap_x, [2], [2], [2], False, True, None))
case("avg_pool3d divisor_override 0", raises("ValueError", AP))(
    lambda: ops.avg_pool3d(_ap_x, [2], [2], [0], False, True, 0))
case("avg_pool3d self bool", raises("TypeError", AP + r".*Bool"))(lambda: ops.avg_pool3d(_ap_x.bool(), *_ap_w))
case("avg_pool3d_backward (valid)", matches(
    lambda: _avg_pool.reference_backward(_x(1, 2, 2, 2, 2), _ap_x, *_ap_w)))(
    lambda: ops.avg_pool3d_backward(_x(1, 2, 2, 2, 2), _ap_x, *_ap_w))
case("avg_pool3d_backward grad_output's shape wrong", raises("ValueError", APB))(
    lambda: ops.avg_pool3d_backward(_x(1, 2, 2, 2, 3), _ap_x, *_ap_w))
case("avg_pool3d_backward self 9-d", raises("ValueError", APB))(
    lambda: ops.avg_pool3d_backward(torch.zeros([1] * 9), torch.zeros([1] * 9), *_ap_w))

# --- adaptive_avg_pool3d / adaptive_avg_pool3d_backward (docs/spec.md §13) ----
_aa_x = _x(1, 2, 5, 4, 3)
AA, AAB = CODE + "adaptive_avg_pool3d: ", CODE + "adaptive_avg_pool3d_backward: "
case("adaptive_avg_pool3d (valid)", matches(lambda: _adaptive.reference_forward(_aa_x, [3, 3, 2])))(
    lambda: ops.adaptive_avg_pool3d(_aa_x, [3, 3, 2]))
case("adaptive_avg_pool3d output_size INT64_MAX", raises("ValueError", AA))(
    lambda: ops.adaptive_avg_pool3d(_aa_x, [I64_MAX, 1, 1]))
case("adaptive_avg_pool3d output_size 0", raises("ValueError", AA))(lambda: ops.adaptive_avg_pool3d(_aa_x, [0, 1, 1]))
case("adaptive_avg_pool3d self bool", raises("TypeError", AA + r".*Bool"))(
    lambda: ops.adaptive_avg_pool3d(_aa_x.bool(), [2, 2, 2]))
case("adaptive_avg_pool3d_backward (valid)", matches(
    lambda: _adaptive.reference_backward(_x(1, 2, 3, 3, 2), _aa_x)))(
    lambda: ops.adaptive_avg_pool3d_backward(_x(1, 2, 3, 3, 2), _aa_x))
case("adaptive_avg_pool3d_backward grad_output's N differs", raises("ValueError", AAB))(
    lambda: ops.adaptive_avg_pool3d_backward(_x(2, 2, 3, 3, 2), _aa_x))
case("adaptive_avg_pool3d_backward self 9-d", raises("ValueError", AAB))(
    lambda: ops.adaptive_avg_pool3d_backward(torch.zeros([1] * 9), torch.zeros([1] * 9)))

# Known failures (kernel findings, reported; the kernels are not changed here):
# name -> reason, run as strict xfails. None open at present.
# --- Python wrapper errors (edge rules) ------------------------------------
import torch_aclnn as _ta  # noqa: E402  (the public wrappers)

_F = torch.nn.functional
_ux = _x(1, 2, 3, 4, 5)
_NAN, _INF = float("nan"), float("inf")
for op_name in ("upsample_nearest3d", "upsample_nearest_exact3d"):
    fn = getattr(_ta, op_name)
    P = CODE + op_name + ": "
    # scale_factor: NaN, +-inf, 0, negative, one bad element of three.
    for label, s in (("nan", _NAN), ("inf", _INF), ("-inf", -_INF), ("0", 0), ("-0.0", -0.0), ("negative", -2.0),
                     ("(2, nan, 2)", (2, _NAN, 2)), ("(2, 2, 0)", (2, 2, 0)), ("[inf, 2, 2]", [_INF, 2, 2]),
                     ("(2, 2, -1)", (2, 2, -1))):
        case(f"wrapper {op_name} scale_factor {label}",
             raises("ValueError", P + r"scale_factor (elements )?must be finite and > 0, got "))(
            lambda fn=fn, s=s: fn(_ux, scale_factor=s))
    # a finite scale whose output size overflows int64, or is 0
    for label, s in (("1e30", 1e30), ("2**63", 2 ** 63), ("1e308", 1e308), ("(2, 2, 1e19)", (2, 2, 1e19))):
        case(f"wrapper {op_name} scale_factor {label} overflows",
             raises("ValueError", P + r"scale_factor .* gives an output size that overflows int64"))(
            lambda fn=fn, s=s: fn(_ux, scale_factor=s))
    for label, s in (("0.1", 0.1), ("1e-300", 1e-300), ("(2, 0.2, 2)", (2, 0.2, 2))):
        case(f"wrapper {op_name} scale_factor {label} gives size 0",
             raises("ValueError", P + r"scale_factor .* gives an output size of 0 on axis"))(
            lambda fn=fn, s=s: fn(_ux, scale_factor=s))
    for label, s in (("bool", True), ("str", "2"), ("complex", 2j), ("tensor", torch.tensor(2.0)),
                     ("(2, None, 2)", (2, None, 2)), ("(2, '2', 2)", (2, "2", 2))):
        case(f"wrapper {op_name} scale_factor {label}",
             raises("TypeError", P + r"scale_factor (elements )?must be (a )?real numbers? \(int or float\)"))(
            lambda fn=fn, s=s: fn(_ux, scale_factor=s))
    # size: non-integers, bool, None inside, beyond int64, <= 0
    for label, v in (("2.5", 2.5), ("3.0", 3.0), ("'3'", "3"), ("bool", True), ("nan", _NAN), ("inf", _INF),
                     ("[2, 2, 2.5]", [2, 2, 2.5]), ("(2, None, 2)", (2, None, 2)), ("[2, True, 2]", [2, True, 2]),
                     ("float tensor", torch.tensor(3.0))):
        case(f"wrapper {op_name} size {label}", raises("TypeError", P + r"size (elements )?must be (an int|ints), got "))(
            lambda fn=fn, v=v: fn(_ux, size=v))
    for label, v in (("2**63", 2 ** 63), ("-2**63-1", -2 ** 63 - 1), ("[2**64, 1, 1]", [2 ** 64, 1, 1])):
        case(f"wrapper {op_name} size {label}", raises("ValueError", P + r"size (elements )?must be in int64's range"))(
            lambda fn=fn, v=v: fn(_ux, size=v))
    for label, v in (("0", 0), ("-1", -1), ("-2**63", I64_MIN), ("[4, 0, 4]", [4, 0, 4]), ("[4, 4, -2**62]", [4, 4, -2 ** 62])):
        case(f"wrapper {op_name} size {label}", raises("ValueError", P + r"size (elements )?must be > 0, got "))(
            lambda fn=fn, v=v: fn(_ux, size=v))
    # nn.Upsample follows the drop-in rule: outside the contract, torch's own error
    mode = "nearest" if op_name == "upsample_nearest3d" else "nearest-exact"
    case(f"drop-in nn.Upsample {mode} scale_factor nan (torch's error)",
         raises("RuntimeError", r"^value cannot be converted to type int64_t without overflow"))(
        lambda mode=mode: _ta.nn.Upsample(scale_factor=_NAN, mode=mode)(_ux))
    case(f"drop-in nn.Upsample {mode} size 2.5 (torch's error)",
         raises("TypeError", r"upsample_nearest(_exact)?3d\(\) received an invalid combination of arguments"))(
        lambda mode=mode: _ta.nn.Upsample(size=2.5, mode=mode)(_ux))
    # backward wrappers: element types of output_size / input_size / scales_*
    bfn = getattr(_ta, op_name + "_backward")
    PB = CODE + op_name + "_backward: "
    _g = _x(1, 2, 6, 8, 10)
    case(f"wrapper {op_name}_backward output_size 2.5",
         raises("TypeError", PB + r"output_size elements must be ints, got \[6, 8, 2\.5\]"))(
        lambda bfn=bfn: bfn(_g, [6, 8, 2.5], [1, 2, 3, 4, 5]))
    case(f"wrapper {op_name}_backward input_size 2**63",
         raises("ValueError", PB + r"input_size elements must be in int64's range"))(
        lambda bfn=bfn: bfn(_g, [6, 8, 10], [1, 2, 3, 4, 2 ** 63]))
    case(f"wrapper {op_name}_backward scales_h str",
         raises("TypeError", PB + r"scales_h must be a real number"))(
        lambda bfn=bfn: bfn(_g, [6, 8, 10], [1, 2, 3, 4, 5], 2.0, "2", 2.0))
    # values torch's F.interpolate accepts stay accepted
    _np = __import__("numpy")
    for label, kw, ref, sc in (
            ("size numpy ints", dict(size=(_np.int64(4), 5, _np.int32(6))), [4, 5, 6], ()),
            ("size torch.Size", dict(size=torch.Size([4, 5, 6])), [4, 5, 6], ()),
            ("size 0-d int tensor", dict(size=torch.tensor(4)), [4, 4, 4], ()),
            ("scale_factor numpy float32", dict(scale_factor=_np.float32(1.5)), [4, 6, 7], (1.5, 1.5, 1.5)),
            ("scale_factor int tuple", dict(scale_factor=(1, 2, 3)), [3, 8, 15], (1.0, 2.0, 3.0))):
        case(f"wrapper {op_name} {label} (valid)", matches(
            lambda mode=mode, ref=ref, sc=sc: _upsample.reference_forward(mode, _ux, ref, *sc)))(
            lambda fn=fn, kw=kw: fn(_ux, **kw))

# max_unpool3d: kernel_size, stride, padding, output_size
_pool_in = _x(1, 1, 4, 4, 4)
_pp, _pi = _F.max_pool3d(_pool_in, 2, return_indices=True)
PU = CODE + "max_unpool3d: "
case("wrapper max_unpool3d kernel_size 2.5 (positional)", raises("TypeError", PU + r"kernel_size must be an int, got 2\.5"))(
    lambda: _ta.max_unpool3d(_pp, _pi, 2.5))
for arg, label, v in (("kernel_size", "2.0", 2.0), ("kernel_size", "bool", True), ("kernel_size", "'2'", "2"),
                      ("kernel_size", "[2, 2, inf]", [2, 2, _INF]), ("kernel_size", "[2, nan, 2]", [2, _NAN, 2]),
                      ("stride", "2.0", 2.0), ("stride", "bool", True), ("stride", "[2, None, 2]", [2, None, 2]),
                      ("padding", "1.0", 1.0), ("padding", "bool", False), ("padding", "nan", _NAN)):
    kw = {"kernel_size": 2, arg: v}
    case(f"wrapper max_unpool3d {arg} {label}",
         raises("TypeError", PU + rf"{arg} (elements )?must be (an int|ints), got "))(
        lambda kw=kw: _ta.max_unpool3d(_pp, _pi, **kw))
for arg, v in (("kernel_size", 2 ** 63), ("stride", [2, 2, 2 ** 64]), ("padding", -2 ** 63 - 1)):
    kw = {"kernel_size": 2, arg: v}
    case(f"wrapper max_unpool3d {arg} beyond int64", raises("ValueError", PU + rf"{arg} (elements )?must be in int64's range"))(
        lambda kw=kw: _ta.max_unpool3d(_pp, _pi, **kw))
case("wrapper max_unpool3d padding None", raises("TypeError", r"\[torch_aclnn 161001\] max_unpool3d: padding is required"))(
    lambda: _ta.max_unpool3d(_pp, _pi, 2, padding=None))
# the default output size (in - 1) * stride + kernel_size - 2 * padding names the arguments it comes from
_DEFAULT = PU + r"the output size \(in - 1\) \* stride \+ kernel_size - 2 \* padding "
for label, kw, tail in (
        ("padding 100", dict(kernel_size=2, padding=100), r"must be > 0 .*padding \[100, 100, 100\]"),
        ("padding (0, 0, 2)", dict(kernel_size=2, padding=(0, 0, 2)), r"must be > 0 .*padding \[0, 0, 2\]"),
        ("padding 2**62", dict(kernel_size=2, padding=2 ** 62), r"must be > 0 .*padding \[4611686018427387904"),
        ("kernel_size 2**62", dict(kernel_size=2 ** 62), r"has a volume that overflows int64.*kernel_size \[4611686018427387904"),
        ("stride 2**62", dict(kernel_size=2, stride=2 ** 62), r"has a volume that overflows int64.*stride \[4611686018427387904"),
        ("padding -2**63", dict(kernel_size=2, padding=I64_MIN), r"has a volume that overflows int64.*padding \[-9223372036854775808"),
        ("overlapping windows, padding 1", dict(kernel_size=2, stride=1, padding=1),
         r"must have at least as many elements as the input's D\*H\*W")):
    case(f"wrapper max_unpool3d {label}", raises("ValueError", _DEFAULT + tail))(
        lambda kw=kw: _ta.max_unpool3d(_pp, _pi, **kw))
for label, v, exc, msg in (("[4, 4, 4.5]", [4, 4, 4.5], "TypeError", r"output_size elements must be ints"),
                           ("[4, 4, True]", [4, 4, True], "TypeError", r"output_size elements must be ints"),
                           ("[4, nan, 4]", [4, _NAN, 4], "TypeError", r"output_size elements must be ints"),
                           ("int 4", 4, "TypeError", r"output_size must be a list of ints"),
                           ("[1, 1, 4, 4, 2**64]", [1, 1, 4, 4, 2 ** 64], "ValueError", r"output_size elements must be in int64's range")):
    case(f"wrapper max_unpool3d output_size {label}", raises(exc, PU + msg))(
        lambda v=v: _ta.max_unpool3d(_pp, _pi, 2, output_size=v))
case("drop-in nn.MaxUnpool3d padding 100 (torch's error)",
     torchs_error(lambda: _F.max_unpool3d(_pp, _pi, 2, padding=100)))(
    lambda: _ta.nn.MaxUnpool3d(2, padding=100)(_pp, _pi))
case("wrapper max_unpool3d_backward output_size 2.5",
     raises("TypeError", CODE + r"max_unpool3d_backward: output_size elements must be ints"))(
    lambda: _ta.max_unpool3d_backward(_pool_in, _pp, _pi, [4, 4, 2.5], [2, 2, 2], [0, 0, 0]))
case("wrapper max_unpool3d_backward stride 2**63",
     raises("ValueError", CODE + r"max_unpool3d_backward: stride elements must be in int64's range"))(
    lambda: _ta.max_unpool3d_backward(_pool_in, _pp, _pi, [4, 4, 4], [2, 2, 2 ** 63], [0, 0, 0]))
case("wrapper max_unpool3d padding -1 (valid, as F.max_unpool3d)", matches(
    lambda: _F.max_unpool3d(_pp, _pi, 2, padding=-1)))(
    lambda: _ta.max_unpool3d(_pp, _pi, 2, padding=-1))

# celu: alpha != 0 and 1 / alpha representable in the compute type
_cv = torch.tensor([-3.0, -1.0, -1e-3, 0.0, 0.5, 2.0])
PC = CODE + "celu: "
for label, v, a in (("float32 1e-45", _cv, 1e-45), ("float32 1e-300", _cv, 1e-300), ("float32 -1e-39", _cv, -1e-39),
                    ("half 1e-45", _cv.half(), 1e-45), ("bfloat16 1e-300", _cv.bfloat16(), 1e-300),
                    ("float64 5e-324", _cv.double(), 5e-324), ("float64 -1e-309", _cv.double(), -1e-309)):
    case(f"wrapper celu alpha {label}", raises("ValueError", PC + r"1 / alpha .* must fit in float(32|64) .*got alpha="))(
        lambda v=v, a=a: _ta.celu(v, a))
for inplace in (True, False):
    case(f"drop-in nn.CELU inplace={inplace} alpha 1e-45 (torch's error)",
         raises("RuntimeError", r"^value cannot be converted to type float without overflow"))(
        lambda inplace=inplace: _ta.nn.CELU(1e-45, inplace=inplace)(_cv.clone()))
case("wrapper celu alpha 1e300 float32", raises("ValueError", PC + r"alpha must fit in float32"))(
    lambda: _ta.celu(_cv, 1e300))
for label, a in (("bool", True), ("str", "1"), ("complex", 1j)):
    case(f"wrapper celu alpha {label}", raises("TypeError", PC + r"alpha must be a real number"))(
        lambda a=a: _ta.celu(_cv, a))
for label, v, a in (("float64 1e-45", _cv.double(), 1e-45), ("float64 -1e-300", _cv.double(), -1e-300),
                    ("float32 3e-39", _cv, 3e-39), ("float32 -1.5", _cv, -1.5)):
    # 1 / alpha finite in the compute type: valid, torch's answer
    case(f"wrapper celu alpha {label} (valid)", matches(lambda v=v, a=a: _F.celu(v, a)))(
        lambda v=v, a=a: _ta.celu(v, a))
# elu / elu_backward: the parameters are real numbers, is_result a bool
for arg in ("alpha", "scale", "input_scale"):
    case(f"wrapper elu {arg} str", raises("TypeError", CODE + rf"elu: {arg} must be a real number"))(
        lambda arg=arg: _ta.elu(_cv, **{arg: "1"}))
case("wrapper elu_backward alpha str", raises("TypeError", CODE + r"elu_backward: alpha must be a real number"))(
    lambda: _ta.elu_backward(_cv, "1", 1.0, 1.0, False, _cv))
case("wrapper elu_backward is_result str", raises("TypeError", CODE + r"elu_backward: is_result must be a bool"))(
    lambda: _ta.elu_backward(_cv, 1.0, 1.0, 1.0, "no", _cv))

# Doc claim: the nearest-exact forward follows the spec's index rule, also in
# float64, where aten's forward forms the index in float64 arithmetic and
# differs (84 -> 10: element 7 is source 62 here, 63 in aten's forward);
# aten's own backward maps as the spec does.


def _exact_84_to_10():
    x = torch.arange(84.0, dtype=torch.float64).view(1, 1, 1, 1, 84)
    ours = ops.upsample_nearest_exact3d(x, [1, 1, 10], None, None, None)
    aten_fwd = torch.ops.aten._upsample_nearest_exact3d(x, [1, 1, 10], None, None, None)
    g = torch.arange(1.0, 11.0, dtype=torch.float64).view(1, 1, 1, 1, 10)
    aten_bwd = torch.ops.aten._upsample_nearest_exact3d_backward(g, [1, 1, 10], [1, 1, 1, 1, 84], None, None, None)
    spec = _upsample.reference_forward("nearest-exact", x, [1, 1, 10])
    return ours, aten_fwd, aten_bwd, spec


def _check_exact_84_to_10(out):
    ours, aten_fwd, aten_bwd, spec = out
    assert torch.equal(ours, spec), (ours, spec)
    src = aten_bwd.flatten().nonzero().flatten()  # the source index of each output element (a downsample)
    assert src.tolist() == ours.flatten().long().tolist(), (src, ours)
    assert ours.flatten()[7].item() == 62 and aten_fwd.flatten()[7].item() == 63, (ours, aten_fwd)
    assert torch.equal(ours.flatten()[:7], aten_fwd.flatten()[:7]) and torch.equal(ours.flatten()[8:], aten_fwd.flatten()[8:])


case("upsample_nearest_exact3d float64 84->10: the spec's rule and aten's backward, not aten's forward",
     ("ok", _check_exact_84_to_10))(_exact_84_to_10)
for fn_name, call in (("smooth_l1_loss", lambda b: _ta.smooth_l1_loss(_s, _t, "mean", b)),
                      ("smooth_l1_loss_backward",
                       lambda b: _ta.smooth_l1_loss_backward(torch.ones(4), _s, _t, "none", b))):
    for label, b in (("str", "1"), ("bool", True), ("complex", 1j), ("None-like list", [1.0])):
        case(f"{fn_name} wrapper beta {label}",
             raises("TypeError", CODE + fn_name + r": beta must be a real number"))(lambda call=call, b=b: call(b))
# (end of the wrapper-errors section)


# --- one device (edge rules) -------------------------------------------------
# Every op and overload, with one tensor argument on another device than the
# rest (meta counts as a device): a tagged RuntimeError naming both devices,
# never another backend's kernel or uninitialised memory. A 0-dim CPU input
# beside meta tensors is accepted, as aten's elementwise ops accept a CPU
# scalar: the result is on meta.
_mdev = dict(
    upsample_nearest3d_backward=(lambda g: ops.upsample_nearest3d_backward(g, [2, 2, 2], [1, 1, 1, 1, 1]),
                                 lambda g, out: ops.upsample_nearest3d_backward.grad_input(
                                     g, [2, 2, 2], [1, 1, 1, 1, 1], grad_input=out),
                                 ("grad_output",), ((1, 1, 2, 2, 2),), (1, 1, 1, 1, 1)),
    upsample_nearest_exact3d_backward=(
        lambda g: ops.upsample_nearest_exact3d_backward(g, [2, 2, 2], [1, 1, 1, 1, 1]),
        lambda g, out: ops.upsample_nearest_exact3d_backward.grad_input(g, [2, 2, 2], [1, 1, 1, 1, 1], grad_input=out),
        ("grad_output",), ((1, 1, 2, 2, 2),), (1, 1, 1, 1, 1)),
    elu_backward=(lambda g, x: ops.elu_backward(g, 1.0, 1.0, 1.0, False, x),
                  lambda g, x, out: ops.elu_backward.grad_input(g, 1.0, 1.0, 1.0, False, x, grad_input=out),
                  ("grad_output", "self_or_result"), ((4,), (4,)), (4,)),
    smooth_l1_loss=(lambda a, b: ops.smooth_l1_loss(a, b, 0, 1.0), None, ("self", "target"), ((4,), (4,)), (4,)),
    smooth_l1_loss_backward=(lambda g, a, b: ops.smooth_l1_loss_backward(g, a, b, 0, 1.0),
                             lambda g, a, b, out: ops.smooth_l1_loss_backward.grad_input(g, a, b, 0, 1.0, grad_input=out),
                             ("grad_output", "self", "target"), ((4,), (4,), (4,)), (4,)),
    max_unpool3d=(lambda x, i: ops.max_unpool3d(x, i, [2, 1, 1], *_sp), None, ("self", "indices"),
                  ((1, 1, 1, 1, 1), (1, 1, 1, 1, 1)), None),
    max_unpool3d_backward=(lambda g, x, i: ops.max_unpool3d_backward(g, x, i, [2, 1, 1], *_sp),
                           lambda g, x, i, out: ops.max_unpool3d_backward.grad_input(g, x, i, [2, 1, 1], *_sp,
                                                                                     grad_input=out),
                           ("grad_output", "self", "indices"), ((1, 1, 2, 1, 1), (1, 1, 1, 1, 1), (1, 1, 1, 1, 1)),
                           (1, 1, 1, 1, 1)),
)


def _mdev_arg(name, shape, device):
    dtype = torch.long if name == "indices" else torch.float32
    return torch.zeros(shape, dtype=dtype, device=device)


def _on_meta(shape):
    def check(out):
        assert out.device.type == "meta" and tuple(out.shape) == tuple(shape), (out.device, out.shape)
    return ("ok", check)


_DEV = CODE + r"{op}: \w+ is on (meta|cpu), but \w+ is on (meta|cpu): every tensor argument"
for op_name, (fn, out_fn, names, shapes, out_shape) in _mdev.items():
    for k, name in enumerate(names):
        for odd, rest in (("meta", "cpu"), ("cpu", "meta")):
            if len(names) == 1:
                break
            case(f"{op_name} {name} on {odd}, the rest on {rest}", raises("RuntimeError", _DEV.format(op=op_name)))(
                lambda fn=fn, names=names, shapes=shapes, k=k, odd=odd, rest=rest: fn(
                    *[_mdev_arg(n, s, odd if j == k else rest) for j, (n, s) in enumerate(zip(names, shapes))]))
            if out_fn is not None:
                case(f"{op_name}.grad_input {name} on {odd}, the rest and out on {rest}",
                     raises("RuntimeError", _DEV.format(op=op_name)))(
                    lambda out_fn=out_fn, names=names, shapes=shapes, k=k, odd=odd, rest=rest, out_shape=out_shape:
                    out_fn(*[_mdev_arg(n, s, odd if j == k else rest) for j, (n, s) in enumerate(zip(names, shapes))],
                           torch.zeros(out_shape, device=rest)))
    if out_fn is not None:
        for odd, rest in (("meta", "cpu"), ("cpu", "meta")):
            case(f"{op_name}.grad_input out on {odd}, the inputs on {rest}",
                 raises("RuntimeError", CODE + op_name + rf": grad_input is on {odd}, but \w+ is on {rest}"))(
                lambda out_fn=out_fn, names=names, shapes=shapes, odd=odd, rest=rest, out_shape=out_shape:
                out_fn(*[_mdev_arg(n, s, rest) for n, s in zip(names, shapes)], torch.zeros(out_shape, device=odd)))
# The reproducers, verbatim.
case("smooth_l1_loss CPU self, meta target (reproducer)", raises("RuntimeError", _DEV.format(op="smooth_l1_loss")))(
    lambda: ops.smooth_l1_loss(torch.full((4,), 5.), torch.zeros(4, device="meta"), 0, 1.0))
case("max_unpool3d_backward.grad_input meta indices, CPU out (reproducer)",
     raises("RuntimeError", _DEV.format(op="max_unpool3d_backward")))(
    lambda: ops.max_unpool3d_backward.grad_input(torch.ones(1, 1, 2, 1, 1), torch.ones(1, 1, 1, 1, 1),
                                                 torch.zeros(1, 1, 1, 1, 1, dtype=torch.long, device="meta"),
                                                 [2, 1, 1], *_sp, grad_input=torch.full((1, 1, 1, 1, 1), 7.)))
# A 0-dim CPU input beside meta tensors: accepted, the result on meta.
case("smooth_l1_loss 0-dim CPU self, meta target", _on_meta((4,)))(
    lambda: ops.smooth_l1_loss(torch.tensor(5.), torch.zeros(4, device="meta"), 0, 1.0))
case("smooth_l1_loss meta self, 0-dim CPU target, mean", _on_meta(()))(
    lambda: ops.smooth_l1_loss(torch.zeros(4, device="meta"), torch.tensor(5.), 1, 1.0))
case("smooth_l1_loss_backward 0-dim CPU grad_output, meta self and target", _on_meta((4,)))(
    lambda: ops.smooth_l1_loss_backward(torch.tensor(1.), torch.zeros(4, device="meta"),
                                        torch.zeros(4, device="meta"), 1, 1.0))
case("elu_backward 0-dim CPU grad_output, 0-dim meta self", _on_meta(()))(
    lambda: ops.elu_backward(torch.tensor(1.), 1.0, 1.0, 1.0, False, torch.zeros((), device="meta")))
case("smooth_l1_loss_backward.grad_input 0-dim CPU grad_output, meta out", ("ok", lambda out: None))(
    lambda: ops.smooth_l1_loss_backward.grad_input(torch.tensor(1.), torch.zeros(4, device="meta"),
                                                   torch.zeros(4, device="meta"), 1, 1.0,
                                                   grad_input=torch.zeros(4, device="meta")))
# ... but never as the out= tensor.
case("smooth_l1_loss_backward.grad_input meta inputs, 0-dim CPU out",
     raises("RuntimeError", CODE + r"smooth_l1_loss_backward: grad_input is on cpu, but grad_output is on meta"))(
    lambda: ops.smooth_l1_loss_backward.grad_input(torch.tensor(1., device="meta"), torch.zeros((), device="meta"),
                                                   torch.zeros((), device="meta"), 1, 1.0,
                                                   grad_input=torch.zeros(())))
# A 0-dim CPU input beside CPU tensors is simply a CPU call.
case("smooth_l1_loss_backward 0-dim grad_output, CPU (valid)", matches(
    lambda: _smooth_l1.reference_backward(torch.tensor(2.), _s, _t, 1, 1.0)))(
    lambda: ops.smooth_l1_loss_backward(torch.tensor(2.), _s, _t, 1, 1.0))


# The same rule while tracing: under FakeTensorMode (and torch.compile) every
# tensor reaches the Meta kernels as a meta tensor standing for its device
# (CPU, CUDA: a fake CUDA tensor needs no GPU), and a mix raises the same
# tagged error, not torch's untagged FakeTensorDeviceMismatchError after it.
def _fake_call(call, *devices, shapes, names, out_device=None, out_shape=None):
    """call(*fake tensors[, out]) inside a FakeTensorMode, the i-th on
    devices[i]."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        args = [_mdev_arg(n, s, d) for n, s, d in zip(names, shapes, devices)]
        if out_device is not None:
            args.append(torch.zeros(out_shape, device=out_device))
        out = call(*args)
        return None if out is None else (out.device.type, tuple(out.shape))


def _fake_result(device, shape=None):
    def check(out):
        assert out is not None and out[0] == device and (shape is None or out[1] == shape), out
    return ("ok", check)


for op_name, (fn, out_fn, names, shapes, out_shape) in _mdev.items():
    for odd, rest in (("cpu", "cuda"), ("cuda", "cpu"), ("meta", "cpu")):
        for k, name in enumerate(names):
            if len(names) == 1 or (odd == "meta" and k > 0):
                continue
            devices = [odd if j == k else rest for j in range(len(names))]
            # The first input names the call's device: an odd first input is
            # the one the others are compared with.
            other, where = (names[1], rest) if k == 0 else (name, odd)
            first = rest if k else odd
            msg = CODE + rf"{op_name}: {other} is on {where}, but {names[0]} is on {first}: every tensor argument"
            case(f"{op_name} fake {name} on {odd}, the rest on {rest}", raises("RuntimeError", msg))(
                lambda fn=fn, devices=devices, shapes=shapes, names=names: _fake_call(
                    fn, *devices, shapes=shapes, names=names))
            if out_fn is not None:
                case(f"{op_name}.grad_input fake {name} on {odd}, the rest and out on {rest}",
                     raises("RuntimeError", msg))(
                    lambda out_fn=out_fn, devices=devices, shapes=shapes, names=names, rest=rest, out_shape=out_shape:
                    _fake_call(out_fn, *devices, shapes=shapes, names=names, out_device=rest, out_shape=out_shape))
        if out_fn is not None:
            case(f"{op_name}.grad_input fake out on {odd}, the inputs on {rest}",
                 raises("RuntimeError", CODE + op_name + rf": grad_input is on {odd}, but {names[0]} is on {rest}"))(
                lambda out_fn=out_fn, names=names, shapes=shapes, rest=rest, odd=odd, out_shape=out_shape:
                _fake_call(out_fn, *[rest] * len(names), shapes=shapes, names=names, out_device=odd,
                           out_shape=out_shape))
# One device throughout: the fake result is on it.
for op_name, (fn, out_fn, names, shapes, out_shape) in _mdev.items():
    case(f"{op_name} fake, every tensor on cuda", _fake_result("cuda"))(
        lambda fn=fn, names=names, shapes=shapes: _fake_call(fn, *["cuda"] * len(names), shapes=shapes, names=names))
# A fake 0-dim CPU input beside fake CUDA tensors: accepted, the result on cuda.
case("smooth_l1_loss fake 0-dim CPU self, cuda target", _fake_result("cuda", (4,)))(
    lambda: _fake_call(lambda a, b: ops.smooth_l1_loss(a, b, 0, 1.0), "cpu", "cuda", shapes=((), (4,)),
                       names=("self", "target")))
case("smooth_l1_loss_backward.grad_input fake 0-dim CPU grad_output, cuda self, target and out", ("ok", lambda out: None))(
    lambda: _fake_call(lambda g, a, b, out: ops.smooth_l1_loss_backward.grad_input(g, a, b, 1, 1.0, grad_input=out),
                       "cpu", "cuda", "cuda", shapes=((), (4,), (4,)), names=("grad_output", "self", "target"),
                       out_device="cuda", out_shape=(4,)))
case("elu_backward fake 0-dim CPU grad_output, 0-dim cuda self", _fake_result("cuda"))(
    lambda: _fake_call(lambda g, x: ops.elu_backward(g, 1.0, 1.0, 1.0, False, x), "cpu", "cuda", shapes=((), ()),
                       names=("grad_output", "self_or_result")))
# ... but never as the out= tensor.
case("smooth_l1_loss_backward.grad_input fake cuda inputs, 0-dim CPU out",
     raises("RuntimeError", CODE + r"smooth_l1_loss_backward: grad_input is on cpu, but grad_output is on cuda"))(
    lambda: _fake_call(lambda g, a, b, out: ops.smooth_l1_loss_backward.grad_input(g, a, b, 1, 1.0, grad_input=out),
                       "cuda", "cuda", "cuda", shapes=((), (), ()), names=("grad_output", "self", "target"),
                       out_device="cpu", out_shape=()))


# torch.compile(fullgraph=True) traces with fake tensors: a mixed call fails
# to compile, dynamo's error (TorchRuntimeError) quoting the tagged message,
# which the case raises on its own (the child records first lines only).
def _compiled_mixed(make_target, *args):
    torch._dynamo.reset()
    fn = torch.compile(lambda x, *t: ops.smooth_l1_loss(x, make_target(*t), 0, 1.0), fullgraph=True)
    try:
        return fn(*args)
    except RuntimeError as e:
        tagged = re.search(r"\[torch_aclnn 1610\d\d\][^'\n]*", str(e))
        raise RuntimeError(f"{type(e).__name__}: {tagged.group(0) if tagged else str(e)}") from None


case("torch.compile smooth_l1_loss CPU self, meta target",
     raises("RuntimeError", r"TorchRuntimeError: " + CODE + r"smooth_l1_loss: target is on meta, but self is on cpu"))(
    lambda: _compiled_mixed(lambda t: t, torch.zeros(4), torch.zeros(4, device="meta")))
case("torch.compile smooth_l1_loss CPU self, cuda target made in the graph",
     raises("RuntimeError", r"TorchRuntimeError: " + CODE + r"smooth_l1_loss: target is on cuda, but self is on cpu"))(
    lambda: _compiled_mixed(lambda: torch.zeros(4, device="cuda"), torch.zeros(4)))


# --- sizes whose product overflows int64 (edge rules) ------------------------
_big = 2 ** 40
for red, nm in ((0, "none"), (1, "mean"), (2, "sum")):
    case(f"smooth_l1_loss broadcast 2**40 x 2**40 {nm} (reproducer)",
         raises("ValueError", CODE + r"smooth_l1_loss: the broadcast of self and target of shape .* overflows int64"))(
        lambda red=red: ops.smooth_l1_loss(torch.ones(1).expand(_big, 1), torch.zeros(1).expand(1, _big), red, 1.0))
    case(f"smooth_l1_loss broadcast (2**32+1) x 2**32 {nm} (reproducer)",
         raises("ValueError", CODE + r"smooth_l1_loss: .* overflows int64"))(
        lambda red=red: ops.smooth_l1_loss(torch.ones(1).expand(2 ** 32 + 1, 1), torch.zeros(1).expand(1, 2 ** 32),
                                           red, 1.0))
    case(f"smooth_l1_loss broadcast 3 x 2**62 {nm} (reproducer)",
         raises("ValueError", CODE + r"smooth_l1_loss: .* overflows int64"))(
        lambda red=red: ops.smooth_l1_loss(torch.ones(1).expand(3, 1), torch.zeros(1).expand(1, 2 ** 62), red, 1.0))
    case(f"smooth_l1_loss_backward broadcast 2**40 x 2**40 {nm}",
         raises("ValueError", CODE + r"smooth_l1_loss_backward: grad_input of shape .* overflows int64"))(
        lambda red=red: ops.smooth_l1_loss_backward(torch.ones(()), torch.ones(1).expand(_big, 1),
                                                    torch.zeros(1).expand(1, _big), red, 1.0))
case("smooth_l1_loss_backward grad_output broadcasts past int64",
     raises("ValueError", CODE + r"smooth_l1_loss_backward: grad_input of shape .* overflows int64"))(
    lambda: ops.smooth_l1_loss_backward(torch.ones(1).expand(_big, 1, 1), torch.ones(1).expand(_big, 1),
                                        torch.zeros(4), 0, 1.0))
# 'sum' over 2**61 elements: the count fits int64 (the bytes of a 'none' result would not).
case("smooth_l1_loss none 2**61 elements (bytes overflow)",
     raises("ValueError", CODE + r"smooth_l1_loss: the broadcast of self and target .* 2\^63 bytes"))(
    lambda: ops.smooth_l1_loss(torch.ones(1).expand(2 ** 31, 1), torch.zeros(1).expand(1, 2 ** 30), 0, 1.0))
for op_name in ("upsample_nearest3d", "upsample_nearest_exact3d"):
    case(f"{op_name} empty N, output_size whose strides overflow (reproducer)",
         raises("ValueError", CODE + op_name + r": the result of shape .* overflows int64"))(
        lambda op_name=op_name: getattr(ops, op_name)(torch.empty(0, 1, 1, 1, 1), [2 ** 30] * 3))
    case(f"{op_name}_backward empty N, input_size whose strides overflow",
         raises("ValueError", CODE + op_name + r"_backward: grad_input of shape .* overflows int64"))(
        lambda op_name=op_name: getattr(ops, op_name + "_backward")(torch.empty(0, 1, 1, 1, 1), [1, 1, 1],
                                                                    [0, 1, 2 ** 30, 2 ** 30, 2 ** 30]))
    case(f"{op_name}_backward.grad_input 6-D out (reproducer)",
         raises("ValueError", CODE + op_name + r"_backward: grad_input must be 5-D \(N, C, D, H, W\), got 6-D"))(
        lambda op_name=op_name: getattr(ops, op_name + "_backward").grad_input(
            torch.zeros(1, 1, 2, 2, 2), [2, 2, 2], [1, 1, 1, 1, 1], grad_input=torch.zeros(1, 1, 1, 1, 1, 1)))

# (end of the one-device section)


# --- out= and autograd (edge rules) ------------------------------------------
# aten's out= rules, which every .grad_input overload and every Python out=
# wrapper follows; aten.elu_backward.grad_input runs every scenario too, as the
# model the expectations are taken from:
#   - in grad mode, any tensor argument that requires grad, out included (a
#     leaf or not): RuntimeError "<op>(): functions with out=... arguments
#     don't support automatic differentiation, ..."; one with a forward-mode
#     tangent: NotImplementedError;
#   - the written tensor's version counter is bumped (a view shares its
#     base's), so a tensor saved for backward and overwritten makes backward
#     raise; out aliasing an input gives the functional result;
#   - no_grad: allowed, out keeps requires_grad and gets no grad_fn;
#     inference_mode: allowed (version bumped on normal tensors); an inference
#     tensor written outside inference mode: torch's error.
import torch.autograd.forward_ad as _fwAD  # noqa: E402

_OA_RG = (r"^{}\(\): functions with out=\.\.\. arguments don't support automatic differentiation, "
          r"but one of the arguments requires grad\.$")
_OA_FWAD = r"^Trying to use forward AD with {}_out that does not support it because it is an out= function$"
_OA_INPLACE = r"one of the variables needed for gradient computation has been modified by an inplace operation"
_OA_INFERENCE = r"^Inplace update to inference tensor outside InferenceMode is not allowed"
_F64 = torch.float64


def _oa_upsample(name):
    # output_size == input size (so that out may alias grad_output), scales 1.4 (floor(2 * 1.4) = 2):
    # nearest maps both outputs to input 0 on every axis (grad_input[1] = 0), nearest-exact is the identity
    size, scales = [2, 2, 2], (1.4, 1.4, 1.4)
    return (name, lambda: ([_x(1, 2, 2, 2, 2, dtype=_F64)], (1, 2, 2, 2, 2), 0),
            lambda ts, out: getattr(ops, name).grad_input(ts[0], size, [1, 2, 2, 2, 2], *scales, grad_input=out),
            lambda ts, out: getattr(torch_aclnn, name)(ts[0], size, [1, 2, 2, 2, 2], *scales, out=out),
            lambda ts: getattr(ops, name)(ts[0], size, [1, 2, 2, 2, 2], *scales))


def _oa_elu_make():
    return [_x(5, dtype=_F64), _x(5, dtype=_F64).mul(0.5)], (5,), 0


def _oa_smooth_l1_make():
    return [_x(5, dtype=_F64), _x(5, dtype=_F64).mul(0.25), torch.zeros(5, dtype=_F64)], (5,), 0


def _oa_unpool_make():
    # self (index 1) only lends its shape: out may alias it
    return [_x(1, 1, 2, 2, 2, dtype=_F64), torch.zeros(1, 1, 1, 2, 2, dtype=_F64)], (1, 1, 1, 2, 2), 1


_OA_IDX = torch.tensor([0, 3, 5, 6]).view(1, 1, 1, 2, 2)
_OA_UNPOOL = ([2, 2, 2], [2, 2, 2], [0, 0, 0])
# label -> (op name in messages, make() -> (inputs, out shape, index out may alias), raw call, Python call, functional)
_OA_CALLS = {}
for _n in ("upsample_nearest3d_backward", "upsample_nearest_exact3d_backward"):
    _OA_CALLS[_n] = _oa_upsample(_n)
_OA_CALLS["elu_backward"] = (
    "elu_backward", _oa_elu_make,
    lambda ts, out: ops.elu_backward.grad_input(ts[0], 1.0, 1.0, 1.0, False, ts[1], grad_input=out),
    lambda ts, out: torch_aclnn.elu_backward(ts[0], 1.0, 1.0, 1.0, False, ts[1], out=out),
    lambda ts: ops.elu_backward(ts[0], 1.0, 1.0, 1.0, False, ts[1]))
_OA_CALLS["smooth_l1_loss_backward"] = (
    "smooth_l1_loss_backward", _oa_smooth_l1_make,
    lambda ts, out: ops.smooth_l1_loss_backward.grad_input(ts[0], ts[1], ts[2], 0, 1.0, grad_input=out),
    lambda ts, out: torch_aclnn.smooth_l1_loss_backward(ts[0], ts[1], ts[2], "none", 1.0, out=out),
    lambda ts: ops.smooth_l1_loss_backward(ts[0], ts[1], ts[2], 0, 1.0))
_OA_CALLS["max_unpool3d_backward"] = (
    "max_unpool3d_backward", _oa_unpool_make,
    lambda ts, out: ops.max_unpool3d_backward.grad_input(ts[0], ts[1], _OA_IDX, *_OA_UNPOOL, grad_input=out),
    lambda ts, out: torch_aclnn.max_unpool3d_backward(ts[0], ts[1], _OA_IDX, *_OA_UNPOOL, out=out),
    lambda ts: ops.max_unpool3d_backward(ts[0], ts[1], _OA_IDX, *_OA_UNPOOL))
# The model: aten's own out= overload, through the same scenarios.
_OA_ATEN = (
    "elu_backward", _oa_elu_make,
    lambda ts, out: torch.ops.aten.elu_backward.grad_input(ts[0], 1.0, 1.0, 1.0, False, ts[1], grad_input=out),
    None,
    lambda ts: torch.ops.aten.elu_backward(ts[0], 1.0, 1.0, 1.0, False, ts[1]))


def _oa_state(out, version=True):
    """out's values, then its version, requires_grad and whether it has no grad_fn."""
    meta = [out._version] if version else []
    meta += [float(out.requires_grad), float(out.grad_fn is None)]
    return torch.cat([out.detach().flatten().double(), torch.tensor(meta, dtype=_F64)])


def _oa_expected(fn, make, *meta):
    def ref():
        ts, _, _ = make()
        return torch.cat([fn(ts).flatten().double(), torch.tensor(meta, dtype=_F64)])
    return ref


def _oa_input_rg(make, call, i):
    ts, shape, _ = make()
    ts[i].requires_grad_()
    call(ts, torch.zeros(shape, dtype=_F64))


def _oa_out_leaf_rg(make, call):
    ts, shape, _ = make()
    call(ts, torch.zeros(shape, dtype=_F64, requires_grad=True))


def _oa_out_nonleaf_rg(make, call):
    ts, shape, _ = make()
    call(ts, torch.ones(shape, dtype=_F64, requires_grad=True) * 2)


def _oa_out_view_of_saved(make, call):
    ts, shape, _ = make()
    a = torch.rand((2, *shape), dtype=_F64, requires_grad=True)
    y = a.exp()  # saves y for backward
    view = y.detach()[1]
    call(ts, view)
    assert y._version == 1, y._version  # the view bumped its base's counter
    y.sum().backward()


def _oa_out_aliases_input(make, call):
    ts, _, k = make()
    call(ts, ts[k])
    return _oa_state(ts[k])


def _oa_no_grad(make, call):
    ts, shape, _ = make()
    for t in ts:
        t.requires_grad_()
    out = torch.zeros(shape, dtype=_F64, requires_grad=True)
    with torch.no_grad():
        call(ts, out)
    return _oa_state(out)


def _oa_inference_mode(make, call):
    ts, shape, _ = make()
    for t in ts:
        t.requires_grad_()
    out = torch.zeros(shape, dtype=_F64, requires_grad=True)  # a normal tensor: its version is bumped
    with torch.inference_mode():
        call(ts, out)
    return _oa_state(out)


def _oa_inference_tensor_in_mode(make, call):
    with torch.inference_mode():
        ts, shape, _ = make()
        out = torch.zeros(shape, dtype=_F64)
        call(ts, out)
    return _oa_state(out, version=False)  # inference tensors have no version counter


def _oa_inference_tensor_outside(make, call):
    ts, shape, _ = make()
    with torch.inference_mode():
        out = torch.zeros(shape, dtype=_F64)
    call(ts, out)


def _oa_tangent(make, call):
    ts, shape, _ = make()
    with _fwAD.dual_level():
        ts[0] = _fwAD.make_dual(ts[0], torch.ones_like(ts[0]))
        call(ts, torch.zeros(shape, dtype=_F64))


def _oa_cases(label, op_name, make, call, fn):
    rg, fwad = _OA_RG.format(re.escape(op_name)), _OA_FWAD.format(re.escape(op_name))
    for i in range(len(make()[0])):
        case(f"{label}: input {i} requires grad", raises("RuntimeError", rg))(
            lambda make=make, call=call, i=i: _oa_input_rg(make, call, i))
    case(f"{label}: out a leaf that requires grad", raises("RuntimeError", rg))(
        lambda make=make, call=call: _oa_out_leaf_rg(make, call))
    case(f"{label}: out a non-leaf that requires grad", raises("RuntimeError", rg))(
        lambda make=make, call=call: _oa_out_nonleaf_rg(make, call))
    case(f"{label}: out a view of a tensor saved for backward", raises("RuntimeError", _OA_INPLACE))(
        lambda make=make, call=call: _oa_out_view_of_saved(make, call))
    case(f"{label}: out aliases an input", matches(_oa_expected(fn, make, 1, 0, 1)))(
        lambda make=make, call=call: _oa_out_aliases_input(make, call))
    case(f"{label}: no_grad, inputs and out leaf requiring grad", matches(_oa_expected(fn, make, 1, 1, 1)))(
        lambda make=make, call=call: _oa_no_grad(make, call))
    case(f"{label}: inference_mode, inputs and out requiring grad", matches(_oa_expected(fn, make, 1, 1, 1)))(
        lambda make=make, call=call: _oa_inference_mode(make, call))
    case(f"{label}: inference_mode, inference tensors", matches(_oa_expected(fn, make, 0, 1)))(
        lambda make=make, call=call: _oa_inference_tensor_in_mode(make, call))
    case(f"{label}: out an inference tensor outside inference_mode", raises("RuntimeError", _OA_INFERENCE))(
        lambda make=make, call=call: _oa_inference_tensor_outside(make, call))
    case(f"{label}: an input with a forward-mode tangent", raises("NotImplementedError", fwad))(
        lambda make=make, call=call: _oa_tangent(make, call))


_oa_cases("aten.elu_backward.grad_input (the model)", _OA_ATEN[0], _OA_ATEN[1], _OA_ATEN[2], _OA_ATEN[4])
for _label, (_op, _make, _raw, _py, _fn) in _OA_CALLS.items():
    _oa_cases(f"{_label}.grad_input", _op, _make, _raw, _fn)
    _oa_cases(f"torch_aclnn.{_label}(out=)", _op, _make, _py, _fn)
case("torch.add(out=) (the model): input requires grad",
     raises("RuntimeError", _OA_RG.format("add")))(
    lambda: torch.add(torch.ones(4, requires_grad=True), 1, out=torch.empty(4)))
case("torch.add(out=) (the model): out a leaf that requires grad",
     raises("RuntimeError", _OA_RG.format("add")))(
    lambda: torch.add(torch.ones(4), 1, out=torch.empty(4, requires_grad=True)))


def _oa_repro_saved():  # returned a.grad == 1 (y._version stayed 0)
    a=torch.rand(4,requires_grad=True); y=a.exp(); torch.ops.torch_aclnn.elu_backward.grad_input(torch.ones(4),1,1,1,False,torch.ones(4),grad_input=y.detach()); y.sum().backward()  # noqa: E501,E702,E231
    return a.grad


def _oa_repro_leaf():  # was accepted silently
    o = torch.zeros(4, requires_grad=True)
    torch.ops.torch_aclnn.elu_backward.grad_input(torch.ones(4), 1, 1, 1, False, torch.ones(4), grad_input=o)
    return o


def _oa_repro_wrapper():  # returned out without a grad_fn: autograd silently dropped
    g = torch.rand(1, 1, 2, 2, 2, requires_grad=True)
    o = torch.empty(1, 1, 1, 1, 1)
    return torch_aclnn.upsample_nearest3d_backward(g, [2, 2, 2], [1, 1, 1, 1, 1], out=o)


case("reproducer: .grad_input into a tensor saved for backward", raises("RuntimeError", _OA_INPLACE))(
    _oa_repro_saved)
case("reproducer: .grad_input into a leaf that requires grad",
     raises("RuntimeError", _OA_RG.format("elu_backward")))(_oa_repro_leaf)
case("reproducer: Python out= wrapper with grad_output requiring grad",
     raises("RuntimeError", _OA_RG.format("upsample_nearest3d_backward")))(_oa_repro_wrapper)
# (end of the out= section)


XFAIL: dict = {}


# ---------------------------------------------------------------------------
# The child: run the named cases, one JSON line each.

def _run_child(names):
    sys.path.insert(0, HERE)
    for name in names:
        fn, expect = CASES[name]
        rec = {"case": name}
        try:
            out = fn()
        except Exception as e:  # noqa: BLE001 - recorded and judged by the parent
            rec.update(outcome="raised", exc=type(e).__name__, msg=str(e).splitlines()[0][:400] if str(e) else "")
            if expect[0] == "ok":
                rec["error"] = f"valid by the spec but raised {type(e).__name__}: {rec['msg']}"
        else:
            rec["outcome"] = "returned"
            if expect[0] == "ok":
                try:
                    expect[1](out)
                except AssertionError as e:
                    rec["error"] = f"wrong result: {str(e)[:400]}"
            else:
                rec["error"] = f"returned instead of raising {expect[1]}"
        if expect[0] == "raises" and rec["outcome"] == "raised":
            if not re.fullmatch(expect[1], rec["exc"]):
                rec["error"] = f"raised {rec['exc']}, expected {expect[1]}: {rec['msg']}"
            elif not re.search(expect[2], rec["msg"]):
                rec["error"] = f"message {rec['msg']!r} does not match {expect[2]!r}"
        print(json.dumps(rec), flush=True)


TIMEOUT = float(os.environ.get("TORCH_ACLNN_ADVERSARIAL_TIMEOUT", "300"))


def run_cases(names):
    """{name: record}; a case during which the child died or hung gets an
    'error' record, and the cases after it run in a fresh child."""
    results, todo = {}, list(names)
    while todo:
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), *todo], capture_output=True, text=True,
                               timeout=TIMEOUT, cwd=os.path.dirname(HERE))
            out, err, rc = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err, rc = "timeout", "timeout"
        for line in out.splitlines():
            if line.startswith("{"):
                rec = json.loads(line)
                results[rec["case"]] = rec
        before = len(todo)
        todo = [n for n in todo if n not in results]
        if todo and len(todo) == before and not out.strip():  # died before the first case: give up
            return {**results, **{n: {"case": n, "error": f"child failed (rc={rc}): {err[-3000:]}"} for n in todo}}
        if todo:
            results[todo[0]] = {"case": todo[0], "error": f"child died (rc={rc}) in this case: {err[-3000:]}"}
            todo = todo[1:]
    return results


@pytest.fixture(scope="module")
def results():
    return run_cases(list(CASES))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=XFAIL[n], strict=True))
                                  if n in XFAIL else n for n in CASES])
def test_adversarial(results, name):
    rec = results[name]
    assert "error" not in rec, f"{name}: {rec['error']}"


if __name__ == "__main__":
    _run_child(sys.argv[1:])
