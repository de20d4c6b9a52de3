"""OpInfos of the upsample-trilinear family (docs/spec.md §10)."""
from __future__ import annotations

import torch

from .core import FLOATING, LAYOUTS, ErrorInput, OpInfo, SampleInput, make_tensor, with_backward


# ---------------------------------------------------------------------------
# float64 reference of the spec's rule (independent of the kernels and of
# aten's upsample implementation): one (out, in) interpolation matrix per axis.

def axis_matrix(in_size: int, out_size: int, align_corners: bool, scale, acc=torch.float64) -> torch.Tensor:
    """M (float64) with ``out[x] = sum_i M[x, i] * in[i]`` along one axis: the
    weights of §10, their arithmetic (ratio, source index, weights) done in
    ``acc``, the kernels' opmath type (float32 but for float64 tensors)."""
    t = lambda v: torch.tensor(v, dtype=acc)  # noqa: E731
    if align_corners:
        ratio = t(in_size - 1) / t(out_size - 1) if out_size > 1 else t(0.0)
    elif scale is not None and scale > 0:
        ratio = t(1.0 / scale)
    else:
        ratio = t(in_size) / t(out_size)
    m = torch.zeros(out_size, in_size, dtype=torch.float64)
    if ratio == 1:  # the identity (both taps on x)
        return torch.eye(out_size, in_size, dtype=torch.float64)
    for x in range(out_size):
        src = ratio * t(x) if align_corners else torch.clamp(ratio * (t(x) + t(0.5)) - t(0.5), min=0.0)
        i0 = min(int(torch.floor(src)), in_size - 1)
        i1 = min(i0 + 1, in_size - 1)
        l1 = torch.clamp(src - t(i0), 0.0, 1.0)
        m[x, i0] += float(t(1.0) - l1)
        m[x, i1] += float(l1)
    return m


def _matrices(input_size, output_size, align_corners, scales, dtype):
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    return [axis_matrix(input_size[2 + i], output_size[i], align_corners, scales[i], acc) for i in range(3)]


def reference_forward(self, output_size, align_corners, scales_d=None, scales_h=None, scales_w=None):
    md, mh, mw = (m.to(self.device) for m in _matrices(self.shape, output_size, align_corners,
                                                        (scales_d, scales_h, scales_w), self.dtype))
    x = self.detach().to(torch.float64)
    return torch.einsum("ncdhw,pd,qh,rw->ncpqr", x, md, mh, mw)


def reference_backward(grad_output, output_size, input_size, align_corners, scales_d=None, scales_h=None,
                       scales_w=None):
    md, mh, mw = (m.to(grad_output.device) for m in _matrices(input_size, output_size, align_corners,
                                                               (scales_d, scales_h, scales_w), grad_output.dtype))
    g = grad_output.detach().to(torch.float64)
    return torch.einsum("ncpqr,pd,qh,rw->ncdhw", g, md, mh, mw)


# ---------------------------------------------------------------------------
# Samples: (input shape, output_size, align_corners, scales); scales None means
# "not given". None is exact vs aten: aten rounds its sums in other orders
# (docs/spec.md §10), so the generic tests compare with the float64 reference.
# Values in [-1, 1): a grad_input element sums up to ~40 weighted terms in
# float32, whose rounding then stays within the generic float32 tolerance.

