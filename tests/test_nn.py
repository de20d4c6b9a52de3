"""torch_aclnn.nn: the modules against the torch.nn modules they replace —
constructor arguments, repr, state_dict both ways, outputs and gradients,
in-place behaviour, autocast, torch.compile, and convert()."""
import io
import warnings

import pytest
import torch
import torch.nn as tnn

import torch_aclnn
import torch_aclnn.nn as tann

# (torch_aclnn.nn class, torch.nn class, constructor args, kwargs)
CONSTRUCTORS = [
    (tann.Upsample, tnn.Upsample, (), {"scale_factor": 2}),
    (tann.Upsample, tnn.Upsample, (), {"scale_factor": (1.5, 2, 0.5), "mode": "nearest-exact"}),
    (tann.Upsample, tnn.Upsample, ((5, 6, 7),), {}),
    (tann.Upsample, tnn.Upsample, (), {"size": 9, "mode": "nearest-exact"}),
    (tann.Upsample, tnn.Upsample, (), {"scale_factor": 1.7, "recompute_scale_factor": True}),
    (tann.ELU, tnn.ELU, (), {}),
    (tann.ELU, tnn.ELU, (0.5,), {"inplace": True}),
    (tann.SELU, tnn.SELU, (), {}),
    (tann.SELU, tnn.SELU, (True,), {}),
    (tann.CELU, tnn.CELU, (), {}),
    (tann.CELU, tnn.CELU, (2.0, True), {}),
    (tann.SmoothL1Loss, tnn.SmoothL1Loss, (), {}),
    (tann.SmoothL1Loss, tnn.SmoothL1Loss, (), {"reduction": "sum", "beta": 0.25}),
    (tann.MaxUnpool3d, tnn.MaxUnpool3d, (2,), {}),
    (tann.MaxUnpool3d, tnn.MaxUnpool3d, ((2, 3, 2),), {"stride": (1, 2, 2), "padding": 1}),
    (tann.HuberLoss, tnn.HuberLoss, (), {"reduction": "sum", "delta": 0.5}),
    (tann.LeakyReLU, tnn.LeakyReLU, (), {}),
    (tann.LeakyReLU, tnn.LeakyReLU, (0.2,), {"inplace": True}),
]


def _id(c):
    return f"{c[0].__name__}{c[2]}{c[3]}"


@pytest.mark.parametrize("case", CONSTRUCTORS, ids=[_id(c) for c in CONSTRUCTORS])
def test_same_constructor_repr_and_attributes(case):
    ours_cls, theirs_cls, args, kwargs = case
    ours, theirs = ours_cls(*args, **kwargs), theirs_cls(*args, **kwargs)
    assert repr(ours) == "torch_aclnn." + repr(theirs)
    assert isinstance(ours, theirs_cls)
    public = {k: v for k, v in vars(theirs).items() if not k.startswith("_") and k != "training"}
    assert {k: v for k, v in vars(ours).items() if k in public} == public


def test_defaults_match_torch():
    import inspect

    for ours, theirs in [(tann.Upsample, tnn.Upsample), (tann.ELU, tnn.ELU), (tann.SELU, tnn.SELU),
                         (tann.CELU, tnn.CELU), (tann.SmoothL1Loss, tnn.SmoothL1Loss),
                         (tann.MaxUnpool3d, tnn.MaxUnpool3d), (tann.HuberLoss, tnn.HuberLoss),
                         (tann.LeakyReLU, tnn.LeakyReLU)]:
        def params(cls):
            return [(p.name, p.kind, p.default) for p in inspect.signature(cls.__init__).parameters.values()]

        assert params(ours) == params(theirs), ours


def _block(layers):
    return tnn.Sequential(tnn.Conv3d(2, 3, 3, padding=1), layers.ELU(0.7), layers.Upsample(scale_factor=2),
                          layers.SELU(), layers.CELU(1.5), tnn.Conv3d(3, 2, 1))


