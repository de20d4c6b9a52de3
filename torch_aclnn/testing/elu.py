"""OpInfos of the ELU family (docs/spec.md §3): elu and elu_backward.

Distance to aten's CPU kernels, ``ulp_table()`` (max ulp over ELU, ELU(0.5),
SELU, CELU(0.5); 10^6 values in [-20, 5] and near 0), torch 2.13, AVX512:

    dtype     layout    forward  backward(is_result=False)  backward(is_result=True)
    float32   strided   2        2                          0
    float64   strided   2        2                          0
    float16   strided   0        1                          0
    bfloat16  strided   0        0                          0
    any       dense     0 (measured 0-1 where a run's tail falls on aten's scalar loop)

On dense runs aten takes its vectorised path, which ours matches bitwise
(same formula order, coefficients and Sleef exp/expm1); aten's scalar loop
(the tail of each run and all strided inputs) uses std::exp/std::expm1
instead, hence the strided column. AVX2 gives the same table; the DEFAULT
build (no SIMD: std:: functions on both sides) is 0 everywhere. The
forward's x == 0 rule can only change the sign of a zero result (negative parameters).
Reproduce with::

    python -c "from torch_aclnn.testing.elu import ulp_table; print(ulp_table())"
"""
from __future__ import annotations

import math

import torch

from .core import FLOATING, ErrorInput, OpInfo, SampleInput, make_layout, make_tensor, with_backward

SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0)


def celu_params(alpha: float) -> tuple:
    return (alpha, 1.0, 1.0 / alpha)


# (alpha, scale, input_scale) of the parameterisations the samples cycle through.
PARAMS = {
    "elu": (1.0, 1.0, 1.0),
    "elu(0.5)": (0.5, 1.0, 1.0),
    "selu": SELU,
    "celu(2)": celu_params(2.0),
    "general": (1.3, 1.1, 0.7),
    "ints": (2, 3, 1),  # integer Scalars
}


# ---------------------------------------------------------------------------
# float64 reference written from the spec (independent of the kernels and of
# aten's elu implementation).

def reference_forward(self, alpha=1, scale=1, input_scale=1):
    x = self.detach().to(torch.float64)
    return torch.where(x >= 0, scale * x, scale * alpha * torch.expm1(x * input_scale))


def reference_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
    g = grad_output.detach().to(torch.float64)
    x = self_or_result.detach().to(torch.float64)
    if is_result:
        neg = g * (input_scale * (x + alpha * scale))
    else:
        neg = g * (input_scale * alpha * scale * torch.exp(x * input_scale))
    return torch.where(x > 0, g * scale, neg)


# ---------------------------------------------------------------------------
# Samples. Each case: shape, layout, parameter set (and, for the backward,
# is_result). Together they cover 0-D, size 1, empty, 1..8 dims, every layout,
# every parameterisation and both is_result modes. exact_vs_aten marks where
# aten's CPU kernel runs its vectorised path on every element (dense, numel a
# multiple of 64, one thread), which our kernel matches bitwise; elsewhere aten
# may use its scalar std::exp/std::expm1 and differ by an ulp.

_CASES = [
    # shape, layout, params
    ((), "contiguous", "elu"),
    ((0,), "contiguous", "general"),
    ((1,), "contiguous", "selu"),
    ((64,), "contiguous", "general"),
    ((4, 16), "permuted", "celu(2)"),
    ((3, 5, 7), "sliced", "general"),
    ((2, 2, 4, 4, 2), "channels_last_3d", "selu"),
    ((2, 0, 3), "permuted", "elu"),
    ((2, 1, 2, 1, 2, 1, 2, 4), "contiguous", "elu(0.5)"),
    ((33, 5), "sliced", "ints"),
    ((517,), "contiguous", "general"),
]

_BACKWARD_CASES = [
    # shape, layout, params, is_result
    ((), "contiguous", "elu", True),
    ((0,), "contiguous", "general", False),
    ((1,), "contiguous", "selu", True),
    ((64,), "contiguous", "general", False),
    ((4, 16), "permuted", "celu(2)", True),
    ((3, 5, 7), "sliced", "general", True),
    ((2, 2, 4, 4, 2), "channels_last_3d", "selu", False),
    ((2, 0, 3), "permuted", "elu", True),
    ((2, 1, 2, 1, 2, 1, 2, 4), "contiguous", "elu(0.5)", False),
    ((33, 5), "sliced", "ints", False),
    ((517,), "contiguous", "general", True),
    ((8, 8), "contiguous", "general", True),
]


