"""OpInfos of the SmoothL1 family (docs/spec.md §4): smooth_l1_loss and
smooth_l1_loss_backward."""
from __future__ import annotations

import math

import torch

from .._torch_api import promoted_dtype
from .core import FLOATING, LAYOUTS, ErrorInput, OpInfo, SampleInput, make_tensor, with_backward

REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


# ---------------------------------------------------------------------------
# float64 reference of the spec's formulas (independent of the kernels and of
# aten's smooth_l1 implementation).

def _diff(self, target):
    return self.detach().to(torch.float64) - target.detach().to(torch.float64)


def reference_forward(self, target, reduction=1, beta=1.0):
    z = _diff(self, target).abs()
    quadratic = 0.5 * z * z / beta if beta > 0 else torch.zeros_like(z)
    loss = torch.where(z < beta, quadratic, z - 0.5 * beta)
    if reduction == 1:
        return loss.mean()  # NaN for no elements, as torch
    if reduction == 2:
        return loss.sum()
    return loss


def reference_backward(grad_output, self, target, reduction, beta):
    d = _diff(self, target)
    slope = d / beta if beta > 0 else torch.zeros_like(d)
    r = torch.where(d.abs() >= beta, torch.sign(d), slope)  # sign(0) = 0
    norm = 1.0 / d.numel() if reduction == 1 and d.numel() else 1.0
    return norm * r * grad_output.detach().to(torch.float64)


# ---------------------------------------------------------------------------
# aten counterparts, called the way F.smooth_l1_loss calls them (inputs
# broadcast first), so they agree with the spec on every sample below: the
# spec's 'mean' divides by numel(broadcast(self, target)), which is aten's
# self.numel() once self is broadcast; for beta == 0 aten's raw backward
# gives -1 at d == 0 where the spec (and F.l1_loss's gradient) gives 0, so
# that point is corrected.

def aten_forward(self, target, reduction=1, beta=1.0):
    self, target = torch.broadcast_tensors(self, target)
    return torch.ops.aten.smooth_l1_loss(self, target, reduction, beta)


def aten_backward(grad_output, self, target, reduction, beta):
    shape = torch.broadcast_shapes(grad_output.shape, self.shape, target.shape)
    if reduction == 1:
        assert torch.broadcast_shapes(self.shape, target.shape) == shape, "aten's 'mean' norm would differ"
    dtype = promoted_dtype(grad_output, self, target)
    s, t = self.to(dtype).expand(shape), target.to(dtype).expand(shape)
    out = torch.ops.aten.smooth_l1_loss_backward(grad_output.to(dtype), s, t, reduction, beta)
    if beta == 0:
        out = torch.where(s == t, torch.zeros_like(out), out)
    return out


# ---------------------------------------------------------------------------
# Samples: self shape, target shape, grad_output shape for 'none' (None: the
# loss's shape), and the reductions each is tried with, at beta = 1; then
# the other betas. Layouts rotate over the samples.

_NONE, _MEAN, _SUM = 0, 1, 2
_ALL = (_NONE, _MEAN, _SUM)

_SHAPES = [
    ((4, 5), (4, 5), None, _ALL),                      # same shapes
    ((2, 3, 2, 3, 4), (2, 3, 2, 3, 4), None, (_SUM, _MEAN, _NONE)),  # 5-D ('none' meets channels_last_3d)
    ((3, 1, 4), (5, 1), None, _ALL),                   # both broadcast
    ((1, 6), (4, 1), (2, 4, 6), _ALL),                 # grad_output adds a leading dim ('none')
    ((2, 3), (), None, (_NONE, _SUM)),                 # 0-dim target
    ((), (), None, (_MEAN,)),                          # 0-dim both
    ((1, 1, 1), (1,), None, (_NONE,)),                 # size-1 axes
    # empty ('mean' of it is NaN, which opcheck's output comparison cannot
    # take: tests/test_smooth_l1.py covers it)
    ((0, 3), (3,), None, (_NONE, _SUM)),
    ((37,), (37,), None, (_NONE, _MEAN)),              # vector tails
]

# beta, the shapes (indices into _SHAPES) it is tried on with 'none' and with
# 'mean' / 'sum'. beta = 0 is plain L1 (random data never has d == 0).
_BETAS = [(0.5, 2, 0, _SUM), (2.5, 1, 3, _MEAN), (0.0, 3, 2, _MEAN), (0.0, 0, 1, _SUM)]