CASES = [
    ((2, 3, 4, 5, 6), (8, 10, 12), False, (2.0, 2.0, 2.0)),      # x2, scales given (the decoder's case)
    ((2, 3, 4, 5, 6), (4, 5, 6), False, (None, None, None)),      # the identity: aten's bits
    ((1, 2, 3, 4, 5), (3, 4, 5), True, (1.0, 1.0, 1.0)),          # the identity, align_corners
    ((2, 3, 4, 5, 6), (8, 10, 12), True, (None, None, None)),     # x2, align_corners
    ((1, 2, 4, 6, 5), (6, 9, 7), False, (1.5, 1.5, 1.5)),         # non-integer up-scale
    ((1, 2, 6, 8, 7), (3, 4, 3), False, (0.5, 0.5, 0.5)),         # down-scale
    ((2, 2, 3, 4, 5), (7, 5, 11), False, (None, None, None)),     # odd sizes, sizes only
    ((1, 3, 3, 5, 4), (3, 10, 6), False, (1.0, 2.0, 1.7)),        # per-axis scales
    ((1, 1, 1, 1, 1), (3, 2, 4), True, (None, None, None)),       # size-1 axes, align_corners
    ((2, 2, 4, 4, 4), (5, 6, 7), False, (1.3, None, 1.9)),        # some scales given: used per axis
    ((1, 2, 3, 4, 5), (3, 4, 5), False, (1.2, 1.1, 1.1)),         # out == in with a scale (aten copies)
    ((1, 2, 4, 5, 3), (1, 1, 1), True, (None, None, None)),       # out == 1, align_corners
    ((1, 2, 5, 3, 4), (2, 7, 9), True, (0.5, 2.5, 2.3)),          # align_corners: scales not used
    ((0, 2, 3, 3, 3), (6, 6, 6), False, (2.0, 2.0, 2.0)),         # empty batch
]


def _layouts(i: int):
    """Every layout for the first three cases, then one each in rotation."""
    return LAYOUTS if i < 3 else (LAYOUTS[i % len(LAYOUTS)],)


def exact_vs_aten(shape, out, align, scales) -> bool:
    """Where aten CPU gives the same bits: an identity on every axis (ratio 1,
    weights 1 and 0, NaN and inf spread alike). Elsewhere aten adds its terms
    in other orders (docs/spec.md §10)."""
    return all(out[i] == shape[2 + i] and (align or scales[i] is None or scales[i] <= 0 or scales[i] == 1.0)
               for i in range(3))


def _forward_samples(device, dtype, requires_grad):
    for i, (shape, out, align, scales) in enumerate(CASES):
        for layout in _layouts(i):
            x = make_tensor(shape, dtype, device, low=-1.0, high=1.0, layout=layout, requires_grad=requires_grad)
            yield SampleInput((x, list(out), align, *scales),
                              desc=f"{list(shape)}->{list(out)} align={align} s={scales} {layout}", layout=layout,
                              exact_vs_aten=exact_vs_aten(shape, out, align, scales))


def _backward_samples(device, dtype, requires_grad):
    for i, (shape, out, align, scales) in enumerate(CASES):
        for layout in _layouts(i):
            g = make_tensor((shape[0], shape[1], *out), dtype, device, low=-1.0, high=1.0, layout=layout,
                            requires_grad=requires_grad)
            yield SampleInput((g, list(out), list(shape), align, *scales),
                              desc=f"{list(out)}->{list(shape)} align={align} s={scales} {layout}", layout=layout,
                              exact_vs_aten=exact_vs_aten(shape, out, align, scales))


# ---------------------------------------------------------------------------
# Errors: one per contract-error row of §10.

def _forward_errors(device):
    x = make_tensor((1, 2, 3, 4, 5), torch.float32, device)
    E = lambda args, exc, match, desc: ErrorInput(SampleInput(args, desc=desc), exc, match)  # noqa: E731
    yield E((x.to(torch.int32), [6, 8, 10], False), TypeError,
            r"self must be float32, float64, float16 or bfloat16, got Int", "dtype")
    yield E((x[0], [6, 8, 10], False), ValueError, r"self must be 5-D \(N, C, D, H, W\), got 4-D", "rank")
    yield E((x, [6, 8], False), ValueError, r"output_size must have 3 elements \(D, H, W\), got 2", "output_size length")
    yield E((x, [6, 0, 10], False), ValueError, r"output_size\[1\] must be > 0", "output_size <= 0")
    yield E((x, [6, 8, 10], False, 2.0, 2.0, 3.0), ValueError,
            r"output_size\[2\] must equal floor\(self.shape\[4\] \* scales_w\) = floor\(5 \* 3", "scale inconsistent")
    yield E((x, [6, 8, 10], False, None, None, 3.0), ValueError,
            r"output_size\[2\] must equal floor\(self.shape\[4\] \* scales_w\) .* the scale is given",
            "one scale inconsistent (per axis)")
    yield E((x, [6, 8, 10], True, float("nan"), None, None), ValueError, r"scales_d must be finite .* got nan",
            "scale nan")
    yield E((x, [6, 8, 10], False, 2.0, float("inf"), 2.0), ValueError, r"scales_h must be finite .* got inf",
            "scale inf")
    empty = make_tensor((1, 2, 0, 4, 5), torch.float32, device)
    yield E((empty, [6, 8, 10], False), ValueError, r"self.shape\[2\] \(D\) must be > 0", "spatial size 0")


