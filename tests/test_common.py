"""Tests every operator gets, generic over the OpInfos of torch_aclnn.testing:
the float64 spec reference, bitwise equality with aten where the spec promises
it, the out= overload, Meta/fake kernels, opcheck, gradcheck/gradgradcheck,
torch.compile, and every contract error on real, meta and compiled calls."""
import logging
import os
import re
import sys

import pytest
import torch

import torch_aclnn
from torch_aclnn.testing import OPS, first, make_layout, node_name, results, tolerance

OP_DTYPES = [pytest.param(name, dt, id=f"{name}-{str(dt).replace('torch.', '')}")
             for name, info in OPS.items() for dt in info.dtypes]
OP_NAMES = list(OPS)
FLOAT_OPS = [name for name in OPS if torch.float64 in OPS[name].dtypes]


def _cpu(sample):
    return sample.map_tensors(lambda t: t.detach().cpu())


def _grad_inputs(info, sample):
    return [sample.args[i] for i in info.grad_argnums if isinstance(sample.args[i], torch.Tensor)]


def _call_with(info, sample, tensors):
    """info.op(sample) with its differentiable args replaced by `tensors`
    (every result: gradcheck leaves out the integer ones)
    (without list item assignment: torch 2.8's dynamo cannot trace that one
    with dynamic=True, where the index is symbolic)."""
    replaced = dict(zip(info.grad_argnums, tensors))
    args = [replaced[i] if i in replaced else a for i, a in enumerate(sample.args)]
    return info.op(*args, **sample.kwargs)


def test_registry_is_every_operator():
    """torch_aclnn/_registry.py names exactly the schemas the extension
    defines, and every layer driven by it covers each of them."""
    from torch_aclnn import _registry, npu

    ours = [s for s in torch._C._jit_get_all_schemas() if s.name.startswith("torch_aclnn::")]
    functional = {s.name.split("::")[1] for s in ours if not s.overload_name}
    assert set(_registry.OPERATORS) == set(OPS) == functional
    assert set(npu.KERNELS) == functional | {f"{op}.grad_input" for op in functional if op.endswith("_backward")}


@pytest.mark.parametrize("name,dtype", OP_DTYPES)
def test_matches_reference(device, name, dtype):
    info = OPS[name]
    n = 0
    for s in info.samples(device, dtype):
        outs = results(info.op(*s.args, **s.kwargs))
        refs = results(info.reference(*_cpu(s).args, **_cpu(s).kwargs))
        assert len(outs) == len(refs), s
        for i, (out, ref) in enumerate(zip(outs, refs)):
            assert out.device.type == torch.device(device).type
            assert out.shape == ref.shape, s
            if i > 0:  # indices
                assert out.dtype == ref.dtype, s
            elif info.result_dtype is None:
                assert out.dtype == dtype, s
            else:
                assert out.dtype == info.result_dtype(s), s
            torch.testing.assert_close(out.cpu().to(ref.dtype), ref, check_dtype=False, equal_nan=True,
                                       msg=lambda m: f"{s}: {m}", **tolerance(out.dtype))
        n += 1
    assert n > 0


@pytest.mark.parametrize("name,dtype", [p for p in OP_DTYPES if p.values[1] in (torch.float32, torch.float64)])
def test_bitwise_equal_to_aten(device, name, dtype):
    info = OPS[name]
    if info.aten is None:
        pytest.skip(f"{name} has no aten counterpart")
    exact = [s for s in info.samples(device, dtype) if s.exact_vs_aten]
    assert exact, f"{name}: no sample promises bitwise equality"
    for s in exact:
        for ours, theirs in zip(results(info.op(*s.args, **s.kwargs)), results(info.aten(*s.args, **s.kwargs)),
                                strict=True):
            assert torch.equal(ours, theirs), f"{s}: max diff {(ours.double() - theirs.double()).abs().max()}"


