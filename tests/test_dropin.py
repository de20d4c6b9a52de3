"""The drop-in rule on torch's own OpInfo samples: every sample (and error
input) of interpolate in every mode, elu, selu, celu, smooth_l1_loss,
huber_loss and max_unpool3d gives torch's result, gradient or own error
under patched(level="function"), through torch_aclnn.nn.functional, and through the
matching torch.nn module after convert(). Also: the functional API's
signatures, huber_loss's gradients, in-place ELU routing, convert()'s
summary and repr, TorchScript and torch.export."""
import inspect
import logging

import numpy as np

import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as F
from torch.testing._internal.common_methods_invocations import op_db

import torch_aclnn
import torch_aclnn.nn as tann
from torch_aclnn import _dropin
from torch_aclnn.ops import _calls
from torch_aclnn.testing import node_name
import torch_aclnn.nn.functional as TF
from patching import raises_torchs_error

NAMES = ("interpolate", "elu", "selu", "celu", "smooth_l1_loss", "huber_loss", "max_unpool3d", "max_pool3d",
         "leaky_relu", "avg_pool3d", "adaptive_avg_pool3d")
OPINFOS = [o for o in op_db if o.name in {f"nn.functional.{n}" for n in NAMES}]
DTYPES = (torch.float64, torch.float32, torch.bfloat16, torch.float16)
DISPATCHER = bool(torch_aclnn._patch.ROUTED_OPERATORS)  # (torch >= 2.9: patch(level="dispatcher") exists)


def _documented(name):
    """F.<name>'s documented signature: F.avg_pool3d is a builtin without one, so
    its docstring's first line (``avg_pool3d(input, kernel_size, ...) -> Tensor``)
    gives it; F.max_pool3d dispatches on return_indices through a (*args,
    **kwargs) wrapper, whose documented signature is max_pool3d_with_indices's."""
    if name == "max_pool3d":
        return inspect.signature(F.max_pool3d_with_indices)
    fn = getattr(F, name)
    if name == "avg_pool3d":
        head = fn.__doc__.strip().splitlines()[0]
        params = head[head.index("(") + 1:head.rindex(")")]
        return inspect.signature(eval(f"lambda {params}: None"))  # noqa: S307 (torch's own docstring)
    return inspect.signature(fn)


def _opinfo_id(o):
    return f"{o.name[len('nn.functional.'):]}{'.' + o.variant_test_name if o.variant_test_name else ''}"


def test_every_function_has_opinfos():
    assert {o.name[len("nn.functional."):] for o in OPINFOS} == set(NAMES)
    assert {o.variant_test_name for o in OPINFOS if o.name.endswith("interpolate")} >= {
        "nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"}


def _samples(o, dtype):
    return list(o.reference_inputs("cpu", dtype, requires_grad=dtype == torch.float64))


def _run(fn, s):
    """(result, gradients of the inputs that require grad) or the exception."""
    args = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in s.args]
    x = s.input.detach().requires_grad_(s.input.requires_grad)
    try:
        results = fn(x, *args, **s.kwargs)
    except Exception as e:  # noqa: BLE001 - compared with torch's below
        return e
    results = results if isinstance(results, tuple) else (results,)  # (max_pool3d: values, indices)
    out = results[0]
    leaves = [t for t in [x, *args] if isinstance(t, torch.Tensor) and t.requires_grad]
    grads = ()
    if leaves and out.requires_grad:
        g = torch.ones_like(out) if out.dim() == 0 else torch.randn(out.shape, dtype=out.dtype,
                                                                      generator=torch.Generator().manual_seed(0))
        grads = torch.autograd.grad(out, leaves, g, allow_unused=True)
    return tuple(r.detach() for r in results), grads


def _same(got, want, where, nan_input=None, nan_grad=True, close=None):
    """``nan_input``: where the input is NaN, elu's gradient is NaN here; aten's
    is NaN in its vectorised loop and 1 (the x > 0 branch) in its scalar tail,
    so those positions are not compared (docs/ops/elu.md). ``nan_grad=False``:
    nor is the NaN required there (the dispatcher level hands some gradients
    to aten's kernel: layouts)."""
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want), f"{where}: {got!r} vs torch's {want!r}"
        return
    assert not isinstance(got, Exception), f"{where}: raised {got!r}, torch returned a result"
    close = close or {}
    torch.testing.assert_close(got[0], want[0], equal_nan=True, msg=lambda m: f"{where}: {m}", **close)
    for a, b in zip(got[1], want[1]):
        if nan_input is not None and a is not None and a.shape == nan_input.shape:
            assert a[nan_input].isnan().all() or not nan_grad, where
            a, b = a[~nan_input], b[~nan_input]
        torch.testing.assert_close(a, b, equal_nan=True, msg=lambda m: f"{where} (gradient): {m}", **close)