def _layout(shape, k):
    """The k-th (cyclically) of the layouts that the rank can express."""
    fits = [lay for lay in LAYOUTS if not ((lay == "channels_last_3d" and len(shape) != 5)
                                           or (lay == "permuted" and len(shape) < 2)
                                           or (lay == "sliced" and len(shape) < 1))]
    return fits[k % len(fits)]


def _cases():
    """(self shape, target shape, grad shape, reduction, beta, layout)."""
    k = 0
    for s, t, g, reductions in _SHAPES:
        for reduction in reductions:
            yield s, t, g, reduction, 1.0, _layout(s, k)
            k += 1
    for beta, i_none, i_reduced, reduction in _BETAS:
        for i, r in ((i_none, _NONE), (i_reduced, reduction)):
            s, t, g, _ = _SHAPES[i]
            yield s, t, g, r, beta, _layout(s, k)
            k += 1


def _forward_samples(device, dtype, requires_grad):
    for s, t, _, reduction, beta, layout in _cases():
        x = make_tensor(s, dtype, device, layout=layout, requires_grad=requires_grad)
        y = make_tensor(t, dtype, device, layout=layout, requires_grad=requires_grad)
        yield SampleInput((x, y, reduction, beta),
                          desc=f"{list(s)},{list(t)} {REDUCTIONS[reduction]} beta={beta} {layout}",
                          layout=layout,
                          # 'none': the same formula in the same operation
                          # order as aten's kernel, one rounding each.
                          exact_vs_aten=reduction == 0 and dtype in (torch.float32, torch.float64))


def _pow2_or_zero(beta: float) -> bool:
    return beta == 0 or math.frexp(beta)[0] == 0.5


def _backward_samples(device, dtype, requires_grad):
    for s, t, g, reduction, beta, layout in _cases():
        # 'none': grad_output has the loss's shape (or broadcasts to more);
        # 'mean' / 'sum': it is the 0-dim gradient of the reduced loss.
        g_shape = (g or torch.broadcast_shapes(s, t)) if reduction == 0 else ()
        go = make_tensor(g_shape, dtype, device, layout=layout, requires_grad=requires_grad)
        x = make_tensor(s, dtype, device, layout=layout, requires_grad=requires_grad)
        y = make_tensor(t, dtype, device, layout=layout, requires_grad=requires_grad)
        yield SampleInput((go, x, y, reduction, beta),
                          desc=f"g{list(g_shape)},{list(s)},{list(t)} {REDUCTIONS[reduction]} beta={beta} {layout}",
                          layout=layout,
                          # aten's vectorised loop computes norm * (d / beta) * g
                          # as we do, its scalar loop (tails, strided inputs)
                          # norm * d * g / beta: the same bits when dividing by
                          # beta is exact (a power of two; 0 never divides).
                          exact_vs_aten=_pow2_or_zero(beta) and dtype in (torch.float32, torch.float64))


# ---------------------------------------------------------------------------
# Errors: one per contract-error row of §4 (None -> 161001 is the Python
# API's, tested in tests/test_smooth_l1.py), plus adversarial ones.

def _E(args, exc, match, desc, **kw):
    return ErrorInput(SampleInput(args, kw.pop("kwargs", {}), desc=desc), exc, match, **kw)


_DTYPE = r"must be float32, float64, float16 or bfloat16, got "


def _forward_errors(device):
    x = make_tensor((2, 3), torch.float32, device)
    # a dtype is not supported / the dtypes cannot be promoted
    yield _E((x.to(torch.int32), x, 1, 1.0), TypeError, r"self " + _DTYPE + "Int", "self int32")
    yield _E((x, x.to(torch.int64), 1, 1.0), TypeError, r"target " + _DTYPE + "Long", "target int64")
    yield _E((x, x.to(torch.bool), 1, 1.0), TypeError, r"target " + _DTYPE + "Bool", "target bool")
    yield _E((x, x.to(torch.complex64), 1, 1.0), TypeError, r"target " + _DTYPE + "ComplexFloat",
             "target complex (unpromotable)")
    # shapes are not broadcastable
    yield _E((x, make_tensor((4,), torch.float32, device), 1, 1.0), ValueError,
             r"self \[2, 3\] and target \[4\] are not broadcastable: size 3 vs 4 at dim -1", "not broadcastable")
    yield _E((make_tensor((0, 3), torch.float32, device), make_tensor((2, 1), torch.float32, device), 0, 1.0),
             ValueError, r"self \[0, 3\] and target \[2, 1\] are not broadcastable: size 0 vs 2 at dim -2",
             "empty vs 2 not broadcastable")
    # reduction not in {0, 1, 2}
    yield _E((x, x, 3, 1.0), ValueError, r"reduction must be 0 \('none'\), 1 \('mean'\) or 2 \('sum'\), got 3",
             "reduction 3")
    yield _E((x, x, -1, 1.0), ValueError, r"reduction must be .* got -1", "reduction -1")
    # beta < 0 (also NaN)
    yield _E((x, x, 1, -1.0), ValueError, r"beta must be >= 0, got -1\.0", "beta negative")
    yield _E((x, x, 1, float("nan")), ValueError, r"beta must be >= 0, got nan", "beta nan")
    yield _E((x, x, 1, float("-inf")), ValueError, r"beta must be >= 0, got -inf", "beta -inf")