@pytest.mark.parametrize("name,dtype", [p for p in OP_DTYPES if OPS[p.values[0]].out_overload])
def test_out_variant(device, name, dtype):
    info = OPS[name]
    for s in info.samples(device, dtype):
        expected = info.op(*s.args, **s.kwargs)
        for fmt in (torch.contiguous_format, torch.channels_last_3d):
            if fmt == torch.channels_last_3d and (expected.dim() != 5 or info.out_contiguous_only):
                continue
            out = torch.full_like(expected, float("nan") if dtype.is_floating_point else 7, memory_format=fmt)
            assert info.out_op(*s.args, **s.kwargs, **{info.out_kwarg: out}) is None  # schema: -> ()
            assert torch.equal(out, expected), s


@pytest.mark.parametrize("name", [n for n in OPS if OPS[n].out_overload])
def test_out_variant_opcheck_and_compile(name):
    """The out= overload mutates its argument and returns nothing, so
    functionalization (torch.compile) handles it like any mutating op."""
    info = OPS[name]
    dtype = torch.float32 if torch.float32 in info.dtypes else info.dtypes[0]
    for i, s in enumerate(info.samples("cpu", dtype)):
        if i >= 4:
            break
        expected = info.op(*s.args, **s.kwargs)
        torch.library.opcheck(info.out_op, s.args, {**s.kwargs, info.out_kwarg: expected.new_empty(expected.shape)})
        torch._dynamo.reset()

        def fn(*args, **kwargs):
            out = expected.new_empty(expected.shape)
            info.out_op(*args, **kwargs, **{info.out_kwarg: out})
            return out * 1

        compiled = torch.compile(fn, fullgraph=True, dynamic=True, backend="aot_eager")
        assert torch.equal(compiled(*s.args, **s.kwargs), expected), s


@pytest.mark.parametrize("name", OP_NAMES)
def test_meta_matches_real(name):
    """The Meta (fake) kernel gives the real kernel's shape, dtype and strides."""
    info = OPS[name]
    for s in info.samples("cpu", info.dtypes[0]):
        reals = results(info.op(*s.args, **s.kwargs))
        metas = results(info.op(*s.map_tensors(lambda t: t.detach().to("meta")).args, **s.kwargs))
        for real, meta in zip(reals, metas, strict=True):
            assert meta.device.type == "meta"
            assert (meta.shape, meta.dtype) == (real.shape, real.dtype), s
            if real.numel() > 1:
                assert meta.stride() == real.stride(), s


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("name", OP_NAMES)
def test_opcheck(device, name, requires_grad):
    info = OPS[name]
    dtype = torch.float64 if torch.float64 in info.dtypes else info.dtypes[0]
    if requires_grad and not dtype.is_floating_point:
        pytest.skip("integer dtypes cannot require grad")
    for s in info.samples(device, dtype, requires_grad):
        torch.library.opcheck(info.op, s.args, s.kwargs)


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_gradcheck(device, name):
    info = OPS[name]
    for s in info.samples(device, torch.float64, True):
        inputs = _grad_inputs(info, s)
        if not inputs or any(t.numel() == 0 for t in inputs):
            continue
        fn = lambda *ts: _call_with(info, s, ts)  # noqa: E731
        assert torch.autograd.gradcheck(fn, inputs, fast_mode=True), s
        assert torch.autograd.gradgradcheck(fn, inputs, fast_mode=True), s