def _module(o, s):
    """The torch.nn module behind F.<name> built from the sample's arguments,
    and how to call it with (input, *args, **kwargs) as F is called; None
    where the arguments have no module form (antialias, weight)."""
    name = o.name[len("nn.functional."):]
    signature = _documented(name)

    def bound(*args, **kwargs):
        b = signature.bind(*args, **kwargs)
        b.apply_defaults()
        return b.arguments

    a = bound(s.input, *s.args, **s.kwargs)
    if name == "interpolate":
        if a["antialias"]:
            return None
        m = tnn.Upsample(a["size"], a["scale_factor"], a["mode"], a["align_corners"], a["recompute_scale_factor"])
        return m, lambda m, *args, **kw: m(args[0])
    if name in ("elu", "celu"):
        return getattr(tnn, name.upper())(a["alpha"], a["inplace"]), lambda m, *args, **kw: m(args[0])
    if name == "selu":
        return tnn.SELU(a["inplace"]), lambda m, *args, **kw: m(args[0])
    if name == "smooth_l1_loss":
        m = tnn.SmoothL1Loss(a["size_average"], a["reduce"], a["reduction"], a["beta"])
        return m, lambda m, *args, **kw: m(args[0], bound(*args, **kw)["target"])
    if name == "huber_loss":
        if a.get("weight") is not None:
            return None
        return tnn.HuberLoss(a["reduction"], a["delta"]), lambda m, *args, **kw: m(args[0], bound(*args, **kw)["target"])
    if name == "adaptive_avg_pool3d":
        return tnn.AdaptiveAvgPool3d(a["output_size"]), lambda m, *args, **kw: m(args[0])
    if name == "max_pool3d":
        m = tnn.MaxPool3d(a["kernel_size"], a["stride"], a["padding"], a["dilation"], a["return_indices"],
                          a["ceil_mode"])
        return m, lambda m, *args, **kw: m(args[0])
    if name == "leaky_relu":
        return tnn.LeakyReLU(a["negative_slope"], a["inplace"]), lambda m, *args, **kw: m(args[0])
    if name == "avg_pool3d":
        m = tnn.AvgPool3d(a["kernel_size"], a["stride"], a["padding"], a["ceil_mode"], a["count_include_pad"],
                          a["divisor_override"])
        return m, lambda m, *args, **kw: m(args[0])
    assert name == "max_unpool3d"
    m = tnn.MaxUnpool3d(a["kernel_size"], a["stride"], a["padding"])

    def unpool(m, *args, **kw):
        b = bound(*args, **kw)
        return m(args[0], b["indices"], b["output_size"])
    return m, unpool


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("o", OPINFOS, ids=_opinfo_id)
def test_opinfo_samples_give_torchs_result(o, dtype, monkeypatch):
    monkeypatch.setattr(_dropin, "ROUTE_POOL_ON_CPU", True)  # (max_pool3d: the decision, on the CPU too)
    if dtype not in o.supported_dtypes("cpu"):
        pytest.skip(f"torch's {o.name} has no CPU {dtype} kernel")
    routed = aten_routed = 0
    for i, s in enumerate(_samples(o, dtype)):
        where = f"{_opinfo_id(o)} {dtype} sample {i}: {s.summary() if hasattr(s, 'summary') else s}"
        want = _run(o.op, s)
        nan = s.input.isnan() if o.name.endswith("elu") and not o.name.endswith("leaky_relu") else None
        # trilinear in float16/bfloat16: aten rounds its weights and each lerp to the dtype, torch_aclnn
        # rounds once (docs/spec.md §10): a few units in the last place apart
        # (5-D area interpolation is F.adaptive_avg_pool3d: its float16/bfloat16 gradient also sums in
        # float32 where aten rounds each partial sum, with up to 0.011 apart on this OpInfo's samples)
        close = dict(rtol=2e-2, atol=4e-2) if _opinfo_id(o) in ("interpolate.trilinear", "interpolate.area") and \
            dtype in (torch.float16, torch.bfloat16) else None
        if (o.name.endswith("adaptive_avg_pool3d") or (_opinfo_id(o) == "interpolate.area" and s.input.dim() == 5)) \
                and dtype in (torch.float16, torch.bfloat16):
            # (torch_aclnn sums in float32 and rounds once, docs/spec.md §13; aten's CPU kernels
            # round the partial sums: torch's float32 result, rounded, is the one to match; 5-D
            # area interpolation is F.adaptive_avg_pool3d)
            want = _run(lambda x, *a, **k: o.op(x.float(), *a, **k).to(dtype), s)
        with torch_aclnn.patched(level="function") as stats:
            _same(_run(o.op, s), want, "patched " + where, nan, close=close)
        routed += stats.total_routed()
        if DISPATCHER:
            with torch_aclnn.patched(level="dispatcher") as stats:
                _same(_run(o.op, s), want, "patched(level='dispatcher') " + where, nan, nan_grad=False, close=close)
            aten_routed += stats.total_routed()
        _same(_run(getattr(TF, o.name[len("nn.functional."):]), s), want, "torch_aclnn.nn.functional " + where, nan,
              close=close)
        made = _module(o, s)
        if made is not None:
            module, forward = made
            converted = tann.convert(module)
            never = getattr(module, "mode", "nearest") not in ("nearest", "nearest-exact", "trilinear")  # torch's
            assert isinstance(converted, tann._Module) != never, (where, converted)
            _same(_run(lambda *args, **kw: forward(converted, *args, **kw), s), want, "convert() " + where, nan,
                  close=close)
        if o.inplace_variant is not None:
            x = s.input.detach().clone()
            want = o.inplace_variant(x.clone(), *s.args, **s.kwargs)
            with torch_aclnn.patched(level="function") as stats:
                version = x._version
                got = o.inplace_variant(x, *s.args, **s.kwargs)
            assert got is x and x._version == version + 1 and stats.routed, where
            torch.testing.assert_close(got, want, equal_nan=True, msg=lambda m: f"in-place {where}: {m}")
    # the test is about routing: every function routes some of its samples (huber's half-precision
    # samples all have a delta > 1, which is not routed)
    if o.variant_test_name not in ("linear", "bilinear", "bicubic", "trilinear", "area") and not (
            o.name.endswith("huber_loss") and dtype in (torch.float16, torch.bfloat16)):
        assert routed > 0, f"no sample of {_opinfo_id(o)} was routed"
    if DISPATCHER and o.variant_test_name not in ("linear", "bilinear", "bicubic", "trilinear", "area") and not (
            o.name.endswith("huber_loss")):  # (aten::huber_loss is not routed)
        assert aten_routed > 0, f"no sample of {_opinfo_id(o)} was routed at the dispatcher level"


