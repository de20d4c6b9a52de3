"""OpInfos of the MaxUnpool3d family (docs/spec.md §5): max_unpool3d and
max_unpool3d_backward, 4-D (N, D, H, W) and 5-D (N, C, D, H, W)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .core import FLOATING, LAYOUTS, ErrorInput, OpInfo, SampleInput, make_layout, make_tensor, with_backward

DTYPES = FLOATING + (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)


# ---------------------------------------------------------------------------
# float64 references written from the spec (independent of the kernels and of
# aten's max_unpool3d): every (n, c) plane is flattened to one axis.

def _planes(t: torch.Tensor, spatial: int) -> torch.Tensor:
    lead = math.prod(t.shape[:-3])
    return t.reshape(lead, spatial)


def reference_forward(self, indices, output_size, stride, padding):
    """out = zeros(..., oD, oH, oW); out[p][indices[p][i]] = self[p][i], the
    largest i winning where indices repeat."""
    x = self.detach().to(torch.float64)
    S, oS = math.prod(x.shape[-3:]), math.prod(output_size)
    xf, idx = _planes(x, S), _planes(indices.detach(), S)
    P = xf.shape[0]
    positions = torch.arange(S).expand(P, S)
    winner = torch.full((P, oS), -1, dtype=torch.int64).scatter_reduce(1, idx, positions, "amax")
    rows = torch.arange(P).unsqueeze(1)
    out = torch.where(winner >= 0, xf[rows, winner.clamp(min=0)], torch.zeros((), dtype=torch.float64))
    return out.reshape(*x.shape[:-3], *output_size)


def reference_backward(grad_output, self, indices, output_size, stride, padding):
    """out[p][i] = grad_output[p][indices[p][i]], of self's shape."""
    S, oS = math.prod(self.shape[-3:]), math.prod(output_size)
    g = _planes(grad_output.detach().to(torch.float64), oS)
    idx = _planes(indices.detach(), S)
    rows = torch.arange(g.shape[0]).unsqueeze(1)
    return g[rows, idx].reshape(self.shape)


def aten_backward(grad_output, self, indices, output_size, stride, padding):
    """aten's own max_unpool3d gradient: a gather over the flattened D*H*W axis."""
    return grad_output.flatten(-3).gather(-1, indices.flatten(-3)).view(indices.shape)


# ---------------------------------------------------------------------------
# Cases. Each gives (self shape, indices, output_size, stride, padding, unique)
# for one generator seed. Indices come from max_pool3d with non-overlapping
# windows (unique, as gradcheck needs), from random permutations (unique,
# arbitrary patterns), or drawn with replacement (duplicates: the forward's
# "largest position wins" rule; no gradient then, see the module docstring of
# torch_aclnn.ops.max_unpool).

def _pooled(shape, kernel, stride, padding, gen):
    x = torch.rand(shape, dtype=torch.float64, generator=gen, device="cpu")
    _, idx = F.max_pool3d(x, kernel, stride, padding, return_indices=True)
    return idx, list(shape[-3:])


def _permuted(lead, spatial, output_size, gen):
    S, oS = math.prod(spatial), math.prod(output_size)
    P = math.prod(lead)
    idx = torch.stack([torch.randperm(oS, generator=gen, device="cpu")[:S] for _ in range(P)]) if P else \
        torch.empty(0, S, dtype=torch.int64, device="cpu")
    return idx.reshape(*lead, *spatial)


def _with_replacement(lead, spatial, output_size, gen):
    return torch.randint(0, math.prod(output_size), (*lead, *spatial), generator=gen, device="cpu")


_EVERY_LAYOUT = ("pool k2 s2", "duplicates")


