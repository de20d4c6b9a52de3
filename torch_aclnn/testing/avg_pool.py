"""OpInfos of the AvgPool3d family (docs/spec.md §12): avg_pool3d and
avg_pool3d_backward, 4-D and 5-D (N, C, D, H, W)."""
from __future__ import annotations

import math

import torch

from .core import ErrorInput, OpInfo, SampleInput, make_layout, make_tensor, with_backward
from .max_pool import DTYPES, _layouts, _triple


# ---------------------------------------------------------------------------
# float64 references written from the spec (independent of the kernels and of
# aten's avg_pool3d): every (n, c) plane flattened to one axis.

def _pooled_size(n, k, s, p, ceil):
    top = n + 2 * p - k + (s - 1 if ceil else 0)
    o = top // s + 1
    return o - 1 if ceil and (o - 1) * s >= n + p else o


def _windows(size, k, st, p, ceil, count_include_pad):
    """Per axis, per pooled position: (taps inside self, divisor factor)."""
    axes = []
    for a in range(3):
        rows = []
        for o in range(_pooled_size(size[a], k[a], st[a], p[a], ceil)):
            start = o * st[a] - p[a]
            end = min(start + k[a], size[a] + p[a])
            taps = range(max(start, 0), min(end, size[a]))
            rows.append((taps, end - start if count_include_pad else len(taps)))
        axes.append(rows)
    return axes


def _args(self, kernel_size, stride, padding):
    k = _triple(kernel_size)
    return list(self.shape[-3:]), k, _triple(stride, k), _triple(padding)


def reference_forward(self, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
                      divisor_override=None):
    """Per window: the sum of its taps inside self over its divisor."""
    size, k, st, p = _args(self, kernel_size, stride, padding)
    axes = _windows(size, k, st, p, ceil_mode, count_include_pad)
    P = math.prod(self.shape[:-3])
    planes = self.detach().to(torch.float64).reshape(P, math.prod(size)).tolist()
    out = []
    for x in planes:
        row = []
        for td, fd in axes[0]:
            for th, fh in axes[1]:
                for tw, fw in axes[2]:
                    total = sum(x[(z * size[1] + y) * size[2] + w] for z in td for y in th for w in tw)
                    row.append(total / (divisor_override or fd * fh * fw))
        out.append(row)
    shape = (*self.shape[:-3], *(len(a) for a in axes))
    return torch.tensor(out, dtype=torch.float64).reshape(shape)


def reference_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):
    """grad_input[x] = sum of grad_output[o] / divisor(o) over the windows o covering x."""
    size, k, st, p = _args(self, kernel_size, stride, padding)
    axes = _windows(size, k, st, p, ceil_mode, count_include_pad)
    P = math.prod(self.shape[:-3])
    g = grad_output.detach().to(torch.float64).reshape(P, math.prod(grad_output.shape[-3:])).tolist()
    out = torch.zeros(P, math.prod(size), dtype=torch.float64)
    for q in range(P):
        o = 0
        for td, fd in axes[0]:
            for th, fh in axes[1]:
                for tw, fw in axes[2]:
                    term = g[q][o] / (divisor_override or fd * fh * fw)
                    for z in td:
                        for y in th:
                            for w in tw:
                                out[q, (z * size[1] + y) * size[2] + w] += term
                    o += 1
    return out.reshape(self.shape).to(grad_output.device)


# ---------------------------------------------------------------------------
# Cases: (description, self shape, kernel_size, stride, padding, ceil_mode,
# count_include_pad, divisor_override).

_CASES = (
    ("k2 s2", (2, 3, 4, 6, 6), [2], [], [0], False, True, None),
    ("k3 s2 p1 (overlapping) without pad", (1, 2, 5, 7, 6), [3], [2], [1], False, False, None),
    ("k3 s1 p1 (every position in 27 windows)", (1, 2, 4, 4, 5), [3, 3, 3], [1], [1, 1, 1], False, True, None),
    ("ceil_mode (windows past the padding)", (2, 2, 5, 5, 7), [2, 3, 2], [2, 2, 3], [0, 1, 1], True, True, None),
    ("ceil_mode without pad", (1, 2, 5, 6, 7), [3], [2], [1], True, False, None),
    ("divisor_override", (1, 3, 4, 5, 6), [2, 3, 2], [1, 2, 1], [1, 1, 0], False, True, 5),
    ("negative divisor_override", (1, 2, 3, 4, 4), [2], [1], [1], True, False, -3),
    ("4-D k(2,3,1)", (3, 4, 6, 5), [2, 3, 1], [2, 3, 1], [0], False, True, None),
    ("stride > kernel (uncovered positions)", (1, 2, 5, 5, 7), [2], [3], [0], False, True, None),
    ("size-1", (1, 1, 1, 1, 1), [1], [1], [0], False, True, None),
    ("C=19 k2 s1", (2, 19, 3, 3, 4), [2], [1], [0], False, True, None),
    ("empty N", (0, 2, 4, 4, 4), [2], [2], [0], False, True, None),
)
_EVERY_LAYOUT = ("k2 s2", "k3 s2 p1 (overlapping) without pad")