@pytest.mark.parametrize("o", [o for o in OPINFOS if o.error_inputs_func is not None], ids=_opinfo_id)
def test_opinfo_error_inputs_give_torchs_error(o):
    errors = list(o.error_inputs("cpu"))
    assert errors
    for e in errors:
        s = e.sample_input
        with pytest.raises(e.error_type) as want:
            o.op(s.input, *s.args, **s.kwargs)
        with torch_aclnn.patched(level="function"):
            with pytest.raises(e.error_type) as got:
                o.op(s.input, *s.args, **s.kwargs)
        assert str(got.value) == str(want.value)
        with pytest.raises(e.error_type) as got:
            getattr(TF, o.name[len("nn.functional."):])(s.input, *s.args, **s.kwargs)
        assert str(got.value) == str(want.value)
        if DISPATCHER:
            with torch_aclnn.patched(level="dispatcher"):
                with pytest.raises(e.error_type) as got:
                    o.op(s.input, *s.args, **s.kwargs)
            assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", NAMES)
def test_functional_has_torchs_signature(name):
    ours = inspect.signature(getattr(TF, name))
    theirs = _documented(name)
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in theirs.parameters.values()]


def test_functional_is_a_one_line_swap():
    x = torch.randn(1, 2, 3, 4, 5, dtype=torch.float64)
    t = torch.randn_like(x)
    # F's positional order, legacy arguments included
    torch.testing.assert_close(TF.smooth_l1_loss(x, t, None, None, "sum"), F.smooth_l1_loss(x, t, None, None, "sum"))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        got = TF.smooth_l1_loss(x, t, False)
    torch.testing.assert_close(got, F.smooth_l1_loss(x, t, reduction="sum"))
    torch.testing.assert_close(TF.interpolate(x, None, 2, "nearest-exact"),
                               F.interpolate(x, None, 2, "nearest-exact"))
    torch.testing.assert_close(TF.interpolate(x, scale_factor=2, mode="trilinear", align_corners=True),
                               F.interpolate(x, scale_factor=2, mode="trilinear", align_corners=True))
    torch.testing.assert_close(TF.huber_loss(x, t, "none", 0.5), F.huber_loss(x, t, "none", 0.5))


