"""SmoothL1 family (docs/spec.md §4) tests beyond the generic OpInfo ones in
tests/test_common.py: the worked example, the deliberate differences from
aten's raw backward (beta == 0 at d == 0, the 'mean' divisor), parity with
F.smooth_l1_loss values and autograd, dtype promotion, low precision rounded
once, reductions (empty, deterministic whatever the thread count, accurate),
non-finite values, out=, the Python API, and a compiled training step."""
import contextlib
import math
import warnings

import pytest
import torch
import torch._dynamo.testing
import torch.nn.functional as F

import torch_aclnn
from torch_aclnn.testing import make_tensor, tolerance
from torch_aclnn.testing.core import assert_same_step
from torch_aclnn.testing.smooth_l1 import reference_backward, reference_forward

ops = torch.ops.torch_aclnn
f16, bf16, f32, f64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
REDUCTIONS = ["none", "mean", "sum"]


def F_smooth_l1(x, t, reduction, beta):
    """F.smooth_l1_loss without its warning about differing sizes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return F.smooth_l1_loss(x, t, reduction=reduction, beta=beta)


@contextlib.contextmanager
def num_threads(n):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def with_ties(x, t):
    """t with some elements equal to x's (d == 0) and some at |d| == 1."""
    t = t.detach().clone()
    t.view(-1)[::5] = x.detach().reshape(-1)[::5]
    t.view(-1)[1::7] = x.detach().reshape(-1)[1::7] - 1
    return t


# ---------------------------------------------------------------------------
# The spec's worked example and its deliberate differences from aten.

def test_worked_example():
    g, s, t = torch.ones(4, 2), torch.arange(8.0).view(4, 2), torch.ones(4, 2)
    out = torch_aclnn.smooth_l1_loss_backward(g, s, t, 0, 1.0)
    assert out.shape == (4, 2) and out.dtype == f32
    assert torch.equal(out.flatten(), torch.tensor([-1.0, 0, 1, 1, 1, 1, 1, 1]))


def test_beta_zero_gradient_is_zero_at_d_zero():
    s = torch.tensor([-1.0, 0.0, 2.0, 5.0, -0.0])
    t = torch.tensor([0.0, 0.0, 2.0, 1.0, 0.0])
    g = torch.full((5,), 3.0)
    ours = torch_aclnn.smooth_l1_loss_backward(g, s, t, "none", 0.0)
    assert torch.equal(ours, torch.tensor([-3.0, 0.0, 0.0, 3.0, 0.0]))
    # aten's raw CPU kernel gives -1 at d == 0 (the difference is deliberate;
    # aten's CUDA kernel gives NaN there, 0 / 0) ...
    aten = torch.ops.aten.smooth_l1_loss_backward(g, s, t, 0, 0.0)
    if s.device.type == "cpu":
        assert aten[1] == -3.0 and aten[2] == -3.0
    else:
        assert not torch.isfinite(aten[1:3]).any() or (aten[1:3] == -3.0).all()
    # ... F.smooth_l1_loss(beta=0) is l1_loss, whose gradient there is 0, as ours.
    x = s.clone().requires_grad_()
    F_smooth_l1(x, t, "none", 0.0).backward(g)
    assert torch.equal(x.grad, ours)
    # and the forward's autograd goes through our backward
    x2 = s.clone().requires_grad_()
    torch_aclnn.smooth_l1_loss(x2, t, "none", 0.0).backward(g)
    assert torch.equal(x2.grad, ours)


def test_abs_d_equal_beta_takes_the_sign_side():
    s, t = torch.tensor([2.0, -2.0, 0.5, 1.5]), torch.tensor([1.0, -1.0, 0.0, 2.0])
    g = torch.ones(4)
    ours = ops.smooth_l1_loss_backward(g, s, t, 0, 1.0)
    assert torch.equal(ours, torch.tensor([1.0, -1.0, 0.5, -0.5]))
    assert torch.equal(ours, torch.ops.aten.smooth_l1_loss_backward(g, s, t, 0, 1.0))


