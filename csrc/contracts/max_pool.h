// The contract of the MaxPool3d family (docs/spec.md §9):
// max_pool3d_with_indices_backward (aclnnMaxPool3dWithArgmaxBackward), the
// gradient of a 3-D max pooling that returned its indices, and its forward
// max_pool3d_with_indices (aclnnMaxPool3dWithArgmax), whose rules are the
// backward's rows that apply to it (1 for self, 3 for self, 4, 5-9). Every
// backend (CPU, CUDA, Meta, and the NPU glue through Meta) validates with
// this header, and the kernels share its element rules (in_window,
// window_max).
//
//   row 1   grad_output, self, out: float32, float64, float16 or
//           bfloat16; indices: int32 or int64                     TypeError
//   row 2   self and out have grad_output's dtype                  TypeError
//   row 3   self is 4-D (N, D, H, W) or 5-D (N, C, D, H, W);
//           grad_output, indices and out have its rank             ValueError
//   row 4   every axis of self but N is > 0                        ValueError
//   row 5   kernel_size: 1 or 3 elements, each in [1, 2^31)        ValueError
//   row 6   stride: 0 (= kernel_size), 1 or 3 elements, each in
//           [1, 2^31)                                              ValueError
//   row 7   padding: 1 or 3 elements, each in [0, kernel_size/2]   ValueError
//   row 8   dilation: 1 or 3 elements, each in [1, 2^31)           ValueError
//   row 9   the pooled size (below) is >= 1 on every axis, and
//           every window has a tap inside self                     ValueError
//   row 10  grad_output and indices have the pooled shape:
//           self's N (and C), then the pooled (oD, oH, oW)         ValueError
//   row 11  out has self's shape                                   ValueError
//   row 12  every index lies in the window of its own output
//           position (kernels, not Meta)                           IndexError
//
// Pooled size per axis (aten's pooling_output_shape):
//   o = (in + 2*pad - dilation*(kernel-1) - 1 + (ceil_mode ? stride-1 : 0)) / stride + 1,
//   less one when ceil_mode and (o-1)*stride >= in + pad.
// Row 12 is stricter than aten, which scatters any index inside the plane:
// an index that max_pool3d cannot have produced is refused, so that every
// backend (a scatter on CPU, a gather over the covering windows on CUDA)
// computes the same sum from the same terms.
#pragma once

#include "common/contract.h"
#include "contracts/pool_common.h"
#include "common/deferred.h"

#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>
#include <c10/macros/Macros.h>

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