def _pooled_shape(shape, kernel, stride, padding, ceil_mode):
    k = _triple(kernel)
    st, p = _triple(stride, k), _triple(padding)
    return (*shape[:-3], *(_pooled_size(shape[-3 + a], k[a], st[a], p[a], ceil_mode) for a in range(3)))


def _exact(dtype):
    """aten's CPU kernels compute float32/float64 with the same operations in
    the same order (and have no float16/bfloat16 kernel)."""
    return dtype in (torch.float32, torch.float64)


def _forward_samples(device, dtype, requires_grad):
    for n, (desc, shape, *window) in enumerate(_CASES):
        for layout in _layouts(len(shape), n, every=desc in _EVERY_LAYOUT):
            x = make_tensor(shape, dtype, device, layout=layout, requires_grad=requires_grad)
            yield SampleInput((x, *window), desc=f"{desc} {list(shape)} {layout}", layout=layout,
                              exact_vs_aten=_exact(dtype))


def _backward_samples(device, dtype, requires_grad):
    for n, (desc, shape, *window) in enumerate(_CASES):
        pooled = _pooled_shape(shape, *window[:4])
        for layout in _layouts(len(shape), n, every=desc in _EVERY_LAYOUT):
            g = make_tensor(pooled, dtype, device, layout=layout, requires_grad=requires_grad)
            s = make_tensor(shape, dtype, device, layout=layout)
            yield SampleInput((g, s, *window), desc=f"{desc} {list(shape)} {layout}", layout=layout,
                              exact_vs_aten=_exact(dtype))
    # Mixed layouts (`layout` names grad_output's); self as a stride-0
    # stand-in (only its shape, dtype and layout are read).
    shape, window = (2, 3, 4, 4, 6), ([2], [2], [0], False, True, None)
    g = make_tensor(_pooled_shape(shape, *window[:4]), dtype, device, layout="sliced", requires_grad=requires_grad)
    s = torch.zeros((), dtype=dtype, device=device).expand(shape)
    yield SampleInput((g, s, *window), desc="grad_output sliced, self expanded", layout="sliced",
                      exact_vs_aten=_exact(dtype))
    g = make_tensor(_pooled_shape(shape, *window[:4]), dtype, device, layout="permuted", requires_grad=requires_grad)
    s = make_tensor(shape, dtype, device, layout="channels_last_3d")
    yield SampleInput((g, s, *window), desc="self channels_last_3d, grad_output permuted", layout="permuted",
                      exact_vs_aten=_exact(dtype))


# ---------------------------------------------------------------------------
# Errors: one per contract-error row of §12 (the row in each description).

def _E(args, exc, match, desc, kwargs=None, **kw):
    return ErrorInput(SampleInput(tuple(args), kwargs or {}, desc=desc), exc, match, **kw)