def _exact(shape, layout) -> bool:
    n = math.prod(shape)
    return layout != "sliced" and n > 0 and n % 64 == 0 and n < 32768


def _desc(shape, layout, params, extra=""):
    return f"{list(shape)} {params}{extra} {layout}"


# Values where the formula's branches meet or saturate: zeros of both signs,
# infinities, underflow of exp, tiny and huge magnitudes. Not
# differentiable everywhere, so only offered when gradients are not wanted.
EDGE_VALUES = [0.0, -0.0, 1e-30, -1e-30, 1.0, -1.0, 30.0, -30.0, -200.0, 1e30,
               -1e30, float("inf"), float("-inf"), 0.5, -0.5, 3e-3]


def forward_samples(device, dtype, requires_grad):
    for shape, layout, params in _CASES:
        x = make_tensor(shape, dtype, device, layout=layout, requires_grad=requires_grad)
        yield SampleInput((x, *PARAMS[params]), desc=_desc(shape, layout, params), layout=layout,
                          exact_vs_aten=_exact(shape, layout))
    # A negative alpha is valid for the forward (only is_result rejects it).
    x = make_tensor((5, 6), dtype, device, requires_grad=requires_grad)
    yield SampleInput((x, -0.8, 1.0, 1.0), desc=_desc((5, 6), "contiguous", "alpha<0"))
    if not requires_grad:
        x = torch.tensor(EDGE_VALUES, dtype=dtype, device=device)
        yield SampleInput((x, *PARAMS["general"]), desc="edge values")


def backward_samples(device, dtype, requires_grad):
    for shape, layout, params, is_result in _BACKWARD_CASES:
        p = PARAMS[params]
        g = make_tensor(shape, dtype, device, layout=layout, requires_grad=requires_grad)
        x = make_tensor(shape, dtype, device, layout=layout)
        if is_result:  # a forward output: >= -alpha * scale
            x = make_layout(reference_forward(x, *p).to(dtype), layout)
        x.requires_grad_(requires_grad)
        yield SampleInput((g, *p, is_result, x), desc=_desc(shape, layout, params, f" is_result={is_result}"),
                          layout=layout, exact_vs_aten=_exact(shape, layout))
    if not requires_grad:
        n = len(EDGE_VALUES)
        x = torch.tensor(EDGE_VALUES, dtype=dtype, device=device)
        # Nonzero finite grads, so no inf * 0 makes a NaN (NaN is tested in tests/test_elu.py).
        g = torch.linspace(-3, 3, n, dtype=dtype, device=device)
        for is_result in (False, True):
            yield SampleInput((g, *PARAMS["general"], is_result, x), desc=f"edge values is_result={is_result}")


# ---------------------------------------------------------------------------
# Errors: one per contract-error row of §3 (the 161001 None row is checked by
# the Python API, see tests/test_elu.py), plus adversarial variants.

def _E(args, exc, match, desc, kwargs=None, **kw):
    return ErrorInput(SampleInput(args, kwargs or {}, desc=desc), exc, match, **kw)


def forward_errors(device):
    x = make_tensor((2, 3), torch.float32, device)
    yield _E((x.to(torch.int32), 1.0, 1.0, 1.0), TypeError,
             r"self must be float32, float64, float16 or bfloat16, got Int", "self dtype")
    yield _E((x.to(torch.complex64), 1.0, 1.0, 1.0), TypeError, r"self must be .* got ComplexFloat", "self complex")
    yield _E((x, 1 + 2j, 1.0, 1.0), TypeError, r"alpha must be a real number \(int or float\), got complex",
             "alpha complex")
    yield _E((x, 1.0, True, 1.0), TypeError, r"scale must be a real number \(int or float\), got bool", "scale bool")
    yield _E((x, 1.0, 1.0, 0.5j), TypeError, r"input_scale must be a real number", "input_scale complex")
    x9 = make_tensor((1,) * 9, torch.float32, device)
    yield _E((x9, 1.0, 1.0, 1.0), ValueError, r"self must have at most 8 dims, got 9-D", "9 dims")