# ---------------------------------------------------------------------------
# Calls torch accepts that break a rule stricter than torch's: torch computes them.

def _overlapping_unpool():
    x = torch.randn(1, 1, 4, 4, 4)
    p, i = F.max_pool3d(x, 2, stride=1, padding=1, return_indices=True)
    return lambda: F.max_unpool3d(p, i, 2, stride=1, padding=1)


def _int_unpool():
    p, i = F.max_pool3d(torch.randn(1, 1, 4, 4, 4), 2, return_indices=True)
    return lambda: F.max_unpool3d(p.to(torch.int32), i, 2)


STRICTER = [
    ("max_unpool3d", _overlapping_unpool(), "D*H*W"),
    ("max_unpool3d", _int_unpool(), "dtype torch.int32"),
    ("max_pool3d_with_indices", lambda: F.max_pool3d(torch.randn(1, 2, 3, 3, 2), 2, 1, 1, 3, return_indices=True),
     "no tap inside the input"),
    ("elu", lambda: F.elu(torch.randn([1] * 9)), "9-D input"),
    ("elu", lambda: F.elu(torch.randn(4), alpha=1e39), "beyond float32"),
    ("celu", lambda: F.celu(torch.randn(4, dtype=torch.float64), 5e-324), "alpha"),
    ("smooth_l1_loss", lambda: F.smooth_l1_loss(torch.randn([1] * 9), torch.randn([1] * 9)), "9-D input"),
    ("huber_loss", lambda: F.huber_loss(torch.randn(3), torch.randn(3), weight=torch.rand(3)), "weight given"),
    ("interpolate", lambda: F.interpolate(torch.randn(1, 2, 4, 5), scale_factor=2), "4-D input"),
]


@pytest.mark.parametrize("name,fn,why", STRICTER, ids=[f"{s[0]}-{s[2]}" for s in STRICTER])
def test_stricter_rules_pass_through(name, fn, why, monkeypatch):
    monkeypatch.setattr(_dropin, "ROUTE_POOL_ON_CPU", True)
    try:
        torch.manual_seed(0)
        want = fn()
    except Exception as e:  # noqa: BLE001
        want = e
    with torch_aclnn.patched(level="function") as stats:
        try:
            torch.manual_seed(0)
            got = fn()
        except Exception as e:  # noqa: BLE001
            got = e
    assert not stats.routed and stats.passed == {name: 1}, stats
    assert any(why in reason for _, reason in stats.reasons), stats.reasons
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
    else:
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_out_of_range_unpool_index_gives_torchs_error():
    p, i = F.max_pool3d(torch.randn(1, 1, 4, 4, 4), 2, return_indices=True)
    i = i.clone()
    i.view(-1)[0] = 10_000
    stats = raises_torchs_error(lambda: F.max_unpool3d(p, i, 2), "function")
    assert stats.passed == {"max_unpool3d": 1}


# ---------------------------------------------------------------------------
# huber_loss, in-place ELU, convert(), TorchScript, export

@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("delta", [1.0, 0.3, 2.5])
def test_huber_loss_gradcheck_and_routing(reduction, delta):
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    t = (x.detach() + torch.randn(3, 4, dtype=torch.float64)).requires_grad_()
    fn = lambda a, b: torch_aclnn.huber_loss(a, b, reduction, delta)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x, t))
    assert torch.autograd.gradgradcheck(fn, (x, t))
    with torch_aclnn.patched(level="function") as stats:
        got = tnn.HuberLoss(reduction, delta)(x, t)
    assert stats.routed == {"huber_loss": 1}
    assert any(f.name() == node_name("smooth_l1_loss") for f, _ in got.grad_fn.next_functions if f is not None)
    torch.testing.assert_close(got, F.huber_loss(x, t, reduction, delta))
    with pytest.raises(ValueError, match=r"\[torch_aclnn 161002\] huber_loss: delta must be finite and > 0"):
        torch_aclnn.huber_loss(x, t, reduction, 0.0)