namespace torch_aclnn::max_pool {

constexpr const char* kForward = "max_pool3d_with_indices";
constexpr const char* kBackward = "max_pool3d_with_indices_backward";

using pooling::check_axes;
using pooling::check_self;
using pooling::result_format;
using pooling::Triple;

// indices' dtypes (row 1).
inline constexpr at::ScalarType kIndexDtypeList[] = {at::kLong, at::kInt};
inline constexpr DtypeSet kIndexDtypes{kIndexDtypeList, "int32 or int64"};

// The pooling's parameters, each expanded to (D, H, W).
struct Window {
  Triple kernel, stride, padding, dilation;
  bool ceil_mode;
};

// Rows 5-8.
inline Window check_window(const char* op, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                           at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  Window w;
  w.ceil_mode = ceil_mode;
  const pooling::KernelStridePadding ksp = pooling::check_kernel_stride_padding(op, kernel_size, stride, padding);
  w.kernel = ksp.kernel;
  w.stride = ksp.stride;
  w.padding = ksp.padding;
  w.dilation = pooling::positive(op, "dilation", dilation, "1 or 3");
  return w;
}

// Row 9: the pooled size of one axis of `in` elements (aten's
// pooling_output_shape), checked >= 1.
inline c10::SymInt pooled_size(const char* op, const c10::SymInt& in, const Window& w, int i,
                               c10::SymIntArrayRef self_sizes) {
  const int64_t k = w.kernel[i], s = w.stride[i], p = w.padding[i], d = w.dilation[i];
  const c10::SymInt o = pooling::pooled_size_of(op, in, k, s, p, d, w.ceil_mode, i, self_sizes);
  // Every window has a tap inside self. Only a window that starts in the
  // padding can miss: its dilation can step over self (aten then returns
  // -inf with an index that is not in the window, possibly outside the plane).
  for (int64_t q = 0; q * s < p && o > q; ++q) {
    const int64_t start = q * s - p;
    const int64_t first = start + (-start + d - 1) / d * d;  // the first tap >= 0
    ACLNN_CHECK_VALUE(first <= start + (k - 1) * d && in > first, op,
                      "every pooling window must have a tap inside self, got the window of output position ", q,
                      " on axis ", i, " (D, H, W), whose taps start at ", start, " with dilation ", d,
                      " and miss self's ", val(in), " positions (kernel_size ", k, ", padding ", p, ")");
  }
  return o;
}

// What the kernels need beyond the arguments.
struct Params {
  Window window;
};

using Plan = torch_aclnn::Plan<Params>;

// The pooled sizes of self (rows 9): self's N (and C), then (oD, oH, oW).
inline c10::SmallVector<c10::SymInt, 5> pooled_sizes(const char* op, const at::Tensor& self, const Window& w) {
  const auto s = self.sym_sizes();
  const int64_t d = self.dim() - 3;
  c10::SmallVector<c10::SymInt, 5> pooled(s.begin(), s.begin() + d);
  for (int i = 0; i < 3; ++i) pooled.push_back(pooled_size(op, s[d + i], w, i, s));
  return pooled;
}

// The forward's results: the pooled values (self's dtype) and their indices
// (int64), both of the pooled shape in result_format(self).
inline Plan2<Params> check_forward(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                   at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  const char* op = kForward;
  const c10::Device device = one_device(op, {{"self", self}});
  check_dtype(op, "self", self.scalar_type());
  check_self(op, self);
  check_axes(op, self);
  const Window w = check_window(op, kernel_size, stride, padding, dilation, ceil_mode);
  Result r;
  r.sizes = pooled_sizes(op, self, w);
  r.dtype = self.scalar_type();
  r.device = device;
  r.format = result_format(self);
  Result indices = r;
  indices.dtype = at::kLong;
  return {r, indices, {w}};
}

// The result: self's shape, in self's memory format (channels_last_3d when
// self is 5-D and channels_last_3d, else contiguous). out: grad_input of the
// out= overload (any layout: written through a temporary unless it is dense
// and shares no memory with grad_output or indices).
inline Plan check_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices,
                           at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding,
                           at::IntArrayRef dilation, bool ceil_mode, Out out = {}) {
  const char* op = kBackward;
  const at::Tensor& grad_input = out.tensor;
  const c10::Device device =
      one_device(op, {{"grad_output", grad_output}, {"self", self}, {"indices", indices}}, grad_input);
  // Rows 1 and 2.
  pooling::check_backward_dtypes(op, grad_output, self, grad_input, kFloating, {&indices, &kIndexDtypes});
  // Row 3.
  check_self(op, self);
  const auto same_rank = [&](const char* name, const at::Tensor& t) { pooling::check_same_rank(op, name, t, self); };
  same_rank("grad_output", grad_output);
  same_rank("indices", indices);
  if (grad_input.defined()) same_rank("grad_input", grad_input);
  // Row 4.
  check_axes(op, self);
  // Rows 5-8.
  const Window w = check_window(op, kernel_size, stride, padding, dilation, ceil_mode);
  // Rows 9-10.
  const auto pooled = pooled_sizes(op, self, w);
  const c10::SymIntArrayRef expected(pooled);
  ACLNN_CHECK_VALUE(grad_output.sym_sizes() == expected, op, "grad_output must have the pooled shape ",
                    fmt_list(expected), ", got ", fmt_list(grad_output.sym_sizes()));
  ACLNN_CHECK_VALUE(indices.sym_sizes() == expected, op, "indices must have the pooled shape ",
                    fmt_list(expected), ", got ", fmt_list(indices.sym_sizes()));
  // Row 11.
  return {pooling::grad_input_result(op, grad_output, self, grad_input, device, &indices), {w}};
}

// ---------------------------------------------------------------------------
// Shared by the CPU and CUDA kernels: a tensor of shape (N, [C,] D, H, W) as
// N x C planes of S = D*H*W elements (C = 1 for 4-D input), pooled into
// planes of oS = oD*oH*oW elements.

using pooling::Geometry;

// self and a tensor of the pooled shape (grad_output, or the forward's result).
inline Geometry geometry(const at::Tensor& self, const at::Tensor& pooled) {
  return pooling::geometry(self, pooled.sizes().slice(pooled.dim() - 3));
}