def _backward_errors(device):
    x = make_tensor((1, 2, 4, 4, 4), torch.float32, device)
    g = make_tensor((1, 2, 2, 2, 2), torch.float32, device)
    w = ([2], [2], [0], False, True, None)
    gi = "grad_input"
    out = torch.empty_like(x)
    yield _E((g.to(torch.bool), x, *w), TypeError,
             r"grad_output must be float32, float64, float16 or bfloat16, got Bool", "row 1: grad_output bool")
    yield _E((g, x.to(torch.complex64), *w), TypeError, r"self must be .* got ComplexFloat", "row 1: self complex")
    yield _E((g, x, *w), TypeError, r"grad_input must be .* got Long", "row 1: out int64",
             kwargs={gi: out.long()}, overload=gi)
    yield _E((g, x.double(), *w), TypeError, r"self must have grad_output's dtype Float, got Double",
             "row 2: self dtype differs")
    yield _E((g, x, *w), TypeError, r"grad_input must have grad_output's dtype Float, got Half",
             "row 2: out dtype differs", kwargs={gi: out.half()}, overload=gi)
    yield _E((g[0, 0], x[0, 0], *w), ValueError,
             r"self must be 4-D \(N, D, H, W\) or 5-D \(N, C, D, H, W\), got 3-D", "row 3: self 3-D")
    yield _E((g[0], x, *w), ValueError, r"grad_output must have self's rank 5, got 4-D",
             "row 3: grad_output rank differs")
    yield _E((g, x, *w), ValueError, r"grad_input must have self's rank 5, got 4-D", "row 3: out rank differs",
             kwargs={gi: out[0]}, overload=gi)
    yield _E((g[:, :0], x[:, :0], *w), ValueError,
             r"every axis of self but N must be > 0, got shape \[1, 0, 4, 4, 4\] \(axis 1 is 0\)", "row 4: C is 0")
    yield _E((g, x, [2, 2], [2], [0], False, True, None), ValueError,
             r"kernel_size must have 1 or 3 elements, got 2 \(\[2, 2\]\)", "row 5: kernel_size length")
    yield _E((g, x, [2, 0, 2], [2], [0], False, True, None), ValueError,
             r"kernel_size elements must be > 0, got \[2, 0, 2\]", "row 5: kernel_size 0")
    yield _E((g, x, [2], [2, 2], [0], False, True, None), ValueError,
             r"stride must have 0, 1 or 3 elements, got 2 \(\[2, 2\]\)", "row 6: stride length")
    yield _E((g, x, [2], [2, -1, 2], [0], False, True, None), ValueError,
             r"stride elements must be > 0, got \[2, -1, 2\]", "row 6: stride negative")
    yield _E((g, x, [2], [2], [], False, True, None), ValueError, r"padding must have 1 or 3 elements, got 0",
             "row 7: padding empty")
    yield _E((g, x, [2], [2], [0, 2, 0], False, True, None), ValueError,
             r"padding elements must be in \[0, kernel_size / 2\], got padding \[0, 2, 0\] for kernel_size \[2\]",
             "row 7: padding > kernel_size / 2")
    yield _E((g, x, [2], [2], [0], False, True, 0), ValueError, r"divisor_override must be None or nonzero, got 0",
             "row 8: divisor_override 0")
    yield _E((g, x[..., :1, :], [2], [2], [0], False, True, None), ValueError,
             r"kernel_size must be <= self's size on every axis, got kernel_size \[2, 2, 2\] for self shape "
             r"\[1, 2, 4, 1, 4\] \(axis 1 \(D, H, W\)\)", "row 9: kernel larger than self")
    yield _E((g[..., :1], x[..., :2], [3], [1], [1], False, True, None), ValueError,
             r"kernel_size must be <= self's size on every axis", "row 9: kernel larger than self, padding too")
    yield _E((g, x, [3], [2], [1], True, True, None), ValueError,
             r"grad_output must have the pooled shape \[1, 2, 3, 3, 3\], got \[1, 2, 2, 2, 2\]",
             "row 10: grad_output shape (ceil_mode)")
    yield _E((g, x, *w), ValueError, r"grad_input must have self's shape \[1, 2, 4, 4, 4\], got \[1, 2, 4, 4, 2\]",
             "row 11: out shape differs", kwargs={gi: torch.empty(1, 2, 4, 4, 2, device=device)}, overload=gi)


def _forward_errors(device):
    x = make_tensor((1, 2, 4, 4, 4), torch.float32, device)
    yield _E((x.to(torch.int32), [2]), TypeError, r"self must be float32, float64, float16 or bfloat16, got Int",
             "row 1: self int32")
    yield _E((x[0, 0], [2]), ValueError, r"self must be 4-D \(N, D, H, W\) or 5-D \(N, C, D, H, W\), got 3-D",
             "row 3: self 3-D")
    yield _E((x[:, :, :, :0], [2]), ValueError,
             r"every axis of self but N must be > 0, got shape \[1, 2, 4, 0, 4\] \(axis 3 is 0\)", "row 4: H is 0")
    yield _E((x, [2, 2, 2, 2]), ValueError, r"kernel_size must have 1 or 3 elements, got 4",
             "row 5: kernel_size length")
    yield _E((x, [2], [2 ** 31]), ValueError, r"stride elements must be < 2\^31, got \[2147483648\]",
             "row 6: stride 2^31")
    yield _E((x, [3], [2], [2]), ValueError,
             r"padding elements must be in \[0, kernel_size / 2\], got padding \[2\] for kernel_size \[3\]",
             "row 7: padding > kernel_size / 2")
    yield _E((x, [2], [2], [0], False, True, 0), ValueError, r"divisor_override must be None or nonzero, got 0",
             "row 8: divisor_override 0")
    yield _E((x, [5]), ValueError,
             r"kernel_size must be <= self's size on every axis, got kernel_size \[5, 5, 5\] for self shape "
             r"\[1, 2, 4, 4, 4\] \(axis 0 \(D, H, W\)\)", "row 9: kernel larger than self")
    yield _E((x[..., :2], [3], [1], [1]), ValueError, r"kernel_size must be <= self's size on every axis",
             "row 9: kernel larger than self, padding making room")


OP_INFOS = with_backward(
    OpInfo(name="avg_pool3d", family="avg_pool", dtypes=DTYPES, sample_inputs=_forward_samples,
           reference=reference_forward, error_inputs=_forward_errors, aten=torch.ops.aten.avg_pool3d.default),
    sample_inputs=_backward_samples, reference=reference_backward, error_inputs=_backward_errors,
    aten=torch.ops.aten.avg_pool3d_backward.default)
