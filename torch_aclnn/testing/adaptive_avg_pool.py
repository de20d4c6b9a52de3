"""OpInfos of the AdaptiveAvgPool3d family (docs/spec.md §13): adaptive_avg_pool3d
and adaptive_avg_pool3d_backward, 4-D (C, D, H, W) and 5-D (N, C, D, H, W)."""
from __future__ import annotations

import torch

from .core import FLOATING, LAYOUTS, ErrorInput, OpInfo, SampleInput, make_tensor, with_backward

DTYPES = FLOATING


# ---------------------------------------------------------------------------
# float64 references written from the spec (independent of the kernels and of
# aten's adaptive pooling).

def windows(n_in: int, n_out: int) -> list:
    """Per output position i, its window [floor(i*in/out), ceil((i+1)*in/out))."""
    return [((i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)) for i in range(n_out)]


def reference_forward(self, output_size):
    """Each output the mean of its window (float64)."""
    x = self.detach().to(torch.float64)
    wd, wh, ww = (windows(x.shape[-3 + a], int(output_size[a])) for a in range(3))
    out = torch.empty((*x.shape[:-3], len(wd), len(wh), len(ww)), dtype=torch.float64, device=x.device)
    for od, (d0, d1) in enumerate(wd):
        for oh, (h0, h1) in enumerate(wh):
            for ow, (w0, w1) in enumerate(ww):
                out[..., od, oh, ow] = x[..., d0:d1, h0:h1, w0:w1].sum((-3, -2, -1)) / ((d1 - d0) * (h1 - h0) * (w1 - w0))
    return out


def reference_backward(grad_output, self):
    """grad_input = zeros(self's shape); each window gets grad_output / its count added."""
    g = grad_output.detach().to(torch.float64)
    wd, wh, ww = (windows(self.shape[-3 + a], g.shape[-3 + a]) for a in range(3))
    out = torch.zeros(self.shape, dtype=torch.float64, device=g.device)
    for od, (d0, d1) in enumerate(wd):
        for oh, (h0, h1) in enumerate(wh):
            for ow, (w0, w1) in enumerate(ww):
                count = (d1 - d0) * (h1 - h0) * (w1 - w0)
                out[..., d0:d1, h0:h1, w0:w1] += (g[..., od, oh, ow] / count)[..., None, None, None]
    return out


# ---------------------------------------------------------------------------
# Cases: (description, self shape, output_size).

_CASES = (
    ("halving", (2, 3, 8, 6, 4), [4, 3, 2]),
    ("overlapping windows", (1, 3, 7, 5, 9), [3, 2, 4]),
    ("squeeze-and-excitation: output 1", (2, 4, 5, 6, 7), [1, 1, 1]),
    ("output larger than self", (1, 2, 2, 3, 2), [3, 5, 4]),
    ("identity", (1, 2, 3, 3, 3), [3, 3, 3]),
    ("4-D (C, D, H, W)", (3, 6, 5, 7), [2, 3, 3]),
    ("C=19", (2, 19, 4, 4, 5), [2, 2, 3]),
    ("empty N", (0, 2, 4, 4, 4), [2, 2, 2]),
    ("4-D empty C", (0, 4, 4, 4), [2, 2, 2]),
)
_EVERY_LAYOUT = ("halving", "overlapping windows")


def _layouts(dim: int, k: int, every: bool):
    """Every layout the rank allows for `every` cases; else contiguous and one
    other, rotating over the cases."""
    allowed = LAYOUTS if dim == 5 else tuple(lay for lay in LAYOUTS if lay != "channels_last_3d")
    return allowed if every else ("contiguous", allowed[1 + k % (len(allowed) - 1)])


def _exact(dtype, shape, size) -> bool:
    """float32/float64 give aten's bits (the same terms, divisions and order);
    aten's float16/bfloat16 round the terms or the partial sums, which only
    an output of the input's size (one term everywhere) makes exact."""
    return dtype in (torch.float32, torch.float64) or list(size) == list(shape[-3:])


def _forward_samples(device, dtype, requires_grad):
    for k, (desc, shape, size) in enumerate(_CASES):
        for layout in _layouts(len(shape), k, every=desc in _EVERY_LAYOUT):
            x = make_tensor(shape, dtype, device, layout=layout, requires_grad=requires_grad)
            yield SampleInput((x, size), desc=f"{desc} {list(shape)} {layout}", layout=layout,
                              exact_vs_aten=_exact(dtype, shape, size))


def _backward_samples(device, dtype, requires_grad):
    for k, (desc, shape, size) in enumerate(_CASES):
        for layout in _layouts(len(shape), k, every=desc in _EVERY_LAYOUT):
            g = make_tensor((*shape[:-3], *size), dtype, device, layout=layout, requires_grad=requires_grad)
            s = make_tensor(shape, dtype, device, layout=layout)
            yield SampleInput((g, s), desc=f"{desc} {list(shape)} {layout}", layout=layout,
                              exact_vs_aten=_exact(dtype, shape, size))
    # Mixed layouts (`layout` names grad_output's); self as a stride-0 stand-in.
    shape = (2, 3, 6, 5, 4)
    g = make_tensor((2, 3, 4, 3, 3), dtype, device, layout="sliced", requires_grad=requires_grad)
    s = torch.zeros((), dtype=dtype, device=device).expand(shape)
    yield SampleInput((g, s), desc="grad_output sliced, self expanded", layout="sliced",
                      exact_vs_aten=_exact(dtype, shape, g.shape[-3:]))
    g = make_tensor((2, 3, 4, 3, 3), dtype, device, layout="permuted", requires_grad=requires_grad)
    s = make_tensor(shape, dtype, device, layout="channels_last_3d")
    yield SampleInput((g, s), desc="self channels_last_3d, grad_output permuted", layout="channels_last_3d",
                      exact_vs_aten=_exact(dtype, shape, g.shape[-3:]))