def test_mean_divides_by_the_broadcast_numel():
    s, t = make_tensor((3, 1), f64), make_tensor((3, 4), f64)
    g = torch.tensor(0.75, dtype=f64)
    ours = ops.smooth_l1_loss_backward(g, s, t, 1, 1.0)
    torch.testing.assert_close(ours, reference_backward(g, s, t, 1, 1.0), rtol=0, atol=1e-15)
    # aten divides by self.numel() = 3, not 12 (and warns that it resizes its output)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aten = torch.ops.aten.smooth_l1_loss_backward(g, s, t, 1, 1.0)
    torch.testing.assert_close(aten, 4 * ours)
    # F.smooth_l1_loss broadcasts first, so its gradient agrees with ours
    x = s.clone().requires_grad_()
    F_smooth_l1(x, t, "mean", 1.0).backward(g)
    torch.testing.assert_close(x.grad, ours.sum(1, keepdim=True))


def test_grad_output_broadcasts_the_result():
    g, s, t = make_tensor((2, 3, 4), f64), make_tensor((3, 1), f64), make_tensor((4,), f64)
    for reduction in (0, 1, 2):
        out = ops.smooth_l1_loss_backward(g, s, t, reduction, 0.5)
        assert out.shape == (2, 3, 4)
        # 'mean' still divides by numel(broadcast(self, target)) = 12
        torch.testing.assert_close(out, reference_backward(g, s, t, reduction, 0.5), rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------
# Parity with F.smooth_l1_loss: values and autograd (which routes beta == 0
# to l1_loss), including d == 0 and |d| == beta ties.

@pytest.mark.parametrize("shapes", [((3, 5), (3, 5)), ((3, 1, 4), (5, 1)), ((2, 3), ())],
                         ids=["same", "broadcast", "0-dim-target"])
@pytest.mark.parametrize("beta", [1.0, 0.3, 0.0])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_matches_functional_with_autograd(reduction, beta, shapes):
    for dtype in (f64, f32):
        x = make_tensor(shapes[0], dtype)
        t = make_tensor(shapes[1], dtype)
        if shapes[0] == shapes[1]:
            t = with_ties(x, t)
        xs, ts = x.clone().requires_grad_(), t.clone().requires_grad_()
        xf, tf = x.clone().requires_grad_(), t.clone().requires_grad_()
        ours, theirs = torch_aclnn.smooth_l1_loss(xs, ts, reduction, beta), F_smooth_l1(xf, tf, reduction, beta)
        tol = tolerance(dtype)
        torch.testing.assert_close(ours, theirs, **tol)
        g = make_tensor(ours.shape, dtype)
        ours_g = torch.autograd.grad(ours, (xs, ts), g)
        theirs_g = torch.autograd.grad(theirs, (xf, tf), g)
        for a, b in zip(ours_g, theirs_g):
            assert a.shape == b.shape and a.dtype == b.dtype
            torch.testing.assert_close(a, b, **tol)


def test_default_arguments_match_functional():
    x, t = make_tensor((4, 6), f64), make_tensor((4, 6), f64)
    torch.testing.assert_close(torch_aclnn.smooth_l1_loss(x, t), F.smooth_l1_loss(x, t))
    torch.testing.assert_close(ops.smooth_l1_loss(x, t), F.smooth_l1_loss(x, t))


# ---------------------------------------------------------------------------
# Bitwise agreement with aten beyond the OpInfo samples: the 'none' loss for
# any beta, the backward where aten's two loops agree with ours (beta a power
# of two, or 0 away from d == 0), on sizes with vector tails and strided views.

@pytest.mark.parametrize("dtype", [f32, f64])
def test_bitwise_equal_to_aten_on_larger_inputs(dtype):
    base = make_tensor((37, 61), dtype)
    cases = [(make_tensor((1003,), dtype), make_tensor((1003,), dtype), make_tensor((1003,), dtype)),
             (base.t(), make_tensor((61, 37), dtype)[:, ::1], make_tensor((61, 1), dtype)),
             (make_tensor((5, 77), dtype)[:, ::2], make_tensor((39,), dtype), make_tensor((5, 39), dtype))]
    for x, t, g in cases:
        for beta in (0.3, 1.0, 2.5):
            ours = ops.smooth_l1_loss(x, t, 0, beta)
            aten = torch.ops.aten.smooth_l1_loss(*torch.broadcast_tensors(x, t), 0, beta)
            assert torch.equal(ours, aten)
        shape = torch.broadcast_shapes(g.shape, x.shape, t.shape)
        xe, te = x.expand(shape), t.expand(shape)
        for beta in (1.0, 0.5, 0.0):
            ours = ops.smooth_l1_loss_backward(g, x, t, 0, beta)
            aten = torch.ops.aten.smooth_l1_loss_backward(g, xe, te, 0, beta)
            assert torch.equal(ours, aten)


# ---------------------------------------------------------------------------
# dtypes

@pytest.mark.parametrize("dtypes", [(f16, bf16), (f32, f64), (f16, f32), (bf16, f64), (f64, f16)],
                         ids=lambda d: "-".join(str(x).replace("torch.", "") for x in d))
def test_dtype_promotion(dtypes):
    x, t = make_tensor((3, 4), dtypes[0]), make_tensor((3, 4), dtypes[1])
    promoted = torch.result_type(x, t)
    for reduction in (0, 1, 2):
        loss = ops.smooth_l1_loss(x, t, reduction, 0.5)
        assert loss.dtype == promoted
        torch.testing.assert_close(loss.double(), reference_forward(x, t, reduction, 0.5), **tolerance(promoted))
    # a 0-dim grad_output does not lift the dtype (torch's rule); a
    # dimensioned one does
    g0 = torch.tensor(0.75, dtype=f64)
    gi = ops.smooth_l1_loss_backward(g0, x, t, 1, 0.5)
    assert gi.dtype == promoted
    torch.testing.assert_close(gi.double(), reference_backward(g0, x, t, 1, 0.5), **tolerance(promoted))
    g = make_tensor((3, 4), f64)
    assert ops.smooth_l1_loss_backward(g, x, t, 0, 0.5).dtype == f64


def test_zero_dim_operands_rank_below_dimensioned_ones():
    x = make_tensor((3, 4), f32)
    t0 = torch.tensor(0.5, dtype=f64)
    assert ops.smooth_l1_loss(x, t0, 0, 1.0).dtype == torch.result_type(x, t0) == f32
    assert ops.smooth_l1_loss(t0, t0.float(), 0, 1.0).dtype == f64
    h = make_tensor((3, 4), f16)
    assert ops.smooth_l1_loss_backward(torch.tensor(1.0), h, h, 2, 1.0).dtype == f16


@pytest.mark.parametrize("dtype", [f16, bf16])
def test_low_precision_computes_in_float32_and_rounds_once(dtype):
    """The formulas evaluated in float32 by torch, operation by operation in
    the kernels' order, then rounded once: bitwise equal."""
    x, t, g = (make_tensor((1000,), dtype) for _ in range(3))
    t = with_ties(x, t)
    xf, tf, gf = x.float(), t.float(), g.float()
    for beta in (1.0, 0.3, 0.0):
        b = torch.tensor(beta, dtype=f32)
        z = (xf - tf).abs()
        loss = torch.where(z < b, 0.5 * z * z / b, z - 0.5 * b).to(dtype)
        assert torch.equal(ops.smooth_l1_loss(x, t, 0, beta), loss)
        d = xf - tf
        r = torch.where(d.abs() >= b, torch.sign(d), d / b)
        assert torch.equal(ops.smooth_l1_loss_backward(g, x, t, 0, beta), (r * gf).to(dtype))


@pytest.mark.parametrize("dtype", [f32, f64])
def test_formulas_bitwise_at_extreme_betas(dtype):
    """The kernels take shortcuts for a finite beta > 0 (clamp(d / beta, -1, 1)
    for the compare-and-select, x * (1 / beta) for x / beta where 1 / beta is
    an exact power of two): bitwise the formulas as written, evaluated by
    torch operation by operation, at betas that probe each shortcut's edges
    (powers of two whose inverse is subnormal or overflows, a subnormal beta,
    0, inf) and d = +-0, +-inf, NaN, |d| == beta, |d| just below beta, on
    vector bodies and scalar tails alike."""
    info = torch.finfo(dtype)
    specials = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 3.0], dtype=dtype)
    top = 2.0 ** (math.frexp(info.max)[1] - 1)  # the largest power of two: its inverse is subnormal
    betas = [1.0, 0.5, 2.0, 0.3, top, info.tiny, info.tiny / 4, 1e-45, info.max, 0.0, math.inf]
    for beta in betas:
        b = torch.tensor(beta, dtype=dtype)
        x = torch.cat([specials, make_tensor((61,), dtype) * 4, b.expand(3), -b.expand(3),
                       torch.nextafter(b, torch.zeros(())).expand(2), b.expand(2) * 3]).contiguous()
        t = torch.zeros_like(x)
        t[8:20] = x[8:20]
        g = make_tensor(x.shape, dtype)
        g[:4] = torch.tensor([1.0, -1.0, 2.0, -0.0])
        d = x - t
        r = torch.where(d.abs() >= b, torch.sign(d), d / b)
        for norm, red, go in ((1.0, 0, g), (1.0 / x.numel(), 1, g[5])):
            want = norm * r * go
            got = ops.smooth_l1_loss_backward(go, x, t, red, beta)
            assert torch.equal(got.isnan(), want.isnan()), beta
            assert torch.equal(got.nan_to_num(), want.nan_to_num()), beta
            assert torch.equal(got.nan_to_num().signbit(), want.nan_to_num().signbit()), beta
        z = d.abs()
        loss = torch.where(z < b, 0.5 * z * z / b, z - 0.5 * b)
        got = ops.smooth_l1_loss(x, t, 0, beta)
        assert torch.equal(got.nan_to_num(), loss.nan_to_num()) and torch.equal(got.isnan(), loss.isnan()), beta


