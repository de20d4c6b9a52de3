"""The one-device rule (docs/spec.md, "Edge rules") on adversarial inputs:
eager, under FakeTensorMode and under torch.compile; run in a child process
as every adversarial case (tests/adversarial.py).
"""
import re
import sys

import torch

from torch_aclnn.testing import smooth_l1 as _smooth_l1

from adversarial import CODE, _s, _sp, _t, case_tests, matches, ops, raises, registrar, run_child

CASES = {}  # name -> (fn, expectation); see adversarial.py
case = registrar(CASES)

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

results, test_adversarial = case_tests(__file__, CASES)

if __name__ == "__main__":
    run_child(CASES, sys.argv[1:])