// Row 12's IndexError, raised by the kernels (CPU and CUDA alike) for the
// first bad index in logical (n, c, o) order: indices[n][c][o] = value
// (o the flat pooled position in oD*oH*oW; c = 0 for a 4-D call) is not a
// position of that output's pooling window. S = D*H*W of self. later:
// raised after the call returned (CUDA, common/deferred.h).
inline void fail_not_in_window(int64_t value, int64_t n, int64_t c, int64_t o, bool five, int64_t S, int64_t oH,
                               int64_t oW, const Window& w, bool later = false) {
  const int64_t od = o / (oH * oW), oh = (o / oW) % oH, ow = o % oW;
  std::vector<int64_t> where = {n};
  if (five) where.push_back(c);
  where.insert(where.end(), {od, oh, ow});
  const std::vector<int64_t> start = {od * w.stride[0] - w.padding[0], oh * w.stride[1] - w.padding[1],
                                      ow * w.stride[2] - w.padding[2]};
  ACLNN_CHECK_INDEX(false, deferred::op_name(kBackward, later), "indices", fmt_list(where), " = ", value,
                    " is not a position of that output's pooling window (self's D*H*W = ", S,
                    "; the window starts at (D, H, W) ", fmt_list(start), " with kernel_size ", fmt_list(w.kernel),
                    " and dilation ", fmt_list(w.dilation), ")");
}

// Whether no input position lies in two windows (stride >= the dilated
// kernel on every axis): each position then gets at most one term.
inline bool disjoint_windows(const Window& w) {
  for (int i = 0; i < 3; ++i) {
    if (w.stride[i] < w.dilation[i] * (w.kernel[i] - 1) + 1) return false;
  }
  return true;
}

// Row 12 on one axis, for the kernels: input position x (0-based, padding
// excluded) is a tap of the window of pooled position o.
template <typename index_t>
C10_HOST_DEVICE inline bool in_window(index_t x, index_t o, index_t kernel, index_t stride, index_t padding,
                                      index_t dilation) {
  const index_t t = x - (o * stride - padding);
  if (dilation == 1) return t >= 0 && t < kernel;  // (no division: the common case)
  return t >= 0 && t % dilation == 0 && t / dilation < kernel;
}

// On one axis of length size, the taps of a window that starts at start
// (o * stride - padding) that lie inside self: tap numbers [lo, hi) of the
// kernel's k (empty where hi <= lo). No division for dilation 1.
template <typename index_t>
C10_HOST_DEVICE inline void tap_range(index_t start, index_t size, index_t k, index_t dilation, index_t& lo,
                                      index_t& hi) {
  lo = start >= 0 ? 0 : dilation == 1 ? -start : (-start + dilation - 1) / dilation;
  const index_t room = size - 1 - start;  // the last position the axis has, from the start
  const index_t taps = room < 0 ? 0 : (dilation == 1 ? room : room / dilation) + 1;
  hi = taps < k ? taps : k;
}

// The forward's element rule (aten's, on every device): the maximum of the
// window's taps inside self, visited in increasing (d, h, w); a NaN wins
// over any number and a later NaN over an earlier one; where no tap exceeds
// -inf, the first tap's position. at(k) reads tap k (a flat (D, H, W)
// position) in the compute type A. Returns (value, flat position); only the
// taps inside self are visited (so a window's cost does not grow with the
// part of it that lies outside), and the contract ensures there is one.
template <typename A, typename index_t, typename At>
C10_HOST_DEVICE inline void window_max(At at, index_t od, index_t oh, index_t ow, index_t D, index_t H, index_t W,
                                       const index_t (&k)[3], const index_t (&s)[3], const index_t (&p)[3],
                                       const index_t (&dil)[3], A& max_value, index_t& max_index) {
  const index_t d0 = od * s[0] - p[0], h0 = oh * s[1] - p[1], w0 = ow * s[2] - p[2];
  index_t lo[3], hi[3];  // per axis, the taps inside self: [lo, hi)
  tap_range<index_t>(d0, D, k[0], dil[0], lo[0], hi[0]);
  tap_range<index_t>(h0, H, k[1], dil[1], lo[1], hi[1]);
  tap_range<index_t>(w0, W, k[2], dil[2], lo[2], hi[2]);
  max_value = -std::numeric_limits<A>::infinity();
  max_index = -1;
  for (index_t i = lo[0]; i < hi[0]; ++i) {
    const index_t d = d0 + i * dil[0];
    for (index_t j = lo[1]; j < hi[1]; ++j) {
      const index_t h = h0 + j * dil[1];
      for (index_t l = lo[2]; l < hi[2]; ++l) {
        const index_t w = w0 + l * dil[2];
        const index_t pos = (d * H + h) * W + w;
        const A v = at(pos);
        if (max_index < 0) max_index = pos;
        if (v > max_value || v != v) {
          max_value = v;
          max_index = pos;
        }
      }
    }
  }
}

}  // namespace torch_aclnn::max_pool