def test_state_dict_both_ways():
    torch.manual_seed(0)
    ours, theirs = _block(tann), _block(tnn)
    for src, dst in ((theirs, ours), (ours, theirs)):
        buf = io.BytesIO()
        torch.save(src.state_dict(), buf)
        buf.seek(0)
        assert dst.load_state_dict(torch.load(buf), strict=True) is not None
        for (k1, v1), (k2, v2) in zip(src.state_dict().items(), dst.state_dict().items()):
            assert k1 == k2 and torch.equal(v1, v2)
        assert src.state_dict()._metadata.keys() == dst.state_dict()._metadata.keys()
    x = torch.randn(1, 2, 3, 4, 5)
    assert torch.equal(ours(x), theirs(x))
    # The loss and unpool modules have no state either; loading one into the other is strict-clean.
    tann.SmoothL1Loss().load_state_dict(tnn.SmoothL1Loss().state_dict())
    tnn.MaxUnpool3d(2).load_state_dict(tann.MaxUnpool3d(2).state_dict())


# ---------------------------------------------------------------------------
# Outputs and gradients against torch.nn


def _compare(ours, theirs, *inputs, exact=True):
    a = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    b = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    ya, yb = ours(*a), theirs(*b)
    g = torch.randn_like(ya)
    ya.backward(g)
    yb.backward(g)
    check = torch.equal if exact else (lambda x, y: torch.allclose(x, y, rtol=1e-6, atol=1e-7))
    assert check(ya, yb)
    for ta_, tb in zip(a, b):
        if ta_.requires_grad:
            assert check(ta_.grad, tb.grad)


@pytest.mark.parametrize("kwargs", [{"scale_factor": 2}, {"scale_factor": (2, 1.5, 3)}, {"size": (3, 7, 8)},
                                    {"scale_factor": 1.7, "recompute_scale_factor": True}, {"size": 4}])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_upsample_matches_torch(mode, kwargs):
    x = torch.randn(2, 3, 3, 4, 5, dtype=torch.float64)
    _compare(tann.Upsample(mode=mode, **kwargs), tnn.Upsample(mode=mode, **kwargs), x)


def test_upsample_passes_through_what_it_does_not_cover():
    """Other modes, align_corners for a nearest mode and 4-D input: torch computes them (the
    drop-in rule); 5-D trilinear is torch_aclnn's (torch's values to rounding)."""
    x4, x5 = torch.randn(1, 2, 4, 4), torch.randn(1, 2, 3, 4, 4)
    for kwargs, x in [({}, x4), ({"mode": "nearest-exact"}, x4), ({"mode": "bilinear"}, x4)]:
        ours, theirs = tann.Upsample(scale_factor=2, **kwargs), tnn.Upsample(scale_factor=2, **kwargs)
        torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=0)
    for kwargs in ({"mode": "trilinear"}, {"mode": "trilinear", "align_corners": True}):
        ours, theirs = tann.Upsample(scale_factor=2, **kwargs), tnn.Upsample(scale_factor=2, **kwargs)
        got = ours(x5)
        torch.testing.assert_close(got, theirs(x5))
        assert torch.equal(got, torch_aclnn.upsample_trilinear3d(x5, scale_factor=2, **{
            k: v for k, v in kwargs.items() if k != "mode"}))