def _cases(unique_only: bool):
    g = torch.Generator().manual_seed(1234)
    cases = []
    # 5-D, kernel 2 stride 2 (the MaxPool3d(2) -> MaxUnpool3d(2) pair).
    idx, out = _pooled((2, 3, 4, 6, 6), 2, 2, 0, g)
    cases.append(("pool k2 s2", idx, out, [2, 2, 2], [0, 0, 0], True))
    # 5-D, kernel 3 stride 3 padding 1, odd sizes.
    idx, out = _pooled((1, 2, 5, 7, 6), 3, 3, 1, g)
    cases.append(("pool k3 s3 p1", idx, out, [3, 3, 3], [1, 1, 1], True))
    # 4-D (N, D, H, W), per-axis kernel.
    idx, out = _pooled((3, 4, 6, 5), (2, 3, 1), (2, 3, 1), 0, g)
    cases.append(("4-D pool k(2,3,1)", idx, out, [2, 3, 1], [0, 0, 0], True))
    # Size-1 axes everywhere.
    idx, out = _pooled((1, 1, 1, 1, 1), 1, 1, 0, g)
    cases.append(("size-1", idx, out, [1, 1, 1], [0, 0, 0], True))
    # Many channels (the channels_last_3d kernels work in channel blocks).
    idx = _permuted((2, 19), (2, 2, 3), (3, 4, 5), g)
    cases.append(("C=19 randperm", idx, [3, 4, 5], [2, 2, 2], [0, 0, 0], True))
    # Output volume equal to the input volume (a permutation of each plane).
    idx = _permuted((2, 3), (2, 3, 4), (4, 3, 2), g)
    cases.append(("4-D permutation", idx, [4, 3, 2], [1, 1, 1], [0, 0, 0], True))
    # Empty batch.
    cases.append(("empty N", torch.empty(0, 2, 2, 2, 2, dtype=torch.int64), [4, 4, 4], [2, 2, 2], [0, 0, 0], True))
    cases.append(("4-D empty N", torch.empty(0, 2, 3, 2, dtype=torch.int64), [4, 6, 4], [2, 2, 2], [0, 0, 0], True))
    if not unique_only:
        idx = _with_replacement((2, 3), (2, 3, 4), (3, 4, 3), g)
        cases.append(("duplicates", idx, [3, 4, 3], [1, 1, 1], [0, 0, 0], False))
        idx = _with_replacement((2,), (2, 2, 4), (2, 3, 3), g)
        cases.append(("4-D duplicates", idx, [2, 3, 3], [1, 1, 1], [0, 0, 0], False))
        # The spec's worked example (4-D (1, 1, 4, 4), repeated index 0).
        idx = torch.tensor([0, 0, 0, 3, 0, 0, 0, 8, 0, 0, 0, 11, 0, 0, 0, 13]).view(1, 1, 4, 4)
        cases.append(("worked example", idx, [1, 4, 4], [1, 2, 3], [1, 2, 3], False))
    return cases


def _layouts(x: torch.Tensor, k: int, every: bool):
    """Every layout the rank allows for `every` cases; else contiguous and one
    other, rotating over the cases (keeps opcheck's per-sample cost down)."""
    allowed = LAYOUTS if x.dim() == 5 else tuple(lay for lay in LAYOUTS if lay != "channels_last_3d")
    return allowed if every else ("contiguous", allowed[1 + k % (len(allowed) - 1)])


def _forward_samples(device, dtype, requires_grad):
    # Samples with repeated indices only without grad: the gather is not the
    # adjoint of a scatter that drops the losers.
    for k, (desc, idx, out, stride, padding, unique) in enumerate(_cases(unique_only=requires_grad)):
        for layout in _layouts(idx, k, every=desc in _EVERY_LAYOUT):
            x = make_tensor(idx.shape, dtype, device, layout=layout, requires_grad=requires_grad)
            i = make_layout(idx.to(device), layout)
            yield SampleInput((x, i, out, stride, padding), desc=f"{desc} {list(idx.shape)}->{out} {layout}",
                              layout=layout, exact_vs_aten=unique)
    # Mixed layouts (`layout` names self's) and an index tensor expanded over N (stride 0).
    idx, out = _pooled((1, 3, 4, 4, 6), 2, 2, 0, torch.Generator().manual_seed(7))
    x = make_tensor((2, 3, 2, 2, 3), dtype, device, layout="channels_last_3d", requires_grad=requires_grad)
    yield SampleInput((x, make_layout(idx.expand(2, -1, -1, -1, -1).to(device), "permuted"), out, [2, 2, 2],
                       [0, 0, 0]), desc="self channels_last_3d, indices permuted", layout="channels_last_3d",
                      exact_vs_aten=True)
    x = make_tensor((2, 3, 2, 2, 3), dtype, device, layout="sliced", requires_grad=requires_grad)
    yield SampleInput((x, idx.expand(2, -1, -1, -1, -1).to(device), out, [2, 2, 2], [0, 0, 0]),
                      desc="self sliced, indices expanded over N", layout="sliced", exact_vs_aten=True)