# ---------------------------------------------------------------------------
# Errors: one per contract-error row of §13 (the row in each description).

def _E(args, exc, match, desc, kwargs=None, **kw):
    return ErrorInput(SampleInput(tuple(args), kwargs or {}, desc=desc), exc, match, **kw)


def _backward_errors(device):
    x = make_tensor((1, 2, 4, 4, 4), torch.float32, device)
    g = make_tensor((1, 2, 2, 3, 2), torch.float32, device)
    gi = "grad_input"
    out = torch.empty_like(x)
    yield _E((g.to(torch.bool), x), TypeError, r"grad_output must be float32, float64, float16 or bfloat16, got Bool",
             "row 1: grad_output bool")
    yield _E((g, x.to(torch.complex64)), TypeError, r"self must be .* got ComplexFloat", "row 1: self complex")
    yield _E((g, x), TypeError, r"grad_input must be .* got Long", "row 1: out int64", kwargs={gi: out.long()},
             overload=gi)
    yield _E((g, x.double()), TypeError, r"self must have grad_output's dtype Float, got Double",
             "row 2: self dtype differs")
    yield _E((g, x), TypeError, r"grad_input must have grad_output's dtype Float, got Half", "row 2: out dtype differs",
             kwargs={gi: out.half()}, overload=gi)
    yield _E((g[0, 0], x[0, 0]), ValueError,
             r"self must be 4-D \(C, D, H, W\) or 5-D \(N, C, D, H, W\), got 3-D", "row 3: self 3-D")
    yield _E((g.unsqueeze(0), x.unsqueeze(0)), ValueError, r"self must be 4-D .* got 6-D", "row 3: self 6-D")
    yield _E((g[0], x), ValueError, r"grad_output must have self's rank 5, got 4-D", "row 3: grad_output rank differs")
    yield _E((g, x), ValueError, r"grad_input must have self's rank 5, got 4-D", "row 3: out rank differs",
             kwargs={gi: out[0]}, overload=gi)
    yield _E((g[:, :0], x[:, :0]), ValueError,
             r"every axis of self but the first must be > 0, got shape \[1, 0, 4, 4, 4\] \(axis 1 is 0\)",
             "row 4: C is 0")
    yield _E((g, x[:, :1]), ValueError,
             r"grad_output must have self's leading axes \[1, 1\] \(N, C\), got grad_output shape \[1, 2, 2, 3, 2\]",
             "row 5: C differs")
    yield _E((g[0], x[0, :1]), ValueError, r"grad_output must have self's leading axes \[1\] \(C\)",
             "row 5: 4-D C differs")
    yield _E((g[..., :0], x), ValueError, r"grad_output's D, H, W must be > 0, got shape \[1, 2, 2, 3, 0\]",
             "row 5: grad_output W is 0")
    yield _E((g, x), ValueError, r"grad_input must have self's shape \[1, 2, 4, 4, 4\], got \[1, 2, 4, 4, 2\]",
             "row 6: out shape differs", kwargs={gi: torch.empty(1, 2, 4, 4, 2, device=device)}, overload=gi)
    big = torch.zeros((), device=device).expand(1, 1, 1, 1, 2 ** 33)
    yield _E((torch.zeros((), device=device).expand(1, 1, 1, 1, 2 ** 31), big), ValueError,
             r"grad_output's D, H, W \[1, 1, 2147483648\] times self's size 8589934592 on axis 2 \(D, H, W\) "
             r"overflows int64", "row 8: in * out overflows")


def _forward_errors(device):
    x = make_tensor((1, 2, 4, 4, 4), torch.float32, device)
    yield _E((x.to(torch.int32), [2, 2, 2]), TypeError, r"self must be float32, float64, float16 or bfloat16, got Int",
             "row 1: self int32")
    yield _E((x[0, 0], [2, 2, 2]), ValueError, r"self must be 4-D \(C, D, H, W\) or 5-D \(N, C, D, H, W\), got 3-D",
             "row 3: self 3-D")
    yield _E((x[:, :, :, :0], [2, 2, 2]), ValueError,
             r"every axis of self but the first must be > 0, got shape \[1, 2, 4, 0, 4\] \(axis 3 is 0\)",
             "row 4: H is 0")
    yield _E((x, [2, 2]), ValueError, r"output_size must have 3 elements \(D, H, W\), got 2 \(\[2, 2\]\)",
             "row 7: output_size length")
    yield _E((x, [2, 0, 2]), ValueError, r"output_size elements must be > 0, got \[2, 0, 2\]", "row 7: output_size 0")
    yield _E((x, [2, 2, -3]), ValueError, r"output_size elements must be > 0, got \[2, 2, -3\]",
             "row 7: output_size negative")
    yield _E((x, [2, 2 ** 62, 2]), ValueError, r"output_size \[2, 4611686018427387904, 2\] times self's size 4 on axis 1",
             "row 8: in * out overflows")
    yield _E((x, [2 ** 20, 2 ** 20, 2 ** 20]), ValueError, r"the result of shape .* overflows int64",
             "row 8: result bytes overflow")


OP_INFOS = with_backward(
    OpInfo(name="adaptive_avg_pool3d", family="adaptive_avg_pool", dtypes=DTYPES, sample_inputs=_forward_samples,
           reference=reference_forward, error_inputs=_forward_errors,
           aten=torch.ops.aten._adaptive_avg_pool3d.default),
    sample_inputs=_backward_samples, reference=reference_backward, error_inputs=_backward_errors,
    aten=torch.ops.aten._adaptive_avg_pool3d_backward.default)