def _python_calls(fn):
    """(file, function) of every Python function entered while fn runs."""
    calls = []

    def profile(frame, event, arg):
        if event == "call":
            calls.append((frame.f_code.co_filename, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_plain_autograd_records_and_differentiates_without_python(device, name):
    """The C++ Autograd kernel (csrc/autograd/kernel.cpp) sends a call that needs no
    gradient straight to the backend kernel; a call with an input that
    requires grad is recorded by the operator's C++ node, and its backward
    runs the C++ formula: neither enters torch_aclnn's Python (the
    autograd.Function is for tangents and torch.func only)."""
    info = OPS[name]
    s = next(iter(info.samples(device, torch.float64, True)))
    op = info.op

    def ours(calls):  # any function of the torch_aclnn package, or torch.library's Python autograd kernel
        return [(f, fn) for f, fn in calls
                if f"torch_aclnn{os.sep}" in f or (f.endswith("autograd.py") and "_library" in f)]

    with torch.no_grad():
        assert not ours(_python_calls(lambda: op(*s.args, **s.kwargs)))
    plain = s.map_tensors(lambda t: t.detach())
    assert not ours(_python_calls(lambda: op(*plain.args, **plain.kwargs)))
    out = []
    assert not ours(_python_calls(lambda: out.append(op(*s.args, **s.kwargs))))
    result = first(out[0])
    assert result.grad_fn.name() == node_name(info.name), result.grad_fn.name()
    assert all(not r.requires_grad for r in results(out[0])[1:])  # indices
    inputs = [t for t in s.tensors() if t.requires_grad]
    grads = []
    assert not ours(_python_calls(lambda: grads.extend(torch.autograd.grad(result.sum(), inputs))))
    assert all(g is not None for g in grads)


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_recorded_call_saves_only_the_tensors_its_formula_keeps(device, name):
    """A recorded call saves (as torch.autograd.graph's hooks see it) exactly
    the arguments its derivative keeps by value: an argument whose shape,
    dtype and device are all the formula needs is kept as those, not as a
    tensor (torch.utils.checkpoint compares these counts with a recomputation
    that may run aten's operators)."""
    info = OPS[name]
    s = next(iter(info.samples(device, torch.float64, True)))
    keep = torch_aclnn._C._derivative_keep(f"torch_aclnn::{info.name}")
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        info.op(*s.args, **s.kwargs)
    assert len(packed) == keep.count("value"), (keep, [t.shape for t in packed])
    assert all(k in ("value", "like", None) for k in keep)


class _NoGrad(torch.autograd.Function):
    """The identity, whose backward gives no gradient (None)."""

    @staticmethod
    def forward(ctx, t):
        return t.clone()

    @staticmethod
    def backward(ctx, grad):
        return None


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_recorded_node_keeps_autograd_rules(device, name):
    """The recorded node follows the rules of aten's nodes: a second backward
    through a freed graph raises, retain_graph keeps it; a kept tensor
    overwritten in place makes backward raise; an undefined incoming gradient
    (a backward that returned None) gives no gradient, not zeros."""
    info = OPS[name]
    s = next(iter(info.samples(device, torch.float64, True)))
    inputs = [t for t in s.tensors() if t.requires_grad]
    keep = torch_aclnn._C._derivative_keep(f"torch_aclnn::{info.name}")
    out = first(info.op(*s.args, **s.kwargs))
    first_grads = torch.autograd.grad(out.sum(), inputs, retain_graph=True)
    again = torch.autograd.grad(out.sum(), inputs)
    assert all(torch.equal(a, b) for a, b in zip(first_grads, again))
    if "value" in keep:  # (a node that keeps no tensor has nothing to free, as aten's)
        with pytest.raises(RuntimeError, match="second time"):
            torch.autograd.grad(out.sum(), inputs)

    got = torch.autograd.grad(_NoGrad.apply(first(info.op(*s.args, **s.kwargs))).sum(), inputs, allow_unused=True)
    assert all(g is None for g in got), got

    kept = [i for i, a in enumerate(s.args) if isinstance(a, torch.Tensor) and keep[i] == "value"]
    for k in kept:  # each kept argument, overwritten after the call
        args = [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                for a in s.args]
        leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        views = [a.view_as(a) if i == k and a.requires_grad else a for i, a in enumerate(args)]
        out = first(info.op(*views, **s.kwargs))
        with torch.no_grad():
            views[k].add_(0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            torch.autograd.grad(out.sum(), leaves)
    schema = getattr(torch.ops.torch_aclnn, info.name.split(".")[0]).default._schema
    if "value" in keep[len(schema.arguments):]:  # a kept result: the indices
        out, indices = info.op(*s.args, **s.kwargs)
        indices.add_(0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            torch.autograd.grad(out.sum(), inputs)


def test_inference_tensor_kept_for_backward_raises_before_the_kernel():
    """A kept argument that cannot be saved (an inference tensor) raises torch's
    error, as aten's max_unpool3d does, before the kernel runs: an invalid index
    in it is not reported."""
    pooled, idx = torch.nn.functional.max_pool3d(torch.randn(1, 1, 4, 4, 4), 2, return_indices=True)
    with torch.inference_mode():
        bad = idx.clone()
        bad[0, 0, 0, 0, 0] = 10 ** 6
    x = pooled.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        torch.nn.functional.max_unpool3d(x, bad, 2)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        torch.ops.torch_aclnn.max_unpool3d(x, bad, [4, 4, 4], [2, 2, 2], [0, 0, 0])


def test_long_chain_of_recorded_calls_is_freed():
    """A graph of many recorded calls in a row (each node holds the previous
    one) is freed when its last result goes, without deep recursion, as
    aten's are."""
    import weakref

    x = torch.randn(1, requires_grad=True)
    y = x
    for i in range(100_000):
        y = torch.ops.torch_aclnn.elu(y, 1.0, 1.0, 1.0)
        if i == 10:
            early = weakref.ref(y)  # held by the node of the next call, and so on up the chain
    assert early() is not None
    del y
    assert early() is None


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_compiled_autograd(device, name):
    """Compiled autograd traces the C++ node's backward into one graph
    (fullgraph): the eager engine's gradients."""
    from torch._dynamo import compiled_autograd

    info = OPS[name]
    s = next(iter(info.samples(device, torch.float32, True)))
    inputs = _grad_inputs(info, s)
    expected = torch.autograd.grad(first(info.op(*s.args, **s.kwargs)).sum(), inputs)
    out = first(info.op(*s.args, **s.kwargs))
    torch._dynamo.reset()
    with compiled_autograd._enable(torch.compile(backend="aot_eager", fullgraph=True)):
        got = torch.autograd.grad(out.sum(), inputs)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=0, atol=0)


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_compile_forward_backward(device, name):
    """torch.compile(fullgraph=True, dynamic=True) of the op, and the backward
    AOTAutograd derives from its autograd formula, match eager."""
    info = OPS[name]
    eager = lambda s, *ts: _call_with(info, s, ts)  # noqa: E731
    for s in info.samples(device, torch.float32, True):
        inputs = _grad_inputs(info, s)
        if any(t.numel() == 0 for t in inputs):
            continue
        torch._dynamo.reset()  # one compilation per sample (layouts and sizes differ)
        compiled = torch.compile(eager, fullgraph=True, dynamic=True, backend="aot_eager")
        runs = []
        for fn in (eager, compiled):
            leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
            out = fn(s, *leaves)
            (first(out) * first(out)).sum().backward()
            runs.append(([r.detach() for r in results(out)], [t.grad for t in leaves]))
        (out_e, grads_e), (out_c, grads_c) = runs
        torch.testing.assert_close(out_c, out_e, msg=lambda m: f"{s}: {m}")
        for ge, gc in zip(grads_e, grads_c):
            torch.testing.assert_close(gc, ge, msg=lambda m: f"{s}: {m}")


def _error_params():
    for name, info in OPS.items():
        for i, e in enumerate(info.errors("cpu")):
            yield pytest.param(name, i, id=f"{name}-{re.sub(r'[^A-Za-z0-9]+', '_', e.sample.desc)}")


ERROR_PARAMS = list(_error_params())


def _expect(e, name):
    return rf"^\[torch_aclnn {e.code}\] {name}: .*{e.match}"


def _target(info, e):
    return info.op if e.overload == "default" else getattr(info.packet, e.overload)


@pytest.mark.parametrize("name,index", ERROR_PARAMS)
def test_contract_error(device, name, index):
    info = OPS[name]
    e = list(info.errors(device))[index]
    with pytest.raises(e.exc, match=_expect(e, name)):
        _target(info, e)(*e.sample.args, **e.sample.kwargs)


@pytest.mark.parametrize("name,index", ERROR_PARAMS)
def test_contract_error_meta(name, index):
    info = OPS[name]
    e = list(info.errors("cpu"))[index]
    if e.data_dependent:
        pytest.skip("data-dependent rule: checked where the data is read (real kernels)")
    s = e.sample.map_tensors(lambda t: t.to("meta"))
    with pytest.raises(e.exc, match=_expect(e, name)):
        _target(info, e)(*s.args, **s.kwargs)


@pytest.mark.parametrize("name,index", ERROR_PARAMS)
def test_contract_error_compiled(name, index):
    """Under torch.compile the fake kernel raises; dynamo re-raises it as a
    TorchRuntimeError whose message carries the original type and message,
    and torch's fake-tensor code logs no traceback of it first."""
    info = OPS[name]
    e = list(info.errors("cpu"))[index]
    if e.data_dependent:
        pytest.skip("data-dependent rule: checked where the data is read (real kernels)")
    torch._dynamo.reset()
    target = _target(info, e)
    fn = torch.compile(lambda *a, **k: target(*a, **k), backend="eager", fullgraph=True, dynamic=True)
    logged = []
    handler = logging.Handler()
    handler.emit = logged.append
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    fake_log.addHandler(handler)
    try:
        with pytest.raises(Exception) as raised:
            fn(*e.sample.args, **e.sample.kwargs)
    finally:
        fake_log.removeHandler(handler)
    text = f"{type(raised.value).__name__}: {raised.value}"
    assert e.exc.__name__ in text and re.search(rf"\[torch_aclnn {e.code}\] {name}: .*{e.match}", text), text
    assert not logged, [r.getMessage() for r in logged]


@pytest.mark.parametrize("name", [n for n in OPS if OPS[n].aten is not None and torch.float32 in OPS[n].dtypes])
def test_nan_inf_propagate_like_aten(name):
    """NaN and ±Inf in the data give aten's result, NaN positions included."""
    info = OPS[name]
    n = 0
    for s in info.samples("cpu", torch.float32):
        if not s.exact_vs_aten:
            continue
        t = s.args[0]
        if not t.dtype.is_floating_point or t.numel() < 3:
            continue
        values = t.detach().contiguous().clone()
        flat = values.view(-1)
        flat[0], flat[flat.numel() // 2], flat[-1] = float("nan"), float("inf"), -float("inf")
        poisoned = make_layout(values, s.layout)  # same layout as the sample
        s = s.__class__(args=(poisoned,) + tuple(s.args[1:]), kwargs=s.kwargs, desc=s.desc)
        ours, theirs = results(info.op(*s.args, **s.kwargs)), results(info.aten(*s.args, **s.kwargs))
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{s}: {m}")
        n += 1
    assert n > 0


def test_public_plans_keep_results_not_errors(monkeypatch):
    """The Python API's plans (an output size, a window) are kept per input
    shape and plain argument values and types; a call whose arguments break
    the contract raises every time, also after the same values of other
    types were planned."""
    from torch_aclnn.ops import _calls
    monkeypatch.setattr(_calls, "_PLANS", {})
    x = torch.randn(1, 2, 2, 2, 2)
    pooled, indices = torch.nn.functional.max_pool3d(x, 2, return_indices=True)
    for _ in range(2):
        assert torch.equal(torch_aclnn.max_unpool3d(pooled, indices, 2),
                           torch.nn.functional.max_unpool3d(pooled, indices, 2))
        assert torch.equal(torch_aclnn.upsample_nearest3d(x, scale_factor=2),
                           torch.nn.functional.interpolate(x, scale_factor=2))
        assert torch.equal(torch_aclnn.max_pool3d_with_indices(x, 2)[1], indices)
    assert len(_calls._PLANS) == 3
    for _ in range(2):
        with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] max_unpool3d: kernel_size must be an int"):
            torch_aclnn.max_unpool3d(pooled, indices, 2.0)
        with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] max_pool3d_with_indices: kernel_size"):
            torch_aclnn.max_pool3d_with_indices(x, True)
        with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] upsample_nearest3d: input must be 5-D"):
            torch_aclnn.upsample_nearest3d(x[0], scale_factor=2)
    assert len(_calls._PLANS) == 3


def test_plan_keys_tell_argument_types_apart():
    """A plan's key is equal only for equal values of equal types: a list of
    ints (keyed by its values alone), a list holding a float, a scalar, None
    and a bool all differ; a list and a tuple of the same ints do not."""
    from torch_aclnn.ops._calls import _plan_key
    keys = [_plan_key((), (v,)) for v in ([2, 2], [2.0, 2], 2, 2.0, None, True, [], [2], (2,))]
    assert keys[-2] == keys[-1]
    assert len(set(keys[:-1])) == len(keys) - 1
    assert _plan_key((), ([True, 2],)) is None and _plan_key((), ("2",)) is None
    assert _plan_key((1, 2), ()) != _plan_key((1, 3), ())


def test_common_call_and_checked_call_agree():
    """Each Python function sends a call whose arguments have the schema's own
    types straight to the operator and checks any other call first: both
    forms of one call give the same bits."""
    import numpy as np
    ta = torch_aclnn
    x, g = torch.randn(1, 2, 2, 2, 2, dtype=torch.float64), torch.randn(1, 2, 4, 4, 4, dtype=torch.float64)
    t = torch.randn(1, 2, 2, 2, 2, dtype=torch.float64)
    pooled, idx = torch.nn.functional.max_pool3d(g, 2, return_indices=True)
    i64 = np.int64
    pairs = [
        (lambda: ta.elu(x, 0.5), lambda: ta.elu(x, np.float64(0.5))),
        (lambda: ta.selu(x), lambda: ta.elu(x, ta.ops.elu.SELU_ALPHA, scale=ta.ops.elu.SELU_SCALE)),
        (lambda: ta.elu_backward(x, 1.0, 2.0, 1.0, False, t), lambda: ta.elu_backward(x, 1, 2, 1, False, t)),
        (lambda: ta.smooth_l1_loss(x, t, "sum", 0.5), lambda: ta.smooth_l1_loss(x, t, 2, np.float32(0.5))),
        (lambda: ta.smooth_l1_loss_backward(x, x, t, "none", 2.0), lambda: ta.smooth_l1_loss_backward(x, x, t, 0, 2)),
        (lambda: ta.upsample_nearest3d_backward(g, [4, 4, 4], [1, 2, 2, 2, 2], 2.0, 2.0, 2.0),
         lambda: ta.upsample_nearest3d_backward(g, (i64(4),) * 3, torch.Size([1, 2, 2, 2, 2]), 2, 2, 2)),
        (lambda: ta.upsample_nearest_exact3d_backward(g, [4, 4, 4], [1, 2, 2, 2, 2]),
         lambda: ta.upsample_nearest_exact3d_backward(g, [i64(4)] * 3, [1, 2, i64(2), 2, 2])),
        (lambda: ta.max_unpool3d_backward(g, pooled, idx, [4, 4, 4], [2, 2, 2], [0, 0, 0]),
         lambda: ta.max_unpool3d_backward(g, pooled, idx, [i64(4)] * 3, (2, 2, 2), [0, 0, i64(0)])),
        (lambda: ta.max_pool3d_with_indices_backward(pooled, g, idx, 2),
         lambda: ta.max_pool3d_with_indices_backward(pooled, g, idx, [i64(2)] * 3, None, [0], (1, 1, 1))),
    ]
    for common, checked in pairs:
        assert torch.equal(common(), checked())


def test_common_call_beyond_int64_gets_the_contracts_error():
    """An int-array element beyond int64 passes the common call's type test;
    torch's parser refuses it, and the checks then name it."""
    g = torch.randn(1, 2, 4, 4, 4)
    pooled, idx = torch.nn.functional.max_pool3d(g, 2, return_indices=True)
    big = 2 ** 63
    with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] max_unpool3d_backward: output_size .*int64"):
        torch_aclnn.max_unpool3d_backward(g, pooled, idx, [4, 4, big], [2, 2, 2], [0, 0, 0])
    with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] upsample_nearest3d_backward: input_size .*int64"):
        torch_aclnn.upsample_nearest3d_backward(g, [4, 4, 4], [1, 2, 2, 2, -big - 1])