def _backward_errors(device):
    x = make_tensor((2, 3), torch.float32, device)
    g0 = make_tensor((), torch.float32, device)
    out = torch.empty(2, 3, device=device)
    yield _E((x.to(torch.int64), x, x, 0, 1.0), TypeError, r"grad_output " + _DTYPE + "Long", "grad_output int64")
    yield _E((x, x.to(torch.int32), x, 0, 1.0), TypeError, r"self " + _DTYPE + "Int", "self int32")
    yield _E((x, x, x.to(torch.uint8), 0, 1.0), TypeError, r"target " + _DTYPE + "Byte", "target uint8")
    yield _E((x.to(torch.complex64), x, x, 0, 1.0), TypeError, r"grad_output " + _DTYPE + "ComplexFloat",
             "grad_output complex (unpromotable)")
    yield _E((x, x, make_tensor((3, 2), torch.float32, device), 0, 1.0), ValueError,
             r"self \[2, 3\] and target \[3, 2\] are not broadcastable: size 2 vs 3 at dim -2",
             "self/target not broadcastable")
    yield _E((make_tensor((5, 1, 1), torch.float32, device), x, make_tensor((4, 1, 3), torch.float32, device), 0, 1.0),
             ValueError, r"broadcast\(self, target\) \[4, 2, 3\] and grad_output \[5, 1, 1\] are not broadcastable",
             "grad_output not broadcastable")
    yield _E((x, x, x, 3, 1.0), ValueError, r"reduction must be 0 \('none'\), 1 \('mean'\) or 2 \('sum'\), got 3",
             "reduction 3")
    yield _E((g0, x, x, -2, 1.0), ValueError, r"reduction must be .* got -2", "reduction -2")
    yield _E((g0, x, x, 1, -1.0), ValueError, r"beta must be >= 0, got -1\.0", "beta negative")
    yield _E((g0, x, x, 1, float("nan")), ValueError, r"beta must be >= 0, got nan", "beta nan")
    # out= (grad_input): shape must be the broadcast shape, dtype the promoted one
    yield _E((x, x, x, 0, 1.0), ValueError,
             r"grad_input must have the broadcast shape of grad_output, self and target \[2, 3\], got \[3, 2\]",
             "out shape differs", kwargs={"grad_input": torch.empty(3, 2, device=device)}, overload="grad_input")
    yield _E((make_tensor((4, 1, 1), torch.float32, device), x, x, 0, 1.0), ValueError,
             r"grad_input must have the broadcast shape of grad_output, self and target \[4, 2, 3\], got \[2, 3\]",
             "out lacks grad_output's broadcast dim", kwargs={"grad_input": out}, overload="grad_input")
    yield _E((g0, x, x, 1, 1.0), ValueError, r"grad_input must have the broadcast shape .* \[2, 3\], got \[\]",
             "out 0-dim", kwargs={"grad_input": torch.empty((), device=device)}, overload="grad_input")
    yield _E((x, x, x, 0, 1.0), TypeError,
             r"grad_input must have the promoted dtype Float of grad_output, self and target, got Double",
             "out dtype differs", kwargs={"grad_input": out.double()}, overload="grad_input")
    yield _E((x, x.half(), x.bfloat16(), 0, 1.0), TypeError,
             r"grad_input must have the promoted dtype Float .* got Half",
             "out dtype not the promoted one", kwargs={"grad_input": out.half()}, overload="grad_input")


OP_INFOS = with_backward(
    OpInfo(name="smooth_l1_loss", family="smooth_l1", dtypes=FLOATING, sample_inputs=_forward_samples,
           reference=reference_forward, error_inputs=_forward_errors, aten=aten_forward, grad_argnums=(0, 1)),
    sample_inputs=_backward_samples, reference=reference_backward, error_inputs=_backward_errors, aten=aten_backward,
    grad_argnums=(0, 1, 2))
