"""OpInfos of the LeakyReLU family (docs/spec.md §11): leaky_relu and
leaky_relu_backward.

Both kernels give aten's CPU bits in every dtype, layout and thread count:
the formulas are aten's ``x * (x > 0 ? 1 : negative_slope)`` /
``g * (x > 0 ? 1 : negative_slope)`` in the opmath type (float32 for
half/bfloat16), which aten's scalar loop equals bit for bit. The one
exception is the bit pattern of a NaN result in float16/bfloat16 where
aten runs its scalar loop (the tail of a run, strided inputs): both are NaN.
So every sample is marked exact_vs_aten (none has a NaN result).
"""
from __future__ import annotations

import torch

from .core import FLOATING, ErrorInput, OpInfo, SampleInput, make_layout, make_tensor, with_backward

# The negative slopes the samples cycle through.
SLOPES = {
    "default": 0.01,
    "nnunet": 0.01,
    "steep": 0.2,
    "one": 1.0,
    "zero": 0.0,
    "negative": -0.3,
    "big": 5.5,
    "int": 2,  # an integer Scalar
}


# ---------------------------------------------------------------------------
# float64 reference written from the spec (independent of the kernels and of
# aten's leaky_relu implementation).

def reference_forward(self, negative_slope=0.01):
    x = self.detach().to(torch.float64)
    return torch.where(x > 0, x, x * negative_slope)


def reference_backward(grad_output, self, negative_slope, self_is_result):
    g = grad_output.detach().to(torch.float64)
    x = self.detach().to(torch.float64)
    return torch.where(x > 0, g, g * negative_slope)


# ---------------------------------------------------------------------------
# Samples. Each case: shape, layout, slope (and, for the backward,
# self_is_result). Together they cover 0-D, size 1, empty, 1..8 dims, every
# layout, integer and float slopes, zero and negative slopes, and both
# self_is_result modes.

_CASES = [
    # shape, layout, slope
    ((), "contiguous", "default"),
    ((0,), "contiguous", "steep"),
    ((1,), "contiguous", "negative"),
    ((64,), "contiguous", "steep"),
    ((4, 16), "permuted", "big"),
    ((3, 5, 7), "sliced", "steep"),
    ((2, 3, 4, 4, 3), "channels_last_3d", "nnunet"),
    ((2, 0, 3), "permuted", "default"),
    ((2, 1, 2, 1, 2, 1, 2, 4), "contiguous", "zero"),
    ((33, 5), "sliced", "int"),
    ((517,), "contiguous", "one"),
]

_BACKWARD_CASES = [
    # shape, layout, slope, self_is_result
    ((), "contiguous", "default", True),
    ((0,), "contiguous", "steep", False),
    ((1,), "contiguous", "negative", False),
    ((64,), "contiguous", "steep", True),
    ((4, 16), "permuted", "big", True),
    ((3, 5, 7), "sliced", "negative", False),
    ((2, 3, 4, 4, 3), "channels_last_3d", "nnunet", True),
    ((2, 3, 4, 4, 3), "channels_last_3d", "steep", False),
    ((2, 0, 3), "permuted", "default", True),
    ((2, 1, 2, 1, 2, 1, 2, 4), "contiguous", "zero", False),
    ((33, 5), "sliced", "int", False),
    ((517,), "contiguous", "one", True),
]


def _desc(shape, layout, slope, extra=""):
    return f"{list(shape)} {slope}{extra} {layout}"


# Values where the branches meet or saturate: zeros of both signs,
# infinities, subnormals, tiny and huge magnitudes. Not differentiable at 0,
# so only offered when gradients are not wanted.
EDGE_VALUES = [0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 30.0, -30.0, 1e30, -1e30, float("inf"), float("-inf"),
               0.5, -0.5, 1e-40, -1e-40]


def _away_from_zero(x):
    """make_tensor's values pushed off 0 by at least 0.05 (the kink), so
    gradcheck's finite differences do not straddle it."""
    return torch.where(x.abs() < 0.05, torch.where(x < 0, -0.05, 0.05), x).to(x.dtype)


def forward_samples(device, dtype, requires_grad):
    for shape, layout, slope in _CASES:
        x = make_layout(_away_from_zero(make_tensor(shape, dtype, device)), layout).requires_grad_(requires_grad)
        yield SampleInput((x, SLOPES[slope]), desc=_desc(shape, layout, slope), layout=layout,
                          exact_vs_aten=True)
    if not requires_grad:
        x = torch.tensor(EDGE_VALUES, dtype=dtype, device=device)
        # (Non-finite slopes make NaN of inf * 0 at x == 0: tests/test_leaky_relu.py.)
        for slope in (0.01, -0.3):
            yield SampleInput((x, slope), desc=f"edge values slope={slope}", exact_vs_aten=True)


def backward_samples(device, dtype, requires_grad):
    for shape, layout, slope, self_is_result in _BACKWARD_CASES:
        s = SLOPES[slope]
        g = make_tensor(shape, dtype, device, layout=layout, requires_grad=requires_grad)
        x = _away_from_zero(make_tensor(shape, dtype, device))
        if self_is_result:  # a forward output
            x = reference_forward(x, s).to(dtype)
        x = make_layout(x, layout).requires_grad_(requires_grad)
        yield SampleInput((g, x, s, self_is_result), desc=_desc(shape, layout, slope, f" self_is_result={self_is_result}"),
                          layout=layout, exact_vs_aten=True)
    if not requires_grad:
        n = len(EDGE_VALUES)
        x = torch.tensor(EDGE_VALUES, dtype=dtype, device=device)
        # Nonzero finite grads, so no inf * 0 makes a NaN (NaN is tested in tests/test_leaky_relu.py).
        g = torch.linspace(-3, 3, n, dtype=dtype, device=device)
        for self_is_result in (False, True):
            yield SampleInput((g, x, 0.2, self_is_result), desc=f"edge values self_is_result={self_is_result}",
                              exact_vs_aten=True)