def test_common_call_beyond_int64_compiled():
    """Compiled, the same calls get the contract's error too (the checks run at trace time)."""
    g = torch.randn(1, 2, 4, 4, 4)
    pooled, idx = torch.nn.functional.max_pool3d(g, 2, return_indices=True)
    calls = [lambda g: torch_aclnn.upsample_nearest3d_backward(g, [4, 4, 2 ** 63], [1, 2, 2, 2, 2]),
             lambda g: torch_aclnn.max_unpool3d_backward(g, pooled, idx, [4, 4, 2 ** 63], [2, 2, 2], [0, 0, 0])]
    # (torch 2.8's dynamo keeps only the class of an error raised while it traces, under fullgraph)
    bare = torch.torch_version.TorchVersion(torch.__version__) < (2, 9)
    for call in calls:
        for fullgraph in (False, True):
            torch._dynamo.reset()
            with pytest.raises(Exception) as raised:
                torch.compile(call, backend="aot_eager", fullgraph=fullgraph)(g)
            if fullgraph and bare:
                assert "ValueError" in str(raised.value.__cause__ or raised.value.__context__), raised.value
                continue
            assert re.search(r"\[torch_aclnn 161002\] \w+_backward: output_size .*int64", str(raised.value)), \
                str(raised.value)
    with pytest.raises(ValueError) as raised:  # (eager: the parser's refusal is not the error's context)
        calls[0](g)
    assert raised.value.__context__ is None


