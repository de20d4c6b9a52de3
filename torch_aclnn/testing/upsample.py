"""OpInfos of the upsample-nearest family (docs/spec.md §1, §2)."""
from __future__ import annotations

import torch

from .core import FLOATING, LAYOUTS, ErrorInput, OpInfo, SampleInput, make_tensor, with_backward

NEAREST, EXACT = "nearest", "nearest-exact"


# ---------------------------------------------------------------------------
# float64 reference of the spec's index rule (independent of the kernels and
# of aten's upsample implementation).

def _use_scales(scales) -> bool:
    return all(s is not None and s > 0 for s in scales)


def source_indices(mode: str, in_size: int, out_size: int, scale, use: bool) -> torch.Tensor:
    """src(dst) for one axis, float32 arithmetic exactly as the spec writes it."""
    if use:
        s = torch.tensor(1.0 / scale, dtype=torch.float64).to(torch.float32)
    else:
        s = torch.tensor(float(in_size), dtype=torch.float32) / torch.tensor(float(out_size), dtype=torch.float32)
    dst = torch.arange(out_size, dtype=torch.float64)
    if mode == NEAREST:
        pos = dst.to(torch.float32) * s
    else:
        pos = ((dst + 0.5) * s.to(torch.float64)).to(torch.float32)
    return torch.clamp(torch.floor(pos).to(torch.int64), max=in_size - 1)


def _tables(mode, input_size, output_size, scales):
    use = _use_scales(scales)
    return [source_indices(mode, input_size[2 + i], output_size[i], scales[i], use) for i in range(3)]


def reference_forward(mode, self, output_size, scales_d=None, scales_h=None, scales_w=None):
    d, h, w = _tables(mode, self.shape, output_size, (scales_d, scales_h, scales_w))
    x = self.detach().to(torch.float64)
    return x[:, :, d][:, :, :, h][:, :, :, :, w]


def reference_backward(mode, grad_output, output_size, input_size, scales_d=None, scales_h=None, scales_w=None):
    d, h, w = _tables(mode, input_size, output_size, (scales_d, scales_h, scales_w))
    g = grad_output.detach().to(torch.float64)
    d, h, w = (t.to(g.device) for t in (d, h, w))
    n, c = input_size[0], input_size[1]
    f64 = dict(dtype=torch.float64, device=g.device)
    g = torch.zeros(n, c, *g.shape[2:4], input_size[4], **f64).index_add_(4, w, g)
    g = torch.zeros(n, c, g.shape[2], input_size[3], input_size[4], **f64).index_add_(3, h, g)
    return torch.zeros(list(input_size), **f64).index_add_(2, d, g)


# ---------------------------------------------------------------------------
# Samples. (input shape, output_size, scales, short-cut?) — scales None means
# "not given"; exact_vs_aten marks where aten CPU gives the same bits.

def exact_vs_aten(mode: str, in_size, output_size, scales, backward: bool) -> bool:
    """Whether aten CPU computes the same index mapping for this sample (so
    equal bits). The samples avoid the sizes where aten's forward rounds its
    float index arithmetic differently from the spec's rule (float64, and
    nearest-exact in every dtype; see docs/ops/upsample.md).

    Besides, aten decides per axis whether to use a scale (we use them all-or-nothing),
    and its nearest backward kernel short-cuts out == in and out == 2*in,
    ignoring a given scale there (docs/spec.md §1, pytorch#97135; its forward does not)."""
    given = [s is not None and s > 0 for s in scales]
    if any(given) and not all(given):
        return False
    if mode == NEAREST and backward and all(given):
        for i in range(3):
            if output_size[i] in (in_size[2 + i], 2 * in_size[2 + i]) and scales[i] != output_size[i] / in_size[2 + i]:
                return False
    return True


_CASES = [
    # input shape, output_size, scales
    ((2, 3, 4, 5, 6), (8, 10, 12), (2.0, 2.0, 2.0)),       # integer up-scale, scales given
    ((2, 3, 4, 5, 6), (8, 10, 12), (None, None, None)),    # same, sizes only
    ((1, 2, 4, 6, 5), (6, 9, 7), (1.5, 1.5, 1.5)),         # non-integer up-scale
    ((1, 2, 6, 8, 7), (3, 4, 3), (0.5, 0.5, 0.5)),         # down-scale
    ((2, 2, 3, 4, 5), (7, 5, 11), (None, None, None)),     # odd sizes, sizes only
    ((1, 3, 3, 5, 4), (3, 10, 6), (1.0, 2.0, 1.7)),        # per-axis scales
    ((1, 1, 1, 1, 1), (3, 2, 4), (None, None, None)),      # size-1 axes
    ((2, 2, 4, 4, 4), (5, 6, 7), (1.3, None, 1.9)),        # mixed: ignored (all-or-nothing)
    ((1, 2, 4, 5, 6), (4, 10, 12), (1.05, 2.1, 2.05)),     # aten's short-cut would ignore these
    ((0, 2, 3, 3, 3), (6, 6, 6), (2.0, 2.0, 2.0)),         # empty batch
]