@pytest.mark.parametrize("make", [lambda: tnn.ELU(inplace=True), lambda: tnn.SELU(inplace=True),
                                  lambda: tnn.CELU(0.7, inplace=True), lambda: (lambda x: F.elu(x, 0.5, True))],
                         ids=["ELU", "SELU", "CELU", "F.elu"])
def test_inplace_elu_is_routed_like_torch(make):
    x = torch.randn(4, 5, dtype=torch.float64) * 2
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ha, hb = xa * 1, xb * 1
    with torch_aclnn.patched(level="function") as stats:
        ya = make()(ha)
    yb = make()(hb)
    assert stats.routed and ya is ha and ha._version == hb._version
    assert "EluInplace" in type(ya.grad_fn).__name__
    torch.testing.assert_close(ya, yb)
    ya.backward(torch.ones_like(ya))
    yb.backward(torch.ones_like(yb))
    torch.testing.assert_close(xa.grad, xb.grad)


def test_inplace_rules_stay_torchs():
    leaf = torch.randn(5, requires_grad=True)
    for fn in (lambda: F.elu(leaf, inplace=True), lambda: TF.elu(leaf, inplace=True)):
        with pytest.raises(RuntimeError) as want:
            F.elu(leaf, inplace=True)
        with torch_aclnn.patched(level="function"):
            with pytest.raises(RuntimeError) as got:
                fn()
        assert str(got.value) == str(want.value)
    # negative alpha: torch's own backward error
    msgs = []
    for patch in (False, True):
        h = torch.randn(5, requires_grad=True) * 1
        with torch_aclnn.patched(level="function") if patch else torch.enable_grad():
            y = F.celu(h, -1.0, True)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_convert_never_breaks_a_2d_model():
    """The 4-D upsample is handed to torch (bitwise torch's), the ELU after it
    is routed (bitwise torch_aclnn's elu; within 2 ulp of aten's, whose own
    vector tail can round differently from its main loop)."""
    model = tnn.Sequential(tnn.Conv2d(1, 1, 3), tnn.Upsample(scale_factor=2), tnn.ELU())
    x = torch.randn(1, 1, 8, 8)
    want = model(x)
    upsampled = model[1](model[0](x))
    converted = tann.convert(model)
    assert type(converted[1]) is tann.Upsample
    got = converted(x)
    torch.testing.assert_close(converted[1](converted[0](x)), upsampled, rtol=0, atol=0)
    torch.testing.assert_close(got, torch.ops.torch_aclnn.elu(upsampled, 1.0, 1.0, 1.0), rtol=0, atol=0)
    assert ((got - want).abs() <= 2 * torch.finfo(torch.float32).eps * want.abs()).all()


def test_convert_reports_what_it_did(caplog):
    class MyELU(tnn.ELU):
        pass

    model = tnn.Sequential(tnn.ELU(), tnn.Upsample(scale_factor=2, mode="bilinear"), MyELU(),
                           tnn.Sequential(tnn.HuberLoss(), tnn.Upsample(scale_factor=2)))
    with caplog.at_level(logging.INFO, logger="torch_aclnn"):
        tann.convert(model)
    (record,) = [r for r in caplog.records if r.name == "torch_aclnn"]
    msg = record.getMessage()
    assert "swapped 3 module(s): 1 ELU, 1 HuberLoss, 1 Upsample" in msg, msg
    assert "left alone 2" in msg and "'1' (mode='bilinear'" in msg and "'2' (a subclass of torch.nn.ELU)" in msg
    assert repr(model[0]) == "torch_aclnn.ELU(alpha=1.0)"
    assert repr(model[1]).startswith("Upsample(")