# ---------------------------------------------------------------------------
# Errors: one per contract-error row of §11 (the 161001 None row is checked by
# the Python API, see tests/test_leaky_relu.py), plus adversarial variants.

def _E(args, exc, match, desc, kwargs=None, **kw):
    return ErrorInput(SampleInput(args, kwargs or {}, desc=desc), exc, match, **kw)


def forward_errors(device):
    x = make_tensor((2, 3), torch.float32, device)
    yield _E((x.to(torch.int32), 0.01), TypeError,
             r"self must be float32, float64, float16 or bfloat16, got Int", "self dtype")
    yield _E((x.to(torch.complex64), 0.01), TypeError, r"self must be .* got ComplexFloat", "self complex")
    yield _E((x, 1 + 2j), TypeError, r"negative_slope must be a real number \(int or float\), got complex",
             "negative_slope complex")
    yield _E((x, True), TypeError, r"negative_slope must be a real number \(int or float\), got bool",
             "negative_slope bool")
    yield _E((x, 1e300), ValueError, r"negative_slope must fit in float32 .* got 1e\+300",
             "negative_slope beyond float32")
    yield _E((x.half(), -1e39), ValueError, r"negative_slope must fit in float32 \(the compute type of Half",
             "negative_slope beyond float32 (half)")
    x9 = make_tensor((1,) * 9, torch.float32, device)
    yield _E((x9, 0.01), ValueError, r"self must have at most 8 dims, got 9-D", "9 dims")


def backward_errors(device):
    g = make_tensor((2, 3), torch.float32, device)
    x = make_tensor((2, 3), torch.float32, device)
    out = lambda dtype, shape=(2, 3): {"grad_input": torch.empty(shape, dtype=dtype, device=device)}  # noqa: E731
    yield _E((g.to(torch.int64), x.to(torch.int64), 0.01, False), TypeError,
             r"grad_output must be float32, float64, float16 or bfloat16, got Long", "grad_output dtype")
    yield _E((g.to(torch.bool), x, 0.01, False), TypeError, r"grad_output must be .* got Bool", "grad_output bool")
    yield _E((g, x.to(torch.int32), 0.01, False), TypeError,
             r"self must be float32, float64, float16 or bfloat16, got Int", "self dtype")
    yield _E((g, x.double(), 0.01, True), TypeError, r"self must have grad_output's dtype Float, got Double",
             "dtypes differ")
    yield _E((g.half(), x.bfloat16(), 0.01, False), TypeError,
             r"self must have grad_output's dtype Half, got BFloat16", "dtypes differ half/bf16")
    yield _E((g, x, 2j, False), TypeError, r"negative_slope must be a real number .* got complex",
             "negative_slope complex")
    yield _E((g, x, False, False), TypeError, r"negative_slope must be a real number .* got bool",
             "negative_slope bool")
    yield _E((g, x, 0.01, False), TypeError,
             r"grad_input's dtype must hold grad_output's dtype Float .* got Half", "out dtype narrower",
             kwargs=out(torch.float16), overload="grad_input")
    yield _E((g.half(), x.half(), 0.01, False), TypeError,
             r"grad_input's dtype must hold grad_output's dtype Half .* got BFloat16", "out dtype half->bfloat16",
             kwargs=out(torch.bfloat16), overload="grad_input")
    yield _E((g, x, 0.01, False), TypeError, r"grad_input's dtype must hold grad_output's dtype Float .* got Long",
             "out dtype int", kwargs=out(torch.int64), overload="grad_input")
    yield _E((g, x[:1], 0.01, False), ValueError,
             r"self must have grad_output's shape \[2, 3\] \(no broadcasting\), got \[1, 3\]",
             "shapes differ (broadcastable)")
    yield _E((g, x.t(), 0.01, False), ValueError, r"self must have grad_output's shape \[2, 3\] .* got \[3, 2\]",
             "shapes differ")
    yield _E((g, x, 0.01, False), ValueError, r"grad_input must have grad_output's shape \[2, 3\], got \[6\]",
             "out shape differs (same numel)", kwargs=out(torch.float32, (6,)), overload="grad_input")
    g9 = make_tensor((1,) * 9, torch.float32, device)
    yield _E((g9, g9.clone(), 0.01, False), ValueError, r"grad_output must have at most 8 dims, got 9-D", "9 dims")
    yield _E((g, x, -0.5, True), ValueError,
             r"negative_slope must be >= 0 when self_is_result is True .* got -0.5", "self_is_result with slope < 0")
    yield _E((g, x, -1, True), ValueError, r"negative_slope must be >= 0 when self_is_result is True .* got -1",
             "self_is_result with int slope < 0")
    yield _E((g, x, -1e300, False), ValueError, r"negative_slope must fit in float32", "slope beyond float32")


def _aten_forward(x, negative_slope=0.01):
    return torch.ops.aten.leaky_relu(x, negative_slope)


def _aten_backward(g, x, negative_slope, self_is_result):
    return torch.ops.aten.leaky_relu_backward(g, x, negative_slope, self_is_result)


OP_INFOS = with_backward(
    OpInfo(name="leaky_relu", family="leaky_relu", dtypes=FLOATING, sample_inputs=forward_samples,
           reference=reference_forward, error_inputs=forward_errors, aten=_aten_forward),
    sample_inputs=backward_samples, reference=reference_backward, error_inputs=backward_errors, aten=_aten_backward,
    grad_argnums=(0, 1))
