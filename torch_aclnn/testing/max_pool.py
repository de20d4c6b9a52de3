"""OpInfos of the MaxPool3d family (docs/spec.md §9): max_pool3d_with_indices
(two results: values and indices) and max_pool3d_with_indices_backward, 4-D
(N, D, H, W) and 5-D (N, C, D, H, W)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .core import FLOATING, LAYOUTS, ErrorInput, OpInfo, SampleInput, make_layout, make_tensor, with_backward

DTYPES = FLOATING


# ---------------------------------------------------------------------------
# float64 references written from the spec (independent of the kernels and of
# aten's max_pool3d): every (n, c) plane flattened to one axis.

def _triple(v, default=None):
    v = list(v)
    return default if not v else v * 3 if len(v) == 1 else v


def _pooled_size(n, k, s, p, d, ceil):
    top = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = top // s + 1
    return o - 1 if ceil and (o - 1) * s >= n + p else o


def reference_forward(self, kernel_size, stride, padding, dilation, ceil_mode):
    """Per window, in increasing (d, h, w): the first tap, replaced by any
    later tap that is larger or NaN. Returns (values, int64 indices)."""
    k = _triple(kernel_size)
    st, p, d = _triple(stride, k), _triple(padding), _triple(dilation)
    size = list(self.shape[-3:])
    out = [_pooled_size(size[a], k[a], st[a], p[a], d[a], ceil_mode) for a in range(3)]
    P = math.prod(self.shape[:-3])
    planes = self.detach().to(torch.float64).reshape(P, math.prod(size)).tolist()
    values, indices = [], []
    for x in planes:
        vrow, irow = [], []
        for od in range(out[0]):
            for oh in range(out[1]):
                for ow in range(out[2]):
                    best, where = -math.inf, None
                    for i in range(k[0]):
                        z = od * st[0] - p[0] + i * d[0]
                        for j in range(k[1]):
                            y = oh * st[1] - p[1] + j * d[1]
                            for m in range(k[2]):
                                w = ow * st[2] - p[2] + m * d[2]
                                if not (0 <= z < size[0] and 0 <= y < size[1] and 0 <= w < size[2]):
                                    continue
                                pos = (z * size[1] + y) * size[2] + w
                                v = x[pos]
                                if where is None:
                                    where = pos
                                if v > best or v != v:
                                    best, where = v, pos
                    vrow.append(best)
                    irow.append(where)
        values.append(vrow)
        indices.append(irow)
    shape = (*self.shape[:-3], *out)
    return (torch.tensor(values, dtype=torch.float64).reshape(shape),
            torch.tensor(indices, dtype=torch.int64).reshape(shape))


def reference_backward(grad_output, self, indices, kernel_size, stride, padding, dilation, ceil_mode):
    """grad_input = zeros(self's shape); grad_input[p][indices[p][o]] += grad_output[p][o]."""
    S, oS = math.prod(self.shape[-3:]), math.prod(grad_output.shape[-3:])
    P = math.prod(self.shape[:-3])
    g = grad_output.detach().to(torch.float64).reshape(P, oS)
    idx = indices.detach().to(torch.int64).reshape(P, oS)
    out = torch.zeros(P, S, dtype=torch.float64, device=g.device).scatter_add_(1, idx, g)
    return out.reshape(self.shape)


def aten_backward(grad_output, self, indices, kernel_size, stride, padding, dilation, ceil_mode):
    """aten's own max_pool3d gradient (int64 indices only)."""
    return torch.ops.aten.max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
                                                           dilation, ceil_mode, indices.to(torch.int64))


# ---------------------------------------------------------------------------
# Cases: (description, self shape, kernel_size, stride, padding, dilation,
# ceil_mode). Indices come from F.max_pool3d of random float64 values (ties
# have probability zero), so they are what the forward produces.