def _scripted_twins():
    """(torch_aclnn.nn module, its torch.nn twin, arguments) for every module TorchScript can compile
    (torch.nn.MaxUnpool3d itself cannot be scripted: torch raises an internal assert, and so does ours)."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d)
    t = torch.randn(2, 3, 4, 5, 6)
    return [
        (tann.Upsample(scale_factor=2), tnn.Upsample(scale_factor=2), (x,)),
        (tann.Upsample(scale_factor=1.5, mode="nearest-exact"), tnn.Upsample(scale_factor=1.5, mode="nearest-exact"),
         (x,)),
        (tann.Upsample(size=(3, 4, 5), mode="trilinear"), tnn.Upsample(size=(3, 4, 5), mode="trilinear"), (x,)),
        (tann.ELU(0.5), tnn.ELU(0.5), (x,)),
        (tann.ELU(inplace=True), tnn.ELU(inplace=True), (x,)),
        (tann.SELU(), tnn.SELU(), (x,)),
        (tann.CELU(2.0), tnn.CELU(2.0), (x,)),
        (tann.SmoothL1Loss(beta=0.5), tnn.SmoothL1Loss(beta=0.5), (x, t)),
        (tann.HuberLoss(reduction="sum", delta=2.0), tnn.HuberLoss(reduction="sum", delta=2.0), (x, t)),
        (tann.MaxPool3d(2, return_indices=True), tnn.MaxPool3d(2, return_indices=True), (x,)),
        (tann.MaxPool3d(3, 2, 1, ceil_mode=True), tnn.MaxPool3d(3, 2, 1, ceil_mode=True), (x,)),
        (tann.AdaptiveAvgPool3d((2, 4, 3)), tnn.AdaptiveAvgPool3d((2, 4, 3)), (x,)),
    ]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_torchscript_runs_torchs_call():
    """A scripted torch_aclnn.nn module compiles to torch's functional call: bitwise the scripted
    torch.nn module's result, and the eager module's within the op's tolerance."""
    for ours, theirs, args in _scripted_twins():
        scripted, reference = torch.jit.script(ours), torch.jit.script(theirs)
        got, want = scripted(*[a.clone() for a in args]), reference(*[a.clone() for a in args])
        torch.testing.assert_close(got, want, rtol=0, atol=0, msg=lambda m: f"{ours!r}: {m}")
        torch.testing.assert_close(ours(*[a.clone() for a in args]), want, msg=lambda m: f"{ours!r}: {m}")
    model = tnn.Sequential(tnn.Conv3d(3, 3, 1), tnn.ELU(), tnn.Upsample(scale_factor=2))
    tann.convert(model)
    scripted = torch.jit.script(model)
    assert repr(model[1]) == "torch_aclnn.ELU(alpha=1.0)", "scripting must not swap the eager model's modules back"
    x = torch.randn(1, 3, 2, 3, 4)
    torch.testing.assert_close(scripted(x), model(x))
    with pytest.raises(RuntimeError, match="isIntList"):  # torch's own MaxUnpool3d does the same
        torch.jit.script(tnn.MaxUnpool3d(2))
    with pytest.raises(RuntimeError, match="isIntList"):
        torch.jit.script(tann.MaxUnpool3d(2))


@pytest.mark.skipif(not DISPATCHER, reason="patch(level='dispatcher') needs torch >= 2.9")
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_torchscript_is_routed_at_the_dispatcher_level():
    """The aten calls a scripted model makes are routed by the dispatcher level (and not by the
    function level, which TorchScript does not reach)."""
    model = torch.jit.script(tnn.Sequential(tann.ELU(), tann.Upsample(scale_factor=2)))
    x = torch.randn(1, 2, 3, 4, 5)
    want = model(x)
    for level, routed in (("function", {}), ("dispatcher", {"aten::elu": 1, "aten::upsample_nearest3d": 1})):
        with torch_aclnn.patched(level=level) as stats:
            got = model(x)
        assert stats.routed == routed, level
        torch.testing.assert_close(got, want)


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_jit_trace_records_torchs_calls():
    """Under torch.jit.trace every call is torch's: the trace keeps its sizes symbolic, so it runs
    on other shapes (with torch_aclnn's calls, Upsample's output size would be a constant), and
    in-place ELU traces too; the dispatcher level routes the traced aten calls."""
    def make(ns):
        torch.manual_seed(0)
        return tnn.Sequential(tnn.Conv3d(2, 2, 1), ns.ELU(inplace=True), ns.Upsample(scale_factor=2),
                              ns.SELU())
    ours, theirs = make(tann), make(tnn)
    example, other = torch.randn(1, 2, 3, 4, 5), torch.randn(2, 2, 6, 7, 8)
    traced = torch.jit.trace(ours, example)
    kinds = {n.kind() for n in traced.inlined_graph.nodes()}
    assert not any(k.startswith("torch_aclnn::") for k in kinds), kinds
    torch.testing.assert_close(traced(other), theirs(other), rtol=0, atol=0)
    torch.testing.assert_close(traced(other), ours(other))
    if DISPATCHER:
        want = theirs(other)
        with torch_aclnn.patched(level="dispatcher") as stats:  # (in-place elu_ is not routed there; selu is)
            got = traced(other)
        assert stats.routed == {"aten::upsample_nearest3d": 1, "aten::elu": 1}, stats.routed
        torch.testing.assert_close(got, want)
    with torch_aclnn.patched(level="function") as stats:  # (check_trace would rerun it untraced)
        torch.jit.trace(theirs, example, check_trace=False)
    assert stats.routed == {} and stats.passed == {"interpolate": 1, "elu": 1, "selu": 1}, stats