def _layouts(i: int):
    """Every layout for the first two cases, then one each in rotation: every
    layout is covered several times without multiplying the sample count."""
    return LAYOUTS if i < 2 else (LAYOUTS[i % len(LAYOUTS)],)


def _forward_samples(mode):
    def gen(device, dtype, requires_grad):
        for i, (shape, out, scales) in enumerate(_CASES):
            for layout in _layouts(i):
                x = make_tensor(shape, dtype, device, layout=layout, requires_grad=requires_grad)
                yield SampleInput((x, list(out), *scales), desc=f"{list(shape)}->{list(out)} s={scales} {layout}",
                                  layout=layout, exact_vs_aten=exact_vs_aten(mode, shape, out, scales, False))
    return gen


def _backward_samples(mode):
    def gen(device, dtype, requires_grad):
        for i, (shape, out, scales) in enumerate(_CASES):
            for layout in _layouts(i):
                g = make_tensor((shape[0], shape[1], *out), dtype, device, layout=layout, requires_grad=requires_grad)
                yield SampleInput((g, list(out), list(shape), *scales),
                                  desc=f"{list(out)}->{list(shape)} s={scales} {layout}", layout=layout,
                                  exact_vs_aten=exact_vs_aten(mode, shape, out, scales, True))
    return gen


# ---------------------------------------------------------------------------
# Errors: one per contract-error row of §1/§2.

def _forward_errors(op):
    def gen(device):
        x = make_tensor((1, 2, 3, 4, 5), torch.float32, device)
        E = lambda args, exc, match, desc, **kw: ErrorInput(SampleInput(args, desc=desc), exc, match, **kw)  # noqa: E731
        yield E((x.to(torch.int32), [6, 8, 10]), TypeError, r"self must be float32, float64, float16 or bfloat16, got Int", "dtype")
        yield E((x[0], [6, 8, 10]), ValueError, r"self must be 5-D \(N, C, D, H, W\), got 4-D", "rank")
        yield E((x, [6, 8]), ValueError, r"output_size must have 3 elements \(D, H, W\), got 2", "output_size length")
        yield E((x, [6, 0, 10]), ValueError, r"output_size\[1\] must be > 0", "output_size <= 0")
        yield E((x, [6, 8, -1]), ValueError, r"output_size\[2\] must be > 0", "output_size negative")
        yield E((x, [6, 8, 10], 2.0, 2.0, 3.0), ValueError,
                r"output_size\[2\] must equal floor\(self.shape\[4\] \* scales_w\) = floor\(5 \* 3", "scale inconsistent")
        yield E((x, [6, 8, 10], float("nan"), 2.0, 2.0), ValueError, r"scales_d must be finite .* got nan", "scale nan")
        yield E((x, [6, 8, 10], float("inf"), 2.0, 2.0), ValueError, r"scales_d must be finite .* got inf", "scale inf")
        yield E((x, [6, 8, 10], 2.0, -float("inf"), 2.0), ValueError, r"scales_h must be finite .* got -inf", "scale -inf")
        yield E((x, [6, 8, 10], 2.0, 2.0, 1e300), ValueError, r"output_size\[2\] must equal floor", "scale huge")
        empty = make_tensor((1, 2, 0, 4, 5), torch.float32, device)
        yield E((empty, [6, 8, 10]), ValueError, r"self.shape\[2\] \(D\) must be > 0", "spatial size 0")
    return gen