_CASES = (
    ("k2 s2", (2, 3, 4, 6, 6), [2], [], [0], [1], False),
    ("k3 s2 p1 (overlapping)", (1, 2, 5, 7, 6), [3], [2], [1], [1], False),
    ("k3 s1 p1 (every position in 27 windows)", (1, 2, 4, 4, 5), [3, 3, 3], [1, 1, 1], [1, 1, 1], [1], False),
    ("dilation 2", (1, 3, 6, 7, 5), [2, 2, 2], [1, 2, 1], [1, 0, 1], [2, 1, 2], False),
    ("ceil_mode", (2, 2, 5, 5, 7), [2, 3, 2], [2, 2, 3], [0, 1, 1], [1], True),
    ("4-D k(2,3,1)", (3, 4, 6, 5), [2, 3, 1], [2, 3, 1], [0], [1], False),
    ("size-1", (1, 1, 1, 1, 1), [1], [1], [0], [1], False),
    ("C=19 k2 s1", (2, 19, 3, 3, 4), [2], [1], [0], [1], False),
    ("empty N", (0, 2, 4, 4, 4), [2], [2], [0], [1], False),
)
_EVERY_LAYOUT = ("k2 s2", "k3 s2 p1 (overlapping)")


def _overlapping(kernel, stride, dilation):
    """Whether one input position can lie in several windows."""
    k = kernel * 3 if len(kernel) == 1 else kernel
    s = k if not stride else stride * 3 if len(stride) == 1 else stride
    d = dilation * 3 if len(dilation) == 1 else dilation
    return any(d[i] * (k[i] - 1) + 1 > s[i] for i in range(3))


def _pooled(shape, kernel, stride, padding, dilation, ceil_mode, seed):
    x = torch.rand(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed), device="cpu")
    _, idx = F.max_pool3d(x if len(shape) == 5 else x.unsqueeze(1), kernel, stride or None, padding, dilation,
                          ceil_mode, return_indices=True)
    return idx if len(shape) == 5 else idx.squeeze(1)


def _layouts(dim: int, k: int, every: bool):
    """Every layout the rank allows for `every` cases; else contiguous and one
    other, rotating over the cases (keeps opcheck's per-sample cost down)."""
    allowed = LAYOUTS if dim == 5 else tuple(lay for lay in LAYOUTS if lay != "channels_last_3d")
    return allowed if every else ("contiguous", allowed[1 + k % (len(allowed) - 1)])


def _backward_samples(device, dtype, requires_grad):
    for k, (desc, shape, kernel, stride, padding, dilation, ceil_mode) in enumerate(_CASES):
        idx = _pooled(shape, kernel, stride, padding, dilation, ceil_mode, 1234 + k)
        # Bitwise equal to aten: float32/float64 (the same sums in the same
        # order), and any dtype where no position gets two terms (aten's
        # float16/bfloat16 round after each addition, torch_aclnn once).
        exact = dtype in (torch.float32, torch.float64) or not _overlapping(kernel, stride, dilation)
        for layout in _layouts(len(shape), k, every=desc in _EVERY_LAYOUT):
            g = make_tensor(idx.shape, dtype, device, layout=layout, requires_grad=requires_grad)
            s = make_tensor(shape, dtype, device, layout=layout)
            i = make_layout(idx.to(device), layout)
            yield SampleInput((g, s, i, kernel, stride, padding, dilation, ceil_mode),
                              desc=f"{desc} {list(shape)} {layout}", layout=layout, exact_vs_aten=exact)
    # int32 indices; mixed layouts (`layout` names grad_output's); self as a
    # stride-0 stand-in (only its shape, dtype and layout are read).
    shape = (2, 3, 4, 4, 6)
    idx = _pooled(shape, [2], [2], [0], [1], False, 7)
    g = make_tensor(idx.shape, dtype, device, layout="sliced", requires_grad=requires_grad)
    s = torch.zeros((), dtype=dtype, device=device).expand(shape)
    yield SampleInput((g, s, make_layout(idx.to(device, torch.int32), "channels_last_3d"), [2], [2], [0], [1],
                       False), desc="int32 indices channels_last_3d, grad_output sliced, self expanded",
                      layout="sliced", exact_vs_aten=True)
    g = make_tensor(idx.shape, dtype, device, layout="channels_last_3d", requires_grad=requires_grad)
    s = make_tensor(shape, dtype, device, layout="channels_last_3d")
    yield SampleInput((g, s, make_layout(idx.to(device), "permuted"), [2], [2], [0], [1], False),
                      desc="self channels_last_3d, indices permuted", layout="channels_last_3d", exact_vs_aten=True)