@pytest.mark.parametrize("cls,args", [(tann.ELU, ()), (tann.ELU, (0.3,)), (tann.SELU, ()), (tann.CELU, ()),
                                      (tann.CELU, (2.5,))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_activations_match_torch(cls, args, dtype):
    theirs = getattr(tnn, cls.__name__)(*args)
    x = torch.randn(4, 3, 5, dtype=dtype) * 3
    # aten's elu rounds differently from expm1 in a few ulps for float32 (see tests/test_elu.py).
    _compare(cls(*args), theirs, x, exact=False)


@pytest.mark.parametrize("cls,args", [(tann.ELU, (0.5,)), (tann.SELU, ()), (tann.CELU, (2.0,))])
def test_inplace_like_torch(cls, args):
    ours, theirs = cls(*args, inplace=True), getattr(tnn, cls.__name__)(*args, inplace=True)
    x = torch.randn(6, 7, dtype=torch.float64) * 2
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ha, hb = xa * 1, xb * 1                            # in place on a non-leaf, as in a network
    ya, yb = ours(ha), theirs(hb)
    assert ya is ha and ha._version > 0                # the input was overwritten and returned
    torch.testing.assert_close(ya, yb)
    g = torch.randn_like(x)
    ya.backward(g)
    yb.backward(g)
    torch.testing.assert_close(xa.grad, xb.grad)
    # double backward through the saved result
    xa = x.clone().requires_grad_()
    y = ours(xa * 1)
    (gx,) = torch.autograd.grad(y.sum(), xa, create_graph=True)
    gx.sum().backward()
    assert xa.grad is not None


def test_inplace_no_grad_and_leaf_rules():
    x = torch.randn(5)
    want = torch.nn.functional.elu(x)
    y = tann.ELU(inplace=True)(x)
    assert y is x and torch.allclose(x, want)
    leaf = torch.randn(5, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        tann.ELU(inplace=True)(leaf)
    with torch.no_grad():
        out = tann.SELU(inplace=True)(leaf)
    assert out is leaf
    # A negative alpha cannot be differentiated from the result (torch raises too).
    for layers in (tann, tnn):
        h = torch.randn(5, requires_grad=True) * 1
        y = layers.CELU(-1.0, inplace=True)(h)
        with pytest.raises(Exception):
            y.sum().backward()


def test_celu_alpha_zero_is_torchs_error():
    for inplace in (False, True):
        with pytest.raises(RuntimeError) as want:
            tnn.CELU(0.0, inplace)(torch.randn(3))
        with pytest.raises(RuntimeError) as got:
            tann.CELU(0.0, inplace)(torch.randn(3))
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("beta", [1.0, 0.3, 0.0])
def test_smooth_l1_loss_matches_torch(reduction, beta):
    x, t = torch.randn(3, 4, 5, dtype=torch.float64), torch.randn(3, 4, 5, dtype=torch.float64)
    t[0, 0, :2] = x[0, 0, :2]  # d == 0 (beta == 0: both give gradient 0 there)
    kw = {"reduction": reduction, "beta": beta}
    _compare(tann.SmoothL1Loss(**kw), tnn.SmoothL1Loss(**kw), x, t, exact=False)


def test_smooth_l1_loss_legacy_arguments_and_warning():
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        ours, theirs = tann.SmoothL1Loss(size_average=False), tnn.SmoothL1Loss(size_average=False)
    assert ours.reduction == theirs.reduction == "sum"
    x, t = torch.randn(4, 3), torch.randn(4, 1)
    with pytest.warns(UserWarning, match="different to the input size"):
        got = ours(x, t)
    with pytest.warns(UserWarning, match="different to the input size"):
        want = theirs(x, t)
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dims", [5, 4])
def test_max_unpool3d_matches_torch(dims):
    shape = (2, 3, 4, 6, 4) if dims == 5 else (3, 4, 6, 4)
    x = torch.randn(shape, dtype=torch.float64)
    pooled, idx = tnn.MaxPool3d(2, return_indices=True)(x)
    _compare(lambda p: tann.MaxUnpool3d(2)(p, idx), lambda p: tnn.MaxUnpool3d(2)(p, idx), pooled)
    size = x.shape[-3:]
    _compare(lambda p: tann.MaxUnpool3d(2)(p, idx, output_size=size),
             lambda p: tnn.MaxUnpool3d(2)(p, idx, output_size=size), pooled)


# ---------------------------------------------------------------------------
# autocast, compile, convert


def test_autocast_dtypes_match_torch():
    x = torch.randn(2, 2, 4, 4, 4)
    t = torch.randn(2, 2, 4, 4, 4)
    dev = x.device.type
    with torch.autocast(dev, torch.bfloat16):
        xb = x.bfloat16()
        for name, args in [("Upsample", dict(scale_factor=2)), ("Upsample", dict(scale_factor=2, mode="nearest-exact")),
                           ("ELU", {}), ("SELU", {}), ("CELU", {}), ("LeakyReLU", {})]:
            got, want = getattr(tann, name)(**args)(xb), getattr(tnn, name)(**args)(xb)
            assert got.dtype == want.dtype, name
            torch.testing.assert_close(got, want)
        got, want = tann.SmoothL1Loss()(xb, t.bfloat16()), tnn.SmoothL1Loss()(xb, t.bfloat16())
        assert got.dtype == want.dtype == torch.float32
        torch.testing.assert_close(got, want)
        for indices in (False, True):  # (aten's max_pool3d has a CPU rule; max_pool3d_with_indices has none)
            got, want = tann.MaxPool3d(2, return_indices=indices)(xb), tnn.MaxPool3d(2, return_indices=indices)(xb)
            got, want = (got, want) if indices else ((got,), (want,))
            assert [g.dtype for g in got] == [w.dtype for w in want], indices
            torch.testing.assert_close(got, want)
        p, i = tnn.MaxPool3d(2, return_indices=True)(xb)
        got, want = tann.MaxUnpool3d(2)(p, i), tnn.MaxUnpool3d(2)(p, i)
        assert got.dtype == want.dtype == (torch.float32 if dev == "cpu" else torch.bfloat16)  # no CUDA rule
        torch.testing.assert_close(got, want)


def test_autocast_rules_follow_aten():
    """Our fp32 autocast rules are exactly where aten's counterpart has an autocast kernel."""
    from torch_aclnn import _autocast
    keys = {"cpu": "AutocastCPU", "cuda": "AutocastCUDA"}
    aten = {(ours, dev) for ours, name in _autocast.ATEN_COUNTERPART.items() for dev, key in keys.items()
            if torch._C._dispatch_has_kernel_for_dispatch_key(name, key)}
    assert set(_autocast.FP32_RULES) == aten
    for op, dev in _autocast.FP32_RULES:
        if torch._C._is_autocast_available(dev):
            assert torch._C._dispatch_has_kernel_for_dispatch_key(f"torch_aclnn::{op}", keys[dev])


def test_modules_compile_fullgraph():
    torch.manual_seed(0)
    ours, theirs = _block(tann), _block(tnn)
    ours.load_state_dict(theirs.state_dict())
    ours.append(tann.ELU(inplace=True))
    theirs.append(tnn.ELU(inplace=True))
    compiled = torch.compile(ours, fullgraph=True, backend="aot_eager")
    x = torch.randn(2, 2, 3, 4, 5)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = compiled(xa), theirs(xb)
    torch.testing.assert_close(ya, yb)
    ya.square().sum().backward()
    yb.square().sum().backward()
    torch.testing.assert_close(xa.grad, xb.grad)


def test_convert():
    torch.manual_seed(0)
    model = tnn.Sequential(_block(tnn), tnn.Upsample(scale_factor=2, mode="bilinear"), tnn.ELU())
    x = torch.randn(1, 2, 2, 3, 4)
    want = model[:1](x)
    sd = model.state_dict()
    converted = tann.convert(model)
    assert type(converted[0][1]) is tann.ELU and type(converted[0][2]) is tann.Upsample
    assert type(converted[1]) is tnn.Upsample  # bilinear stays torch's
    assert type(converted[2]) is tann.ELU and converted[0][1].alpha == 0.7
    torch.testing.assert_close(converted[:1](x), want)
    assert type(tann.convert(tnn.Upsample(scale_factor=2, mode="trilinear"))) is tann.Upsample
    assert converted.state_dict().keys() == sd.keys()
    assert type(tann.convert(tnn.SELU())) is tann.SELU


def test_star_import_has_every_module():
    """``from torch_aclnn.nn import *`` brings every module class defined there,
    convert and unconvert."""
    public = {name for name, v in vars(tann).items()
              if isinstance(v, type) and v.__module__ == tann.__name__ and not name.startswith("_")}
    assert public and public | {"convert", "unconvert", "functional"} == set(tann.__all__)


def test_functional_is_a_one_line_swap():
    """Every name of torch.nn.functional resolves on torch_aclnn.nn.functional:
    the covered functions are torch_aclnn's, every other one is torch's object."""
    import torch.nn.functional as tF
    import torch_aclnn.nn.functional as F

    ours = set(F.__all__)
    for name in dir(tF):
        got = getattr(F, name)
        if name not in ours and not name.startswith("__"):
            assert got is getattr(tF, name), name
    assert set(dir(tF)) <= set(dir(F)) and ours <= set(dir(F))
    with pytest.raises(AttributeError, match="torch_aclnn.nn.functional.*no_such_function"):
        F.no_such_function
    # a file that mixes both kinds
    x = torch.randn(1, 2, 3, 4, 5)
    w = torch.randn(2, 2, 1, 1, 1)
    got = F.interpolate(F.relu(F.conv3d(x, w)), scale_factor=2)
    torch.testing.assert_close(got, tF.interpolate(tF.relu(tF.conv3d(x, w)), scale_factor=2))


# Loads a pickled model in a Python where torch_aclnn cannot be imported.
_LOAD_WITHOUT_TORCH_ACLNN = """
import sys
sys.modules["torch_aclnn"] = None  # (any import of torch_aclnn raises ImportError)
import torch
model = torch.load(sys.argv[1], weights_only=False)
assert not any(type(m).__module__.startswith("torch_aclnn") for m in model.modules())
x = torch.load(sys.argv[2])
torch.save(model(x), sys.argv[3])
"""


def test_convert_top_level_and_unconvert_pickles_without_torch_aclnn(tmp_path):
    import subprocess
    import sys

    import torch_aclnn

    assert torch_aclnn.convert is tann.convert and torch_aclnn.unconvert is tann.unconvert
    torch.manual_seed(0)
    elu = tnn.ELU(0.5)
    model = tnn.Sequential(tnn.Upsample(scale_factor=2), elu, tnn.MaxPool3d(2, return_indices=False), elu,
                           tnn.SELU(), tnn.Upsample(scale_factor=2, mode="trilinear"))
    x = torch.randn(1, 2, 2, 3, 4)
    want = model(x)
    converted = torch_aclnn.convert(model)
    assert type(converted[1]) is tann.ELU and converted[1] is converted[3]
    torch.save(converted, tmp_path / "converted.pt")
    back = torch_aclnn.unconvert(converted)
    assert back is converted  # (in place; the root is a Sequential)
    assert [type(m) for m in back] == [tnn.Upsample, tnn.ELU, tnn.MaxPool3d, tnn.ELU, tnn.SELU, tnn.Upsample]
    assert back[1] is back[3] and back[1].alpha == 0.5
    assert type(torch_aclnn.unconvert(tann.CELU(2.0))) is tnn.CELU
    torch.save(back, tmp_path / "model.pt")
    torch.save(x, tmp_path / "x.pt")

    def load(name):
        return subprocess.run([sys.executable, "-c", _LOAD_WITHOUT_TORCH_ACLNN, str(tmp_path / name),
                               str(tmp_path / "x.pt"), str(tmp_path / "y.pt")], capture_output=True, text=True,
                              timeout=300)

    run = load("model.pt")
    assert run.returncode == 0, run.stderr
    torch.testing.assert_close(torch.load(tmp_path / "y.pt"), want)
    run = load("converted.pt")  # the converted model needs torch_aclnn
    assert run.returncode != 0 and "torch_aclnn" in run.stderr