def test_kept_plans_cannot_be_changed_by_a_handler():
    """A kept plan is handed to the operator on every later call, as tuples: a
    __torch_function__ handler that changes the lists it gets changes only its own call."""
    class Shrink(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            for a in args:
                if isinstance(a, list):
                    a[:] = [min(e, 6) for e in a]
            return func(*args, **(kwargs or {}))

    x = torch.randn(1, 1, 4, 4, 4)
    with Shrink():
        torch_aclnn.upsample_nearest3d(x, size=[8, 8, 8])
        torch_aclnn.upsample_nearest3d(x, size=[8, 8, 8])
    assert torch_aclnn.upsample_nearest3d(x, size=[8, 8, 8]).shape == (1, 1, 8, 8, 8)


def test_max_pool3d_with_indices_returns_a_tuple_under_fx():
    class Pool(torch.nn.Module):
        def forward(self, x):
            out = torch_aclnn.max_pool3d_with_indices(x, 2)
            return out[0] * len(out)

    x = torch.randn(1, 1, 4, 4, 4)
    assert torch.equal(torch.fx.symbolic_trace(Pool())(x), Pool()(x))


@pytest.mark.parametrize("call", [
    lambda t: torch_aclnn.elu([1.0, 2.0]),
    lambda t: torch_aclnn.selu(t.numpy()),
    lambda t: torch_aclnn.elu_backward(t, 1.0, 1.0, 1.0, False, [1.0]),
    lambda t: torch_aclnn.smooth_l1_loss(t, [0.0]),
    lambda t: torch_aclnn.smooth_l1_loss_backward(t, t, 1.0, "mean", 1.0),
    lambda t: torch_aclnn.upsample_nearest3d([[[[[1.0]]]]], size=2),
    lambda t: torch_aclnn.upsample_nearest3d_backward(t.numpy(), [1, 1, 1], [1, 1, 1, 1, 1]),
    lambda t: torch_aclnn.max_unpool3d(t, [[0]], 1),
    lambda t: torch_aclnn.max_unpool3d_backward(t, t, t.numpy(), [1, 1, 1], [1, 1, 1], [0, 0, 0]),
    lambda t: torch_aclnn.max_pool3d_with_indices(t.tolist(), 1),
    lambda t: torch_aclnn.max_pool3d_with_indices_backward(t, t, (0,), 1),
], ids=lambda c: "")
def test_a_non_tensor_for_a_tensor_is_the_contracts_type_error(call):
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] \w+: \w+ must be a Tensor, got "):
        call(torch.zeros(1, 1, 1, 1, 1))