def backward_errors(device):
    g = make_tensor((2, 3), torch.float32, device)
    x = make_tensor((2, 3), torch.float32, device)
    p = (1.0, 1.0, 1.0)
    out = lambda dtype, shape=(2, 3): {"grad_input": torch.empty(shape, dtype=dtype, device=device)}  # noqa: E731
    yield _E((g.to(torch.int64), *p, False, x.to(torch.int64)), TypeError,
             r"grad_output must be float32, float64, float16 or bfloat16, got Long", "grad_output dtype")
    yield _E((g.to(torch.bool), *p, False, x), TypeError, r"grad_output must be .* got Bool", "grad_output bool")
    yield _E((g, *p, False, x.to(torch.int32)), TypeError,
             r"self_or_result must be float32, float64, float16 or bfloat16, got Int", "self_or_result dtype")
    yield _E((g, *p, False, x.to(torch.complex64)), TypeError, r"self_or_result must be .* got ComplexFloat",
             "self_or_result complex")
    yield _E((g, *p, True, x.double()), TypeError, r"self_or_result must have grad_output's dtype Float, got Double",
             "dtypes differ")
    yield _E((g.half(), *p, False, x.bfloat16()), TypeError,
             r"self_or_result must have grad_output's dtype Half, got BFloat16", "dtypes differ half/bf16")
    yield _E((g, 1 + 0j, 1.0, 1.0, False, x), TypeError, r"alpha must be a real number \(int or float\), got complex",
             "alpha complex")
    yield _E((g, 1.0, 2j, 1.0, False, x), TypeError, r"scale must be a real number", "scale complex")
    yield _E((g, 1.0, 1.0, False, False, x), TypeError, r"input_scale must be a real number .* got bool",
             "input_scale bool")
    yield _E((g, *p, False, x), TypeError,
             r"grad_input's dtype must hold grad_output's dtype Float .* got Half", "out dtype narrower",
             kwargs=out(torch.float16), overload="grad_input")
    yield _E((g.double(), *p, False, x.double()), TypeError,
             r"grad_input's dtype must hold grad_output's dtype Double .* got Float", "out dtype float64->float32",
             kwargs=out(torch.float32), overload="grad_input")
    yield _E((g.half(), *p, False, x.half()), TypeError,
             r"grad_input's dtype must hold grad_output's dtype Half .* got BFloat16", "out dtype half->bfloat16",
             kwargs=out(torch.bfloat16), overload="grad_input")
    yield _E((g, *p, False, x), TypeError, r"grad_input's dtype must hold grad_output's dtype Float .* got Long",
             "out dtype int", kwargs=out(torch.int64), overload="grad_input")
    yield _E((g, *p, False, x), TypeError,
             r"grad_input's dtype must hold grad_output's dtype Float .* got ComplexFloat", "out dtype complex",
             kwargs=out(torch.complex64), overload="grad_input")
    yield _E((g, *p, False, x[:1]), ValueError,
             r"self_or_result must have grad_output's shape \[2, 3\] \(no broadcasting\), got \[1, 3\]",
             "shapes differ (broadcastable)")
    yield _E((g, *p, False, x.t()), ValueError, r"self_or_result must have grad_output's shape \[2, 3\] .* got \[3, 2\]",
             "shapes differ")
    yield _E((g, *p, False, x), ValueError, r"grad_input must have grad_output's shape \[2, 3\], got \[3, 2\]",
             "out shape differs", kwargs=out(torch.float32, (3, 2)), overload="grad_input")
    yield _E((g, *p, False, x), ValueError, r"grad_input must have grad_output's shape \[2, 3\], got \[6\]",
             "out shape differs (same numel)", kwargs=out(torch.float32, (6,)), overload="grad_input")
    g9 = make_tensor((1,) * 9, torch.float32, device)
    yield _E((g9, *p, False, g9.clone()), ValueError, r"grad_output must have at most 8 dims, got 9-D", "9 dims")
    yield _E((g, -0.5, 1.0, 1.0, True, x), ValueError,
             r"alpha must be >= 0 when is_result is True .* got -0.5", "is_result with alpha < 0")
    yield _E((g, -1, 1.0, 1.0, True, x), ValueError, r"alpha must be >= 0 when is_result is True .* got -1",
             "is_result with int alpha < 0")