def _forward_samples(device, dtype, requires_grad):
    for k, (desc, shape, kernel, stride, padding, dilation, ceil_mode) in enumerate(_CASES):
        for layout in _layouts(len(shape), k, every=desc in _EVERY_LAYOUT):
            x = make_tensor(shape, dtype, device, layout=layout, requires_grad=requires_grad)
            yield SampleInput((x, kernel, stride, padding, dilation, ceil_mode), desc=f"{desc} {list(shape)} {layout}",
                              layout=layout, exact_vs_aten=True)
    if requires_grad:  # (ties and infinities have no numerical gradient)
        return
    # Ties (equal values: the first tap wins) and -inf windows (the first tap).
    x = torch.tensor([[1.0, 1.0, 2.0, 2.0], [-math.inf, -math.inf, 0.5, 0.5]]).view(1, 1, 1, 2, 4)
    x = x.to(dtype=dtype, device=device).repeat(2, 3, 1, 1, 1)
    yield SampleInput((x, [1, 1, 2], [1, 1, 2], [0], [1], False), desc="ties and -inf windows",
                      exact_vs_aten=True)


# ---------------------------------------------------------------------------
# Errors: one per contract-error row of §9 (the row in each description),
# then adversarial variants.

def _E(args, exc, match, desc, kwargs=None, **kw):
    return ErrorInput(SampleInput(tuple(args), kwargs or {}, desc=desc), exc, match, **kw)