_X5 = torch.zeros(1, 1, 2, 2, 2)
_BACKWARD_OUT = {  # every backward wrapper with its out=, the other arguments valid
    "elu_backward": lambda out: torch_aclnn.elu_backward(_X5, 1.0, 1.0, 1.0, False, _X5, out=out),
    "smooth_l1_loss_backward": lambda out: torch_aclnn.smooth_l1_loss_backward(_X5, _X5, _X5, "mean", 1.0, out=out),
    "upsample_nearest3d_backward": lambda out: torch_aclnn.upsample_nearest3d_backward(
        _X5, [2, 2, 2], [1, 1, 1, 1, 1], out=out),
    "upsample_nearest_exact3d_backward": lambda out: torch_aclnn.upsample_nearest_exact3d_backward(
        _X5, [2, 2, 2], [1, 1, 1, 1, 1], out=out),
    "max_unpool3d_backward": lambda out: torch_aclnn.max_unpool3d_backward(
        _X5, _X5[..., :1, :1, :1], torch.zeros(1, 1, 1, 1, 1, dtype=torch.int64), [2, 2, 2], [2, 2, 2], [0, 0, 0],
        out=out),
    "max_pool3d_with_indices_backward": lambda out: torch_aclnn.max_pool3d_with_indices_backward(
        _X5[..., :1, :1, :1], _X5, torch.zeros(1, 1, 1, 1, 1, dtype=torch.int64), 2, out=out),
}