def test_export_keeps_the_operators():
    model = tnn.Sequential(tnn.Conv3d(2, 2, 3, padding=1), tann.ELU(), tann.Upsample(scale_factor=2))
    x = torch.randn(1, 2, 3, 4, 5)
    ep = torch.export.export(model, (x,))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert {"torch_aclnn.elu.default", "torch_aclnn.upsample_nearest3d.default"} <= targets, targets
    torch.testing.assert_close(ep.module()(x), model(x), rtol=0, atol=0)


# ---------------------------------------------------------------------------
# Hostile and careless calls: each gives torch's answer, error or warning.

def _both(fn):
    """(torch's outcome, patched outcome, torch_aclnn.nn.functional outcome), where an outcome is a
    result or the exception raised."""
    out = []
    for ctx in ("torch", "patched", "functional"):
        torch.manual_seed(0)
        try:
            if ctx == "patched":
                with torch_aclnn.patched(level="function"):
                    out.append(fn(F))
            else:
                out.append(fn(F if ctx == "torch" else TF))
        except Exception as e:  # noqa: BLE001
            out.append(e)
    return out


def _same_outcome(fn, check_strides=False):
    want, *gots = _both(fn)
    for got in gots:
        if isinstance(want, Exception):
            assert type(got) is type(want) and str(got) == str(want), (got, want)
        else:
            assert not isinstance(got, Exception), got
            torch.testing.assert_close(got, want, equal_nan=True)
            assert got.dtype == want.dtype
            if check_strides:
                assert got.stride() == want.stride(), (got.stride(), want.stride())


REVIEW = {
    "huber non-tensor input": lambda f: f.huber_loss([1.0, 2.0], torch.zeros(2)),
    "huber bf16 input, f32 target": lambda f: f.huber_loss(torch.randn(4, dtype=torch.bfloat16), torch.randn(4)),
    "huber delta 1e39 float32": lambda f: f.huber_loss(torch.tensor([0.5, 2.]), torch.zeros(2), "none", 1e39),
    "huber float16 delta 100": lambda f: f.huber_loss(torch.tensor([0.001, 0.003], dtype=torch.float16),
                                                      torch.zeros(2, dtype=torch.float16), "none", 100.),
    "smooth_l1 0-dim target of another dtype": lambda f: f.smooth_l1_loss(torch.randn(4, dtype=torch.float16),
                                                                          torch.tensor(0.5)),
    "smooth_l1 float16 beta beyond half": lambda f: f.smooth_l1_loss(
        torch.tensor([1., 6e4], dtype=torch.float16), torch.zeros(2, dtype=torch.float16), reduction="none",
        beta=7e4),
    "interpolate C == 0": lambda f: f.interpolate(torch.randn(1, 0, 2, 2, 2), scale_factor=2),
    "interpolate size 2**62": lambda f: f.interpolate(torch.randn(1, 1, 1, 1, 1), size=(2 ** 62, 1, 1)),
    "max_unpool3d numpy kernel_size": lambda f: f.max_unpool3d(
        *F.max_pool3d(torch.randn(1, 1, 4, 4, 4), 2, return_indices=True), np.int64(2)),
    "max_unpool3d tensor kernel_size": lambda f: f.max_unpool3d(
        *F.max_pool3d(torch.randn(1, 1, 4, 4, 4), 2, return_indices=True), torch.tensor(2)),
}


@pytest.mark.parametrize("name", list(REVIEW))
def test_review_cases_give_torchs_outcome(name):
    _same_outcome(REVIEW[name])


def test_layouts_are_torchs():
    x = torch.randn(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d)
    _same_outcome(lambda f: f.smooth_l1_loss(x, x * 2, reduction="none"), check_strides=True)
    p_, q_ = torch.randn(3, 4), torch.randn(3, 4)  # the legacy arguments take the same 'none' rule
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        _same_outcome(lambda f: f.smooth_l1_loss(p_.t(), q_.t(), reduce=False), check_strides=True)
        _same_outcome(lambda f: f.smooth_l1_loss(p_.t(), q_.t(), size_average=True, reduce=False), check_strides=True)
    p, i = F.max_pool3d(torch.randn(1, 3, 4, 4, 4).to(memory_format=torch.channels_last_3d), 2, return_indices=True)
    _same_outcome(lambda f: f.max_unpool3d(p, i, 2), check_strides=True)