def _aten_forward(x, alpha=1, scale=1, input_scale=1):
    return torch.ops.aten.elu(x, alpha, scale, input_scale)


def _aten_backward(g, alpha, scale, input_scale, is_result, x):
    return torch.ops.aten.elu_backward(g, alpha, scale, input_scale, is_result, x)


OP_INFOS = with_backward(
    OpInfo(name="elu", family="elu", dtypes=FLOATING, sample_inputs=forward_samples, reference=reference_forward,
           error_inputs=forward_errors, aten=_aten_forward),
    sample_inputs=backward_samples, reference=reference_backward, error_inputs=backward_errors, aten=_aten_backward,
    grad_argnums=(0, 5))


# ---------------------------------------------------------------------------
# Ulp distance to aten (documented in tests/test_elu.py and the family notes).

_INT_VIEW = {torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16,
             torch.bfloat16: torch.int16}


def _ordered(t: torch.Tensor) -> torch.Tensor:
    """The float bits as integers ordered like the floats (+0 and -0 both 0)."""
    i = t.view(_INT_VIEW[t.dtype]).to(torch.int64)
    bits = torch.finfo(t.dtype).bits
    magnitude = i & ((1 << (bits - 1)) - 1)
    return torch.where(i < 0, -magnitude, magnitude)


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> int:
    """Max distance in units in the last place between two same-dtype
    tensors (NaN matches NaN; a NaN against a number counts as 2**62)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.numel() == 0:
        return 0
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    if bool((nan_a != nan_b).any()):
        return 1 << 62
    keep = ~nan_a
    oa, ob = _ordered(a[keep]), _ordered(b[keep])
    # Same signs cannot overflow int64; opposite signs are far apart anyway
    # (clamped so float64's full range cannot overflow either).
    cap = 1 << 61
    d = torch.where((oa < 0) == (ob < 0), (oa - ob).abs(), oa.abs().clamp(max=cap) + ob.abs().clamp(max=cap))
    return int(d.max().item()) if d.numel() else 0


def ulp_table(n: int = 1_000_003, seed: int = 0) -> dict:
    """Max ulp distance of our kernels to aten's CPU kernels, per dtype, for
    the forward (against F.elu / F.selu / F.celu) and the backward (against
    aten.elu_backward, both is_result modes), over several parameter sets, on
    a contiguous tensor (aten vectorised except its tails) and a strided one
    (aten's scalar loop). Values span [-20, 5] with many near 0."""
    import torch.nn.functional as F

    from ..ops import elu as api

    gen = torch.Generator().manual_seed(seed)
    base = torch.cat([torch.rand(n // 2, generator=gen, dtype=torch.float64, device="cpu") * 25 - 20,
                      torch.randn(n - n // 2, generator=gen, dtype=torch.float64, device="cpu") * 1e-2])
    grad = torch.randn(n, generator=gen, dtype=torch.float64, device="cpu")
    forwards = {
        "elu": (lambda x: api.elu(x), lambda x: F.elu(x), (1.0, 1.0, 1.0)),
        "elu(0.5)": (lambda x: api.elu(x, 0.5), lambda x: F.elu(x, 0.5), (0.5, 1.0, 1.0)),
        "selu": (api.selu, F.selu, SELU),
        "celu(0.5)": (lambda x: api.celu(x, 0.5), lambda x: F.celu(x, 0.5), celu_params(0.5)),
    }
    table = {}
    for dtype in FLOATING:
        for layout in ("contiguous", "sliced"):
            row = {"forward": 0, "backward(is_result=False)": 0, "backward(is_result=True)": 0}
            x = make_layout(base.to(dtype), layout)
            g = make_layout(grad.to(dtype), layout)
            for ours, theirs, params in forwards.values():
                y = theirs(x)
                row["forward"] = max(row["forward"], ulp_distance(ours(x), y))
                for is_result, s in ((False, x), (True, y)):
                    key = f"backward(is_result={is_result})"
                    a = api.elu_backward(g, *params, is_result, s)
                    b = torch.ops.aten.elu_backward(g, *params, is_result, s)
                    row[key] = max(row[key], ulp_distance(a, b))
            table[(str(dtype).replace("torch.", ""), layout)] = row
    return table