@pytest.mark.parametrize("name", list(_BACKWARD_OUT))
def test_a_non_tensor_out_is_the_contracts_type_error(name):
    """out= of every backward wrapper: a tensor is written and returned; anything else is
    a tagged TypeError naming out (it reached the operator as grad_input)."""
    call = _BACKWARD_OUT[name]
    want = call(None)
    out = torch.full_like(want, 7.0)
    assert call(out) is out and torch.equal(out, want)
    for bad in ([1, 2, 3], want.numpy(), 1.0):
        with pytest.raises(TypeError, match=rf"^\[torch_aclnn 161002\] {name}: out must be a Tensor, got "
                                            rf"{type(bad).__name__}$"):
            call(bad)


def test_int_arguments_beyond_the_schema_get_the_contracts_error():
    t = torch.zeros(1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] smooth_l1_loss: reduction .*int64"):
        torch_aclnn.smooth_l1_loss(t, t, 2 ** 63)
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] upsample_nearest3d_backward: output_size must be "
                                        r"a list of ints, got 1 \(int\)"):
        torch_aclnn.upsample_nearest3d_backward(t, 1, [1, 1, 1, 1, 1])
    with pytest.raises(TypeError, match=r"\[torch_aclnn 161002\] max_unpool3d_backward: stride must be a list"):
        torch_aclnn.max_unpool3d_backward(t, t, t.long(), [1, 1, 1], 1, [0, 0, 0])