def _backward_errors(device):
    x = make_tensor((1, 2, 4, 4, 4), torch.float32, device)
    idx = _pooled((1, 2, 4, 4, 4), [2], [2], [0], [1], False, 3).to(device)
    g = make_tensor(idx.shape, torch.float32, device)
    w = ([2], [2], [0], [1], False)
    gi = "grad_input"
    out = torch.empty_like(x)
    yield _E((g.to(torch.bool), x, idx, *w), TypeError,
             r"grad_output must be float32, float64, float16 or bfloat16, got Bool", "row 1: grad_output bool")
    yield _E((g, x.to(torch.complex64), idx, *w), TypeError, r"self must be .* got ComplexFloat",
             "row 1: self complex")
    yield _E((g, x, idx.float(), *w), TypeError, r"indices must be int32 or int64, got Float",
             "row 1: indices float")
    yield _E((g, x, idx.to(torch.int16), *w), TypeError, r"indices must be int32 or int64, got Short",
             "row 1: indices int16")
    yield _E((g, x, idx, *w), TypeError, r"grad_input must be .* got Long", "row 1: out int64",
             kwargs={gi: out.long()}, overload=gi)
    yield _E((g, x.double(), idx, *w), TypeError, r"self must have grad_output's dtype Float, got Double",
             "row 2: self dtype differs")
    yield _E((g, x, idx, *w), TypeError, r"grad_input must have grad_output's dtype Float, got Half",
             "row 2: out dtype differs", kwargs={gi: out.half()}, overload=gi)
    yield _E((g[0, 0], x[0, 0], idx[0, 0], *w), ValueError,
             r"self must be 4-D \(N, D, H, W\) or 5-D \(N, C, D, H, W\), got 3-D", "row 3: self 3-D")
    yield _E((g, x.unsqueeze(0), idx, *w), ValueError, r"self must be 4-D .* got 6-D", "row 3: self 6-D")
    yield _E((g[0], x, idx, *w), ValueError, r"grad_output must have self's rank 5, got 4-D",
             "row 3: grad_output rank differs")
    yield _E((g, x, idx[0], *w), ValueError, r"indices must have self's rank 5, got 4-D",
             "row 3: indices rank differs")
    yield _E((g, x, idx, *w), ValueError, r"grad_input must have self's rank 5, got 4-D",
             "row 3: out rank differs", kwargs={gi: out[0]}, overload=gi)
    yield _E((g[:, :0], x[:, :0], idx[:, :0], *w), ValueError,
             r"every axis of self but N must be > 0, got shape \[1, 0, 4, 4, 4\] \(axis 1 is 0\)", "row 4: C is 0")
    yield _E((g, x, idx, [2, 2], [2], [0], [1], False), ValueError,
             r"kernel_size must have 1 or 3 elements, got 2 \(\[2, 2\]\)", "row 5: kernel_size length")
    yield _E((g, x, idx, [2, 0, 2], [2], [0], [1], False), ValueError,
             r"kernel_size elements must be > 0, got \[2, 0, 2\]", "row 5: kernel_size 0")
    yield _E((g, x, idx, [2], [2, 2], [0], [1], False), ValueError,
             r"stride must have 0, 1 or 3 elements, got 2 \(\[2, 2\]\)", "row 6: stride length")
    yield _E((g, x, idx, [2], [2, -1, 2], [0], [1], False), ValueError,
             r"stride elements must be > 0, got \[2, -1, 2\]", "row 6: stride negative")
    yield _E((g, x, idx, [2], [2], [], [1], False), ValueError, r"padding must have 1 or 3 elements, got 0",
             "row 7: padding empty")
    yield _E((g, x, idx, [2], [2], [0, 2, 0], [1], False), ValueError,
             r"padding elements must be in \[0, kernel_size / 2\], got padding \[0, 2, 0\] for kernel_size \[2\]",
             "row 7: padding > kernel_size / 2")
    yield _E((g, x, idx, [2], [2], [-1], [1], False), ValueError,
             r"padding elements must be in \[0, kernel_size / 2\], got padding \[-1\]", "row 7: padding negative")
    yield _E((g, x, idx, [2], [2], [0], [1, 1, 1, 1], False), ValueError,
             r"dilation must have 1 or 3 elements, got 4", "row 8: dilation length")
    yield _E((g, x, idx, [2], [2], [0], [1, 0, 1], False), ValueError,
             r"dilation elements must be > 0, got \[1, 0, 1\]", "row 8: dilation 0")
    yield _E((g, x, idx, [2], [2], [0], [5], False), ValueError,
             r"the pooled size must be >= 1 on every axis, got self shape \[1, 2, 4, 4, 4\] too small for "
             r"kernel_size 2, dilation 5 and padding 0 on axis 0", "row 9: dilated window larger than self")
    yield _E((g[..., :1], x[..., :2], idx[..., :1], [2, 2, 2], [2, 2, 1], [0, 0, 1], [1, 1, 3], False), ValueError,
             r"every pooling window must have a tap inside self", "row 9: a window whose dilation steps over self")
    yield _E((g, x, idx, [3], [2], [1], [1], True), ValueError,
             r"grad_output must have the pooled shape \[1, 2, 3, 3, 3\], got \[1, 2, 2, 2, 2\]",
             "row 10: grad_output shape (ceil_mode)")
    yield _E((g, x, idx[..., :1], *w), ValueError,
             r"indices must have the pooled shape \[1, 2, 2, 2, 2\], got \[1, 2, 2, 2, 1\]",
             "row 10: indices shape")
    yield _E((g, x, idx, *w), ValueError, r"grad_input must have self's shape \[1, 2, 4, 4, 4\], got \[1, 2, 4, 4, 2\]",
             "row 11: out shape differs", kwargs={gi: torch.empty(1, 2, 4, 4, 2, device=device)}, overload=gi)
    bad = idx.clone()
    bad[0, 1, 1, 0, 1] = 64
    yield _E((g, x, bad, *w), IndexError,
             r"indices\[0, 1, 1, 0, 1\] = 64 is not a position of that output's pooling window \(self's D\*H\*W = 64; "
             r"the window starts at \(D, H, W\) \[2, 0, 2\] with kernel_size \[2, 2, 2\] and dilation \[1, 1, 1\]\)",
             "row 12: index outside the plane", data_dependent=True)
    bad = idx.clone()
    bad[0, 0, 0, 1, 1] = -1
    bad[0, 1, 0, 0, 0] = -2
    yield _E((g, x, make_layout(bad, "channels_last_3d"), *w), IndexError,
             r"indices\[0, 0, 0, 1, 1\] = -1 is not a position", "row 12: negative, first in logical order",
             data_dependent=True)
    bad = idx.clone()
    bad[0, 0, 1, 1, 1] = 0  # position (0, 0, 0): in the plane, in window (0, 0, 0) only
    yield _E((g, x, bad.int(), *w), IndexError,
             r"indices\[0, 0, 1, 1, 1\] = 0 is not a position of that output's pooling window .* starts at "
             r"\(D, H, W\) \[2, 2, 2\]", "row 12: another window's position, int32", data_dependent=True)
    yield _E((g, x, bad, *w), IndexError, r"indices\[0, 0, 1, 1, 1\] = 0 is not a position", "row 12: out= variant",
             kwargs={gi: out}, overload=gi, data_dependent=True)