def _backward_errors(op):
    def gen(device):
        g = make_tensor((1, 2, 6, 8, 10), torch.float32, device)
        isz = [1, 2, 3, 4, 5]
        E = lambda args, exc, match, desc, **kw: ErrorInput(SampleInput(args, kw.pop("kwargs", {}), desc=desc), exc, match, **kw)  # noqa: E731
        out_ok = torch.empty(isz, dtype=torch.float32, device=device)
        yield E((g.to(torch.int64), [6, 8, 10], isz), TypeError, r"grad_output must be float32, float64, float16 or bfloat16, got Long", "grad_output dtype")
        yield E((g.to(torch.bool), [6, 8, 10], isz), TypeError, r"grad_output must be .* got Bool", "grad_output bool")
        yield E((g.to(torch.complex64), [6, 8, 10], isz), TypeError, r"grad_output must be .* got ComplexFloat", "grad_output complex")
        yield E((g, [6, 8, 10], isz), TypeError, r"grad_input must have grad_output's dtype Float, got Double",
                "out dtype differs", kwargs={"grad_input": out_ok.double()}, overload="grad_input")
        yield E((g[0], [6, 8, 10], isz), ValueError, r"grad_output must be 5-D .* got 4-D", "grad_output rank")
        yield E((g, [6, 8], isz), ValueError, r"output_size must have 3 elements", "output_size length")
        yield E((g, [6, 8, 10, 1], isz), ValueError, r"output_size must have 3 elements .* got 4", "output_size length 4")
        yield E((g, [6, 0, 10], isz), ValueError, r"output_size\[1\] must be > 0", "output_size <= 0")
        yield E((g, [6, 8, 10], [1, 2, 3, 4]), ValueError, r"input_size must have 5 elements", "input_size length")
        yield E((g, [6, 8, 10], [1, 2, 3, 0, 5]), ValueError, r"input_size\[3\] \(H\) must be > 0", "input_size spatial <= 0")
        yield E((g, [6, 8, 10], [-1, 2, 3, 4, 5]), ValueError, r"input_size N and C must be >= 0", "input_size N negative")
        yield E((g, [6, 8, 10], [1, -2, 3, 4, 5]), ValueError, r"input_size N and C must be >= 0", "input_size C negative")
        yield E((g, [6, 8, 11], isz), ValueError, r"grad_output's D, H, W must equal output_size \[6, 8, 11\]", "grad_output spatial vs output_size")
        yield E((g, [6, 8, 10], [1, 3, 3, 4, 5]), ValueError, r"grad_output's N, C must equal input_size\[0:2\] = \[1, 3\]", "grad_output N,C vs input_size")
        yield E((g, [6, 8, 10], isz), ValueError, r"grad_input's N, C must equal input_size\[0:2\]",
                "out N,C differs", kwargs={"grad_input": torch.empty(2, 2, 3, 4, 5, device=device)}, overload="grad_input")
        yield E((g, [6, 8, 10], isz), ValueError, r"grad_input's D, H, W must equal input_size\[2:5\]",
                "out D,H,W differs", kwargs={"grad_input": torch.empty(1, 2, 3, 4, 6, device=device)}, overload="grad_input")
        yield E((g, [6, 8, 10], isz, 2.0, 2.0, 3.0), ValueError,
                r"output_size\[2\] must equal floor\(input_size\[4\] \* scales_w\) = floor\(5 \* 3", "scale inconsistent")
        yield E((g, [6, 8, 10], isz, float("nan"), None, None), ValueError, r"scales_d must be finite .* got nan", "scale nan")
    return gen


def _aten_forward(mode):
    fn = torch.ops.aten.upsample_nearest3d if mode == NEAREST else torch.ops.aten._upsample_nearest_exact3d
    return lambda x, out, sd=None, sh=None, sw=None: fn(x, out, sd, sh, sw)


def _aten_backward(mode):
    fn = (torch.ops.aten.upsample_nearest3d_backward if mode == NEAREST
          else torch.ops.aten._upsample_nearest_exact3d_backward)
    return lambda g, out, insz, sd=None, sh=None, sw=None: fn(g, out, insz, sd, sh, sw)


def _infos():
    infos = []
    for mode, fwd in ((NEAREST, "upsample_nearest3d"), (EXACT, "upsample_nearest_exact3d")):
        infos += with_backward(
            OpInfo(name=fwd, family="upsample", dtypes=FLOATING, sample_inputs=_forward_samples(mode),
                   reference=lambda *a, _m=mode: reference_forward(_m, *a), error_inputs=_forward_errors(fwd),
                   aten=_aten_forward(mode)),
            sample_inputs=_backward_samples(mode), reference=lambda *a, _m=mode: reference_backward(_m, *a),
            error_inputs=_backward_errors(f"{fwd}_backward"), aten=_aten_backward(mode))
    return infos


OP_INFOS = _infos()