# ---------------------------------------------------------------------------
# Reductions

@pytest.mark.parametrize("dtype", [f32, f64, f16, bf16])
def test_empty(dtype):
    x, t = torch.empty(0, 3, dtype=dtype), torch.empty(3, dtype=dtype)
    assert ops.smooth_l1_loss(x, t, 0, 1.0).shape == (0, 3)
    mean = ops.smooth_l1_loss(x, t, 1, 1.0)
    assert mean.shape == () and mean.dtype == dtype and torch.isnan(mean)
    assert torch.isnan(F.smooth_l1_loss(x, t.expand(0, 3)))  # as torch
    total = ops.smooth_l1_loss(x, t, 2, 1.0)
    assert total.shape == () and total.item() == 0.0
    for reduction in (0, 1, 2):
        g = torch.empty(0, 3, dtype=dtype) if reduction == 0 else torch.tensor(1.0, dtype=dtype)
        assert ops.smooth_l1_loss_backward(g, x, t, reduction, 1.0).shape == (0, 3)
    # autograd through an empty loss
    xs = x.clone().requires_grad_()
    ops.smooth_l1_loss(xs, t, 2, 1.0).backward()
    assert xs.grad.shape == (0, 3)


def _ulp(x: float, dtype) -> float:
    return torch.finfo(dtype).eps * 2.0 ** math.floor(math.log2(abs(x)))