def test_the_common_call_skips_the_checks(monkeypatch):
    """The common call of each function with a fast path takes no Python
    check (require, which every checked call runs first), and a call with
    other argument types does."""
    from torch_aclnn.ops import elu, max_unpool, smooth_l1, upsample

    class Checked(Exception):
        pass

    def refuse(*args, **kwargs):
        raise Checked
    for module in (elu, smooth_l1, upsample, max_unpool):
        monkeypatch.setattr(module, "require", refuse)
    x, g = torch.randn(1, 2, 2, 2, 2), torch.randn(1, 2, 4, 4, 4)
    pooled, idx = torch.nn.functional.max_pool3d(g, 2, return_indices=True)
    pairs = [
        (lambda: torch_aclnn.elu(x), lambda: torch_aclnn.elu(x, 1)),
        (lambda: torch_aclnn.selu(x), lambda: torch_aclnn.selu(x, inplace=0)),
        (lambda: torch_aclnn.elu_backward(x, 1.0, 1.0, 1.0, False, x),
         lambda: torch_aclnn.elu_backward(x, 1, 1, 1, False, x)),
        (lambda: torch_aclnn.smooth_l1_loss(x, x), lambda: torch_aclnn.smooth_l1_loss(x, x, 1)),
        (lambda: torch_aclnn.smooth_l1_loss_backward(x, x, x, "sum", 1.0),
         lambda: torch_aclnn.smooth_l1_loss_backward(x, x, x, "sum", 1)),
        (lambda: torch_aclnn.upsample_nearest3d_backward(g, [4, 4, 4], [1, 2, 2, 2, 2]),
         lambda: torch_aclnn.upsample_nearest3d_backward(g, [4, 4, 4], torch.Size([1, 2, 2, 2, 2]))),
        (lambda: torch_aclnn.max_unpool3d_backward(g, pooled, idx, [4, 4, 4], [2, 2, 2], [0, 0, 0]),
         lambda: torch_aclnn.max_unpool3d_backward(g, pooled, idx, [4, 4, 4], [2, 2, 2], torch.Size([0, 0, 0]))),
    ]
    for common, checked in pairs:
        common()
        with pytest.raises(Checked):
            checked()