def _backward_errors(device):
    g = make_tensor((1, 2, 6, 8, 10), torch.float32, device)
    isz = [1, 2, 3, 4, 5]
    E = lambda args, exc, match, desc, **kw: ErrorInput(SampleInput(args, kw.pop("kwargs", {}), desc=desc), exc, match, **kw)  # noqa: E731
    out_ok = torch.empty(isz, dtype=torch.float32, device=device)
    yield E((g.to(torch.int64), [6, 8, 10], isz, False), TypeError,
            r"grad_output must be float32, float64, float16 or bfloat16, got Long", "grad_output dtype")
    yield E((g, [6, 8, 10], isz, False), TypeError, r"grad_input must have grad_output's dtype Float, got Double",
            "out dtype differs", kwargs={"grad_input": out_ok.double()}, overload="grad_input")
    yield E((g[0], [6, 8, 10], isz, False), ValueError, r"grad_output must be 5-D .* got 4-D", "grad_output rank")
    yield E((g, [6, 8, 10, 1], isz, False), ValueError, r"output_size must have 3 elements .* got 4", "output_size length")
    yield E((g, [6, 8, 10], [1, 2, 3, 4], False), ValueError, r"input_size must have 5 elements", "input_size length")
    yield E((g, [6, 8, 10], [1, 2, 3, 0, 5], False), ValueError, r"input_size\[3\] \(H\) must be > 0",
            "input_size spatial <= 0")
    yield E((g, [6, 8, 10], [1, -2, 3, 4, 5], False), ValueError, r"input_size N and C must be >= 0",
            "input_size C negative")
    yield E((g, [6, 8, 11], isz, False), ValueError, r"grad_output's D, H, W must equal output_size \[6, 8, 11\]",
            "grad_output spatial vs output_size")
    yield E((g, [6, 8, 10], [1, 3, 3, 4, 5], False), ValueError,
            r"grad_output's N, C must equal input_size\[0:2\] = \[1, 3\]", "grad_output N,C vs input_size")
    yield E((g, [6, 8, 10], isz, False), ValueError, r"grad_input's D, H, W must equal input_size\[2:5\]",
            "out D,H,W differs", kwargs={"grad_input": torch.empty(1, 2, 3, 4, 6, device=device)},
            overload="grad_input")
    yield E((g, [6, 8, 10], isz, False, None, 3.0, None), ValueError,
            r"output_size\[1\] must equal floor\(input_size\[3\] \* scales_h\) = floor\(4 \* 3", "scale inconsistent")
    yield E((g, [6, 8, 10], isz, False, float("nan"), None, None), ValueError, r"scales_d must be finite .* got nan",
            "scale nan")


def _aten_forward(x, out, align, sd=None, sh=None, sw=None):
    return torch.ops.aten.upsample_trilinear3d(x, out, align, sd, sh, sw)


def _aten_backward(g, out, insz, align, sd=None, sh=None, sw=None):
    return torch.ops.aten.upsample_trilinear3d_backward(g, out, insz, align, sd, sh, sw)


OP_INFOS = with_backward(
    OpInfo(name="upsample_trilinear3d", family="upsample_trilinear", dtypes=FLOATING,
           sample_inputs=_forward_samples, reference=reference_forward, error_inputs=_forward_errors,
           aten=_aten_forward),
    sample_inputs=_backward_samples, reference=reference_backward, error_inputs=_backward_errors, aten=_aten_backward)