@pytest.mark.parametrize("layout", ["contiguous", "strided-broadcast"])
def test_reduction_is_deterministic_and_accurate(layout):
    n = 600_011  # many fixed chunks and a ragged tail
    if layout == "contiguous":
        x, t = make_tensor((n,), f32), make_tensor((n,), f32)
    else:  # rows gathered through strides, target broadcast
        x, t = make_tensor((1031, 583), f32).t(), make_tensor((583, 1), f32)
    for reduction in (1, 2):
        results = []
        for threads in (1, 2, 3):
            with num_threads(threads):
                results.append(ops.smooth_l1_loss(x, t, reduction, 0.7))
        assert all(torch.equal(r, results[0]) for r in results[1:])
        ref = reference_forward(x, t, reduction, 0.7).item()
        # float32 losses summed in float64: within one float32 rounding
        assert abs(results[0].item() - ref) <= _ulp(ref, f32), (results[0].item(), ref)


@pytest.mark.parametrize("dtype", [f16, bf16])
def test_low_precision_reduction_accumulates_in_float64(dtype):
    x, t = make_tensor((20_011,), dtype), make_tensor((20_011,), dtype)  # the sum stays below half's max
    for reduction in (1, 2):
        ours = ops.smooth_l1_loss(x, t, reduction, 1.0)
        ref = reference_forward(x, t, reduction, 1.0).item()
        # one rounding to the output dtype (the float32 losses add ~1e-7)
        assert abs(ours.item() - ref) <= _ulp(ref, dtype) / 2 * (1 + 1e-5)


