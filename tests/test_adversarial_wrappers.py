"""Adversarial arguments to the Python wrappers (docs/spec.md, "Edge rules"):
each names the argument as the user passed it in the contract's error, and
the values torch's own functions accept stay accepted; run in a child process
as every adversarial case (tests/adversarial.py).
"""
import sys

import torch

import torch_aclnn as _ta  # (the public wrappers)
from torch_aclnn.testing import upsample as _upsample

from adversarial import (CODE, I64_MIN, _s, _t, _x, case_tests, matches, ops, raises, registrar, run_child,
                         torchs_error)

CASES = {}  # name -> (fn, expectation); see adversarial.py
case = registrar(CASES)

# --- Python wrapper errors (edge rules) ------------------------------------
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

results, test_adversarial = case_tests(__file__, CASES)

if __name__ == "__main__":
    run_child(CASES, sys.argv[1:])