def test_inplace_on_a_view_of_a_leaf_writes_nothing():
    for make in (lambda a: a[0], lambda a: (a * 1).unbind(0)[1]):
        a = torch.full((2, 3), -1.0, requires_grad=True)
        with torch_aclnn.patched(level="function"):
            with pytest.raises(RuntimeError):
                F.elu(make(a), inplace=True)
        assert (a == -1).all() and a._version == 0


def test_inplace_under_torch_func_is_torchs():
    x = torch.randn(3)
    want = torch.func.grad(lambda a: F.elu(a * 1, inplace=True).sum())(x)
    with torch_aclnn.patched(level="function"):
        got = torch.func.grad(lambda a: F.elu(a * 1, inplace=True).sum())(x)
    torch.testing.assert_close(got, want)


def test_loss_warnings_like_torchs():
    """The same warnings in the same order; the shape warning names the caller's line, as F's does."""
    import warnings

    x, t = torch.randn(4, 3), torch.randn(4, 1)
    for call in (lambda f: f.smooth_l1_loss(x, t, reduce=False), lambda f: f.huber_loss(x, t, delta=0.5)):
        with warnings.catch_warnings(record=True) as want:
            warnings.simplefilter("always")
            call(F)
        for surface in ("patched", "functional"):
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                if surface == "patched":
                    with torch_aclnn.patched(level="function") as stats:
                        call(F)
                    assert stats.total_routed() == 1
                else:
                    call(TF)
            assert [str(w.message) for w in got] == [str(w.message) for w in want]
            assert got[0].filename == want[0].filename == __file__


def test_legacy_arguments_compile_fullgraph():
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    want = F.smooth_l1_loss(x, y, size_average=False)
    with torch_aclnn.patched(level="function") as stats:
        got = torch.compile(lambda: F.smooth_l1_loss(x, y, size_average=False), fullgraph=True,
                            backend="eager")()
    torch.testing.assert_close(got, want)
    assert stats.routed == {"smooth_l1_loss": 1}


def test_patched_under_a_default_device():
    with torch.device("meta"):
        with torch_aclnn.patched(level="function") as stats:
            pass
    assert stats.routed == {}


def test_convert_swaps_a_shared_module_everywhere():
    s = tnn.ELU()
    m = tann.convert(tnn.Sequential(s, tnn.Sequential(s), s))
    assert type(m[0]) is tann.ELU and m[0] is m[1][0] is m[2]


def test_plans_are_kept_per_shape_and_arguments(monkeypatch):
    """interpolate's and max_unpool3d's plans (output size and the rules on it) are kept
    per input shape and plain arguments in eager mode; anything else is planned per call."""
    monkeypatch.setattr(_calls, "_PLANS", {})
    x = torch.randn(1, 2, 3, 4, 5)
    calls = [lambda: TF.interpolate(x, scale_factor=2), lambda: TF.interpolate(x, scale_factor=2),
             lambda: TF.interpolate(x, scale_factor=2.0),             # another type: its own entry
             lambda: TF.interpolate(x[:, :, :2], scale_factor=2),     # another shape
             lambda: TF.interpolate(x, scale_factor=np.float64(2))]   # not a plain value: not kept
    sizes = []
    for call in calls:
        assert torch.equal(call(), F.interpolate(x if call is not calls[3] else x[:, :, :2], scale_factor=2))
        sizes.append(len(_calls._PLANS))
    assert sizes == [1, 1, 2, 3, 3]
    for _ in range(2):  # a reason is kept too: the call still gets torch's own error
        with pytest.raises(ValueError, match="recompute_scale_factor"):
            TF.interpolate(x, size=4, recompute_scale_factor=True)
    assert sum(isinstance(v, str) for v in _calls._PLANS.values()) == 1
    pooled, indices = F.max_pool3d(torch.randn(1, 2, 4, 4, 4), 2, return_indices=True)
    for _ in range(2):
        assert torch.equal(TF.max_unpool3d(pooled, indices, 2), F.max_unpool3d(pooled, indices, 2))
    assert len(_calls._PLANS) == 5
    monkeypatch.setattr(_calls, "_PLANS_MAX", 5)
    TF.interpolate(x, size=3)  # full: the cache starts over
    assert len(_calls._PLANS) == 1