# ---------------------------------------------------------------------------
# Non-finite values

def test_non_finite_values_propagate():
    nan, inf = float("nan"), float("inf")
    s = torch.tensor([nan, inf, -inf, 1.0, 0.25])
    t = torch.tensor([0.0, 0.0, 0.0, nan, 0.0])
    loss = ops.smooth_l1_loss(s, t, 0, 1.0)
    torch.testing.assert_close(loss, torch.tensor([nan, inf, inf, nan, 0.03125]), equal_nan=True)
    assert torch.equal(loss.isnan(), torch.ops.aten.smooth_l1_loss(s, t, 0, 1.0).isnan())
    g = torch.full((5,), 2.0)
    grad = ops.smooth_l1_loss_backward(g, s, t, 0, 1.0)
    torch.testing.assert_close(grad, torch.tensor([nan, 2.0, -2.0, nan, 0.5]), equal_nan=True)
    assert torch.isnan(ops.smooth_l1_loss(s, t, 1, 1.0)) and torch.isnan(ops.smooth_l1_loss(s, t, 2, 1.0))
    # beta = inf is allowed (the loss is 0 for finite d)
    assert torch.equal(ops.smooth_l1_loss(s[3:], torch.zeros(2), 0, inf), torch.zeros(2))


# ---------------------------------------------------------------------------
# out=

def test_out_writes_in_place_with_any_strides():
    x, t, g = make_tensor((3, 4), f32), make_tensor((4,), f32), make_tensor((3, 4), f32)
    expected = ops.smooth_l1_loss_backward(g, x, t, 0, 0.5)
    out = torch.full((4, 3), float("nan")).t()
    got = torch_aclnn.smooth_l1_loss_backward(g, x, t, "none", 0.5, out=out)
    assert got.data_ptr() == out.data_ptr() and out.stride() == (1, 3)
    assert torch.equal(out, expected)


def test_out_sharing_memory_with_an_input():
    g, t = make_tensor((3, 4), f32), make_tensor((3, 4), f32)
    buf = make_tensor((20,), f32)
    x = buf[:12].view(3, 4)
    expected = ops.smooth_l1_loss_backward(g, x.clone(), t, 0, 0.5)
    x_in_place = x.clone()
    torch_aclnn.smooth_l1_loss_backward(g, x_in_place, t, "none", 0.5, out=x_in_place)  # out is self
    assert torch.equal(x_in_place, expected)
    out = buf[4:16].view(3, 4)  # partial overlap with self
    torch_aclnn.smooth_l1_loss_backward(g, x, t, "none", 0.5, out=out)
    assert torch.equal(out, expected)


def test_out_with_internal_overlap_is_refused():
    x = make_tensor((3, 4), f32)
    with pytest.raises(RuntimeError, match="single memory location"):
        torch_aclnn.smooth_l1_loss_backward(x, x, x, "none", 1.0, out=torch.empty(4).expand(3, 4))


# ---------------------------------------------------------------------------
# Python API arguments

def test_reduction_spellings():
    x, t = make_tensor((3, 4), f64), make_tensor((3, 4), f64)
    g = torch.tensor(1.0, dtype=f64)
    for name, value in (("none", 0), ("mean", 1), ("sum", 2)):
        assert torch.equal(torch_aclnn.smooth_l1_loss(x, t, name), ops.smooth_l1_loss(x, t, value))
        assert torch.equal(torch_aclnn.smooth_l1_loss(x, t, value), ops.smooth_l1_loss(x, t, value))
        gg = make_tensor((3, 4), f64) if value == 0 else g
        assert torch.equal(torch_aclnn.smooth_l1_loss_backward(gg, x, t, name, 1.0),
                           ops.smooth_l1_loss_backward(gg, x, t, value, 1.0))
    for bad in ("avg", "Mean", True, 1.0):
        with pytest.raises(ValueError, match=r"^\[torch_aclnn 161002\] smooth_l1_loss: reduction must be "
                                             r"'none', 'mean' or 'sum' \(or 0, 1, 2\), got "):
            torch_aclnn.smooth_l1_loss(x, t, bad)
    with pytest.raises(ValueError, match=r"^\[torch_aclnn 161002\] smooth_l1_loss_backward: reduction must be "
                                         r"0 \('none'\), 1 \('mean'\) or 2 \('sum'\), got 5"):
        torch_aclnn.smooth_l1_loss_backward(g, x, t, 5, 1.0)