def _backward_samples(device, dtype, requires_grad):
    for k, (desc, idx, out, stride, padding, unique) in enumerate(_cases(unique_only=requires_grad)):
        for layout in _layouts(idx, k, every=desc in _EVERY_LAYOUT):
            lead = list(idx.shape[:-3])
            g = make_tensor(lead + out, dtype, device, layout=layout, requires_grad=requires_grad)
            s = make_tensor(idx.shape, dtype, device, layout=layout)
            i = make_layout(idx.to(device), layout)
            yield SampleInput((g, s, i, out, stride, padding), desc=f"{desc} {lead + out}->{list(idx.shape)} {layout}",
                              layout=layout, exact_vs_aten=True)
    # Mixed layouts (`layout` names grad_output's); self as a stride-0 stand-in
    # (only its shape and dtype are read).
    idx, out = _pooled((2, 3, 4, 4, 6), 2, 2, 0, torch.Generator().manual_seed(7))
    g = make_tensor([2, 3] + out, dtype, device, layout="sliced", requires_grad=requires_grad)
    s = torch.zeros((), dtype=dtype, device=device).expand(idx.shape)
    yield SampleInput((g, s, make_layout(idx.to(device), "channels_last_3d"), out, [2, 2, 2], [0, 0, 0]),
                      desc="grad_output sliced, indices channels_last_3d, self expanded", layout="sliced",
                      exact_vs_aten=True)
    g = make_tensor([2, 3] + out, dtype, device, layout="channels_last_3d", requires_grad=requires_grad)
    s = make_tensor(idx.shape, dtype, device)
    yield SampleInput((g, s, make_layout(idx.to(device), "permuted"), out, [2, 2, 2], [0, 0, 0]),
                      desc="grad_output channels_last_3d, indices permuted", layout="channels_last_3d",
                      exact_vs_aten=True)


# ---------------------------------------------------------------------------
# Errors: one per contract-error row of §5 (the row in each description),
# then adversarial variants.

def _E(args, exc, match, desc, kwargs=None, **kw):
    return ErrorInput(SampleInput(tuple(args), kwargs or {}, desc=desc), exc, match, **kw)


def _forward_errors(device):
    x = make_tensor((1, 2, 2, 2, 2), torch.float32, device)
    idx = torch.tensor([0, 3, 5, 6, 8, 11, 13, 14] * 2, device=device).view(1, 2, 2, 2, 2)
    ok = [4, 2, 2]
    st, pad = [2, 1, 1], [0, 0, 0]
    yield _E((x.to(torch.bool), idx, ok, st, pad), TypeError, r"self must be float32, .* or int64, got Bool",
             "row 2: self dtype bool")
    yield _E((x.to(torch.complex64), idx, ok, st, pad), TypeError, r"self must be .* got ComplexFloat",
             "row 2: self dtype complex")
    yield _E((x, idx.to(torch.int32), ok, st, pad), TypeError, r"indices must be int64, got Int",
             "row 2: indices dtype int32")
    yield _E((x[0, 0], idx[0, 0], ok, st, pad), ValueError,
             r"self must be 4-D \(N, D, H, W\) or 5-D \(N, C, D, H, W\), got 3-D", "row 4: self 3-D")
    yield _E((x.unsqueeze(0), idx.unsqueeze(0), ok, st, pad), ValueError, r"self must be 4-D .* got 6-D",
             "row 4: self 6-D")
    yield _E((x, idx[0], ok, st, pad), ValueError, r"indices must have self's rank 5, got 4-D",
             "row 5: indices rank differs")
    yield _E((x, idx[:, :1], ok, st, pad), ValueError,
             r"indices must have self's shape \[1, 2, 2, 2, 2\], got \[1, 1, 2, 2, 2\]", "row 6: indices shape differs")
    yield _E((x[:, :, :0], idx[:, :, :0], ok, st, pad), ValueError,
             r"every axis of self but N must be > 0, got shape \[1, 2, 0, 2, 2\] \(axis 2 is 0\)",
             "row 7: self D is 0")
    yield _E((x[:, :0], idx[:, :0], ok, st, pad), ValueError,
             r"every axis of self but N must be > 0, got shape \[1, 0, 2, 2, 2\] \(axis 1 is 0\)", "row 7: self C is 0")
    yield _E((x, idx, [4, 2], st, pad), ValueError, r"output_size must have 3 elements \(D, H, W\), got 2",
             "row 8: output_size length")
    yield _E((x, idx, ok, [2, 1], pad), ValueError, r"stride must have 3 elements \(D, H, W\), got 2",
             "row 8: stride length")
    yield _E((x, idx, ok, st, [0, 0, 0, 0]), ValueError, r"padding must have 3 elements \(D, H, W\), got 4",
             "row 8: padding length")
    yield _E((x, idx, [4, 0, 2], st, pad), ValueError, r"output_size elements must be > 0, got \[4, 0, 2\]",
             "row 9: output_size 0")
    yield _E((x, idx, ok, [2, 0, 1], pad), ValueError, r"stride elements must be > 0, got \[2, 0, 1\]",
             "row 9: stride 0")
    yield _E((x, idx, ok, [2, 1, -1], pad), ValueError, r"stride elements must be > 0, got \[2, 1, -1\]",
             "row 9: stride negative")
    yield _E((x, idx, [1, 2, 3], st, pad), ValueError,
             r"prod\(output_size\) must be >= D\*H\*W of self, got output_size \[1, 2, 3\] \(6 elements\)",
             "row 10: output volume < input volume")
    yield _E((x, idx * 2, ok, st, pad), IndexError,
             r"indices\[0, 0, 1, 0, 0\] = 16 is outside \[0, 16\)", "row 15: index == prod(output_size)",
             data_dependent=True)
    yield _E((x, idx - 1, ok, st, pad), IndexError, r"indices\[0, 0, 0, 0, 0\] = -1 is outside \[0, 16\)",
             "row 15: negative index", data_dependent=True)
    big = idx.clone()
    big[0, 1, 1, 1, 0] = 2 ** 62
    yield _E((x, make_layout(big, "channels_last_3d"), ok, st, pad), IndexError,
             rf"indices\[0, 1, 1, 1, 0\] = {2 ** 62} is outside \[0, 16\)", "row 15: huge index, channels_last_3d",
             data_dependent=True)


