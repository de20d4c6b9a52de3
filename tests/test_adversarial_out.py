"""out= and autograd (docs/spec.md, "Edge rules"): every .grad_input overload
and Python out= wrapper against aten's own out= rules; run in a child
process as every adversarial case (tests/adversarial.py).
"""
import re
import sys

import torch
import torch.autograd.forward_ad as _fwAD

import torch_aclnn

from adversarial import _x, case_tests, matches, ops, raises, registrar, run_child

CASES = {}  # name -> (fn, expectation); see adversarial.py
case = registrar(CASES)

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

results, test_adversarial = case_tests(__file__, CASES)

if __name__ == "__main__":
    run_child(CASES, sys.argv[1:])