def _forward_errors(device):
    x = make_tensor((1, 2, 4, 4, 4), torch.float32, device)
    yield _E((x.to(torch.int32), [2], [2], [0], [1], False), TypeError,
             r"self must be float32, float64, float16 or bfloat16, got Int", "row 1: self int32")
    yield _E((x[0, 0], [2], [2], [0], [1], False), ValueError,
             r"self must be 4-D \(N, D, H, W\) or 5-D \(N, C, D, H, W\), got 3-D", "row 3: self 3-D")
    yield _E((x[:, :, :, :0], [2], [2], [0], [1], False), ValueError,
             r"every axis of self but N must be > 0, got shape \[1, 2, 4, 0, 4\] \(axis 3 is 0\)", "row 4: H is 0")
    yield _E((x, [2, 2, 2, 2], [2], [0], [1], False), ValueError, r"kernel_size must have 1 or 3 elements, got 4",
             "row 5: kernel_size length")
    yield _E((x, [-2], [2], [0], [1], False), ValueError, r"kernel_size elements must be > 0, got \[-2\]",
             "row 5: kernel_size negative")
    yield _E((x, [2], [2 ** 31], [0], [1], False), ValueError, r"stride elements must be < 2\^31, got \[2147483648\]",
             "row 6: stride 2^31")
    yield _E((x, [2 ** 32 + 1], [2], [0], [2 ** 32], False), ValueError,
             r"kernel_size elements must be < 2\^31, got \[4294967297\]", "row 5: huge kernel (int64 wrap)")
    yield _E((x, [2], [0], [0], [1], False), ValueError, r"stride elements must be > 0, got \[0\]", "row 6: stride 0")
    yield _E((x, [3], [2], [2], [1], False), ValueError,
             r"padding elements must be in \[0, kernel_size / 2\], got padding \[2\] for kernel_size \[3\]",
             "row 7: padding > kernel_size / 2")
    yield _E((x, [2], [2], [0], [0, 1, 1], False), ValueError, r"dilation elements must be > 0, got \[0, 1, 1\]",
             "row 8: dilation 0")
    yield _E((x, [5], [2], [0], [1], False), ValueError,
             r"the pooled size must be >= 1 on every axis, got self shape \[1, 2, 4, 4, 4\] too small for "
             r"kernel_size 5, dilation 1 and padding 0 on axis 0", "row 9: kernel larger than self")
    yield _E((x[..., :2], [1, 1, 2], [1], [0, 0, 1], [1, 1, 3], False), ValueError,
             r"every pooling window must have a tap inside self, got the window of output position 0 on axis 2 "
             r"\(D, H, W\), whose taps start at -1 with dilation 3 and miss self's 2 positions",
             "row 9: a window whose dilation steps over self")


OP_INFOS = with_backward(
    OpInfo(name="max_pool3d_with_indices", family="max_pool", dtypes=DTYPES, sample_inputs=_forward_samples,
           reference=reference_forward, error_inputs=_forward_errors,
           aten=torch.ops.aten.max_pool3d_with_indices.default),
    sample_inputs=_backward_samples, reference=reference_backward, error_inputs=_backward_errors, aten=aten_backward)