def _backward_errors(device):
    x = make_tensor((1, 2, 2, 2, 2), torch.float32, device)
    idx = torch.tensor([0, 3, 5, 6, 8, 11, 13, 14] * 2, device=device).view(1, 2, 2, 2, 2)
    ok = [4, 2, 2]
    st, pad = [2, 1, 1], [0, 0, 0]
    g = make_tensor((1, 2, 4, 2, 2), torch.float32, device)
    out = torch.empty_like(x)
    gi = "grad_input"
    yield _E((g, x, idx, ok, st, pad), ValueError, r"grad_input must be contiguous, got shape \[1, 2, 2, 2, 2\]",
             "row 1: out channels_last_3d", kwargs={gi: torch.empty_like(x, memory_format=torch.channels_last_3d)},
             overload=gi)
    yield _E((g, x, idx, ok, st, pad), ValueError, r"grad_input must be contiguous",
             "row 1: out transposed", kwargs={gi: torch.empty_like(x).transpose(-1, -2)}, overload=gi)
    yield _E((g.to(torch.bool), x, idx, ok, st, pad), TypeError, r"grad_output must be float32, .* got Bool",
             "row 2: grad_output dtype bool")
    yield _E((g, x.to(torch.complex64), idx, ok, st, pad), TypeError, r"self must be .* got ComplexFloat",
             "row 2: self dtype complex")
    yield _E((g, x, idx.to(torch.int32), ok, st, pad), TypeError, r"indices must be int64, got Int",
             "row 2: indices dtype int32")
    yield _E((g, x, idx, ok, st, pad), TypeError, r"grad_input must be .* got Bool",
             "row 2: out dtype bool", kwargs={gi: out.to(torch.bool)}, overload=gi)
    yield _E((g, x.double(), idx, ok, st, pad), TypeError, r"self must have grad_output's dtype Float, got Double",
             "row 3: self dtype differs")
    yield _E((g, x, idx, ok, st, pad), TypeError, r"grad_input must have grad_output's dtype Float, got Half",
             "row 3: out dtype differs", kwargs={gi: out.half()}, overload=gi)
    yield _E((g[0, 0], x[0, 0], idx[0, 0], ok, st, pad), ValueError,
             r"self must be 4-D \(N, D, H, W\) or 5-D \(N, C, D, H, W\), got 3-D", "row 4: self 3-D")
    yield _E((g, x, idx[0], ok, st, pad), ValueError, r"indices must have self's rank 5, got 4-D",
             "row 5: indices rank differs")
    yield _E((g, x, idx, ok, st, pad), ValueError, r"grad_input must have self's rank 5, got 4-D",
             "row 5: out rank differs", kwargs={gi: out[0]}, overload=gi)
    yield _E((g, x, idx[..., :1], ok, st, pad), ValueError,
             r"indices must have self's shape \[1, 2, 2, 2, 2\], got \[1, 2, 2, 2, 1\]", "row 6: indices shape differs")
    yield _E((g, x, idx, ok, st, pad), ValueError, r"grad_input must have self's shape .* got \[1, 2, 2, 1, 2\]",
             "row 6: out shape differs", kwargs={gi: torch.empty(1, 2, 2, 1, 2, device=device)}, overload=gi)
    yield _E((g, x[..., :0], idx[..., :0], ok, st, pad), ValueError,
             r"every axis of self but N must be > 0, got shape \[1, 2, 2, 2, 0\] \(axis 4 is 0\)",
             "row 7: self W is 0")
    yield _E((g, x, idx, [4, 2, 2, 1], st, pad), ValueError, r"output_size must have 3 elements \(D, H, W\), got 4",
             "row 8: output_size length")
    yield _E((g, x, idx, ok, [2], pad), ValueError, r"stride must have 3 elements \(D, H, W\), got 1",
             "row 8: stride length")
    yield _E((g, x, idx, ok, st, [0, 0]), ValueError, r"padding must have 3 elements \(D, H, W\), got 2",
             "row 8: padding length")
    yield _E((g, x, idx, [4, 2, -2], st, pad), ValueError, r"output_size elements must be > 0, got \[4, 2, -2\]",
             "row 9: output_size negative")
    yield _E((g, x, idx, ok, [0, 1, 1], pad), ValueError, r"stride elements must be > 0, got \[0, 1, 1\]",
             "row 9: stride 0")
    g_small = make_tensor((1, 2, 1, 2, 3), torch.float32, device)
    yield _E((g_small, x, idx, [1, 2, 3], st, pad), ValueError,
             r"prod\(output_size\) must be >= D\*H\*W of self, got output_size \[1, 2, 3\] \(6 elements\) "
             r"for self shape \[1, 2, 2, 2, 2\] \(8 elements per plane\)", "row 10: output volume < input volume")
    yield _E((g, x, idx, [2, 4, 2], st, pad), ValueError,
             r"grad_output's last three sizes must equal output_size \[2, 4, 2\], got grad_output shape "
             r"\[1, 2, 4, 2, 2\]", "row 11: grad_output D, H, W vs output_size")
    yield _E((g[0], x, idx, ok, st, pad), ValueError, r"grad_output must have self's rank 5, got 4-D",
             "row 12: grad_output rank differs")
    yield _E((g[:, 0].expand(2, -1, -1, -1), x[:, 0], idx[:, 0], ok, st, pad), ValueError,
             r"grad_output's N must equal self's N = 1, got grad_output shape \[2, 4, 2, 2\]",
             "row 13: 4-D N differs")
    yield _E((g.expand(3, -1, -1, -1, -1), x, idx, ok, st, pad), ValueError,
             r"grad_output's N, C must equal self's \[1, 2\], got grad_output shape \[3, 2, 4, 2, 2\]",
             "row 14: 5-D N differs")
    yield _E((g[:, :1], x, idx, ok, st, pad), ValueError,
             r"grad_output's N, C must equal self's \[1, 2\], got grad_output shape \[1, 1, 4, 2, 2\]",
             "row 14: 5-D C differs")
    yield _E((g, x, idx * 2, ok, st, pad), IndexError, r"indices\[0, 0, 1, 0, 0\] = 16 is outside \[0, 16\)",
             "row 15: index == prod(output_size)", data_dependent=True)
    neg = idx.clone()
    neg[0, 1, 0, 1, 1] = -5
    neg[0, 1, 1, 1, 1] = -6
    yield _E((g, x, make_layout(neg, "permuted"), ok, st, pad), IndexError,
             r"indices\[0, 1, 0, 1, 1\] = -5 is outside \[0, 16\)", "row 15: negative indices, permuted",
             data_dependent=True)
    yield _E((g, x, idx + 100, ok, st, pad), IndexError, r"indices\[0, 0, 0, 0, 0\] = 100 is outside \[0, 16\)",
             "row 15: out= variant", kwargs={gi: out}, overload=gi, data_dependent=True)


OP_INFOS = with_backward(
    OpInfo(name="max_unpool3d", family="max_unpool", dtypes=DTYPES, sample_inputs=_forward_samples,
           reference=reference_forward, error_inputs=_forward_errors, aten=torch.ops.aten.max_unpool3d.default),
    sample_inputs=_backward_samples, reference=reference_backward, error_inputs=_backward_errors, aten=aten_backward,
    out_contiguous_only=True)
