"""Adversarial inputs, run in a subprocess so that a crash (segfault, abort,
sanitizer report) or a hang is a test failure instead of killing pytest.

Each case either must raise its documented exception type with the
``[torch_aclnn 16100x] <op>:`` message (a contract error of
../shared/spec/OPS.md), or is valid by the spec and must give the float64
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


# --- upsample_nearest3d / _exact3d / backward (spec §1, §2) ----------------
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
    # <= 0 means "not given" (spec §1): all three ignored, the sizes decide.
    case(f"{op_name} scales negative (ignored)", matches(
        lambda x=x, mode=mode: __import__("reference").upsample_forward(mode, x, [6, 8, 10])))(
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


# --- elu / elu_backward (spec §3) -------------------------------------------
_v = torch.tensor([-2.0, -0.5, 0.0, 0.5, 3.0])
for label, a in (("nan", float("nan")), ("inf", float("inf")), ("-inf", float("-inf"))):
    # Any real number is a valid parameter; the formula decides the result.
    case(f"elu alpha {label}", matches(lambda a=a: __import__("reference").elu_forward(_v, a, 1.0, 1.0)))(
        lambda a=a: ops.elu(_v, a, 1.0, 1.0))
    case(f"elu input_scale {label}", matches(lambda a=a: __import__("reference").elu_forward(_v, 1.0, 1.0, a)))(
        lambda a=a: ops.elu(_v, 1.0, 1.0, a))
    case(f"elu_backward scale {label}", matches(
        lambda a=a: __import__("reference").elu_backward(_v, 1.0, a, 1.0, False, _v)))(
        lambda a=a: ops.elu_backward(_v, 1.0, a, 1.0, False, _v))
# A finite parameter beyond float32's range is refused for tensors computed in
# float32 (as aten's Scalar conversion refuses it); float64 tensors take it.
for arg, call in (("alpha", lambda: ops.elu(_v, 1e308, 1.0, 1.0)),
                  ("input_scale", lambda: ops.elu(_v, 1.0, 1.0, -1e308)),
                  ("scale", lambda: ops.elu_backward(_v.half(), 1.0, 1e39, 1.0, False, _v.half()))):
    fn = "elu_backward" if arg == "scale" else "elu"
    case(f"{fn} {arg} huge", raises("ValueError", CODE + rf"{fn}: {arg} must fit in float32 .* got -?1e\+\d+"))(call)
case("elu alpha huge float64", matches(
    lambda: __import__("reference").elu_forward(_v.double(), 1e308, 1.0, 1.0)))(
    lambda: ops.elu(_v.double(), 1e308, 1.0, 1.0))
case("elu alpha negative", matches(lambda: __import__("reference").elu_forward(_v, -1.5, 1.0, 1.0)))(
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
case("elu self 0-d (valid)", matches(lambda: __import__("reference").elu_forward(torch.tensor(-1.0))))(
    lambda: ops.elu(torch.tensor(-1.0)))
case("elu self 9-d", raises("ValueError", CODE + r"elu: self must have at most 8 dims, got 9-D"))(
    lambda: ops.elu(torch.zeros([1] * 9)))
case("elu_backward 9-d", raises("ValueError", CODE + r"elu_backward: grad_output must have at most 8 dims, got 9-D"))(
    lambda: ops.elu_backward(torch.zeros([1] * 9), 1, 1, 1, False, torch.zeros([1] * 9)))


# --- smooth_l1_loss / smooth_l1_loss_backward (spec §4) ---------------------
_s, _t = torch.tensor([1.0, -3.0, 0.25, 0.0]), torch.zeros(4)
for label, b in (("nan", float("nan")), ("-inf", float("-inf")), ("negative", -1e-300)):
    case(f"smooth_l1_loss beta {label}", raises("ValueError", CODE + r"smooth_l1_loss: beta must be >= 0"))(
        lambda b=b: ops.smooth_l1_loss(_s, _t, 1, b))
    case(f"smooth_l1_loss_backward beta {label}",
         raises("ValueError", CODE + r"smooth_l1_loss_backward: beta must be >= 0"))(
        lambda b=b: ops.smooth_l1_loss_backward(torch.ones(4), _s, _t, 0, b))
for label, b in (("inf", float("inf")), ("huge", 1e308), ("0", 0.0)):
    case(f"smooth_l1_loss beta {label} (valid)",
         matches(lambda b=b: __import__("reference").smooth_l1_forward(_s, _t, 0, b)))(
        lambda b=b: ops.smooth_l1_loss(_s, _t, 0, b))
    case(f"smooth_l1_loss_backward beta {label} (valid)",
         matches(lambda b=b: __import__("reference").smooth_l1_backward(torch.ones(4), _s, _t, 0, b)))(
        lambda b=b: ops.smooth_l1_loss_backward(torch.ones(4), _s, _t, 0, b))
for r in (3, -1, I64_MAX, I64_MIN):
    case(f"smooth_l1_loss reduction {r}", raises("ValueError", CODE + r"smooth_l1_loss: reduction must be 0"))(
        lambda r=r: ops.smooth_l1_loss(_s, _t, r, 1.0))
for dt, nm in ((torch.bool, "Bool"), (torch.complex64, "ComplexFloat"), (torch.int64, "Long")):
    case(f"smooth_l1_loss self {nm}", raises("TypeError", CODE + r"smooth_l1_loss: .*" + nm))(
        lambda dt=dt: ops.smooth_l1_loss(_s.to(dt), _t.to(dt), 0, 1.0))
case("smooth_l1_loss 0-d (valid)", matches(
    lambda: __import__("reference").smooth_l1_forward(torch.tensor(2.0), torch.tensor(0.5), 1, 1.0)))(
    lambda: ops.smooth_l1_loss(torch.tensor(2.0), torch.tensor(0.5), 1, 1.0))
case("smooth_l1_loss 9-d (valid)", matches(
    lambda: __import__("reference").smooth_l1_forward(_x(1, 2, 1, 1, 1, 1, 1, 2, 1), torch.zeros([1] * 9), 0, 1.0)))(
    lambda: ops.smooth_l1_loss(_x(1, 2, 1, 1, 1, 1, 1, 2, 1), torch.zeros([1] * 9), 0, 1.0))


# --- max_unpool3d / max_unpool3d_backward (spec §5) -------------------------
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
    lambda: __import__("reference").max_unpool3d_forward(_mx, torch.tensor([0, 7]).view(1, 1, 2, 1, 1), [2, 2, 2], *_sp)))(
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
    lambda: __import__("reference").max_unpool3d_forward(_mx, _mi, [2, 2, 2], [1, 1, 1], [0, 0, 0])))(
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


# Known failures (kernel findings, reported; the kernels are not changed here):
# name -> reason, run as strict xfails. None open at present.
# --- Python wrapper errors (edge rules) ------------------------------------
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
    lambda: __import__("reference").smooth_l1_backward(torch.tensor(2.), _s, _t, 1, 1.0)))(
    lambda: ops.smooth_l1_loss_backward(torch.tensor(2.), _s, _t, 1, 1.0))


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