@pytest.mark.parametrize("arg", ["grad_output", "input", "target", "reduction", "beta"])
def test_none_is_161001(arg):
    x = make_tensor((2, 3), f32)
    args = dict(grad_output=x, input=x, target=x, reduction="none", beta=1.0)
    args[arg] = None
    message = rf"^\[torch_aclnn 161001\] smooth_l1_loss_backward: {arg} is required, got None"
    with pytest.raises(TypeError, match=message):
        torch_aclnn.smooth_l1_loss_backward(*args.values())
    if arg != "grad_output":
        del args["grad_output"]
        with pytest.raises(TypeError, match=rf"^\[torch_aclnn 161001\] smooth_l1_loss: {arg} is required, got None"):
            torch_aclnn.smooth_l1_loss(*args.values())


# ---------------------------------------------------------------------------
# Autograd details the generic gradcheck does not pin down

def test_second_derivative_values():
    """d/dself of <gg, backward(g, self, target)> is norm / beta * g * gg
    inside |d| < beta and 0 outside; d/dtarget is its negation."""
    s = torch.tensor([0.1, -0.4, 3.0, -2.0], dtype=f64, requires_grad=True)
    t = torch.zeros(4, dtype=f64, requires_grad=True)
    g = torch.tensor(1.5, dtype=f64, requires_grad=True)
    out = ops.smooth_l1_loss_backward(g, s, t, 1, 0.5)
    gg = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=f64)
    ds, dt, dg = torch.autograd.grad(out, (s, t, g), gg)
    inside = torch.tensor([1.0, 1.0, 0.0, 0.0], dtype=f64)
    torch.testing.assert_close(ds, 1.5 * gg * inside / 4 / 0.5)
    torch.testing.assert_close(dt, -ds)
    # linear in grad_output: d/dg = sum(gg * norm * dloss/dself)
    torch.testing.assert_close(dg, (gg * torch.tensor([0.2, -0.8, 1.0, -1.0], dtype=f64) / 4).sum())


def test_gradgradcheck_beta_zero_with_broadcasting():
    s = make_tensor((3, 1, 4), f64, requires_grad=True)
    t = make_tensor((5, 1), f64, requires_grad=True)
    g = make_tensor((2, 3, 5, 4), f64, requires_grad=True)
    fn = lambda g, s, t: ops.smooth_l1_loss_backward(g, s, t, 0, 0.0)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (g, s, t))
    assert torch.autograd.gradgradcheck(fn, (g, s, t))
    loss = lambda s, t: ops.smooth_l1_loss(s, t, 1, 0.0)  # noqa: E731
    assert torch.autograd.gradcheck(loss, (s, t))
    assert torch.autograd.gradgradcheck(loss, (s, t))


# ---------------------------------------------------------------------------
# torch.compile

def test_compiled_training_step_matches_eager():
    """The loss compiled with fullgraph=True, dynamic=True; its backward is
    the graph AOTAutograd derives from our autograd formula."""
    torch._dynamo.reset()

    def loss_fn(model, x, y):
        return torch_aclnn.smooth_l1_loss(model(x), y, "mean", 0.5)

    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(loss_fn, backend=counter, fullgraph=True, dynamic=True)
    for batch in (8, 13):
        torch.manual_seed(batch)
        eager_model = torch.nn.Linear(6, 3)
        compiled_model = torch.nn.Linear(6, 3)
        compiled_model.load_state_dict(eager_model.state_dict())
        x, y = torch.randn(batch, 6), torch.randn(batch, 1)  # the target broadcasts over the features
        assert_same_step(loss_fn(eager_model, x, y), compiled(compiled_model, x, y), eager_model, compiled_model)
    assert counter.frame_count == 1  # one graph for both batch sizes
