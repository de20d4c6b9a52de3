// The contract of the AvgPool3d family (docs/spec.md §12):
// avg_pool3d_backward (aclnnAvgPool3dBackward), the gradient of a 3-D
// average pooling, and its forward avg_pool3d (aclnnAvgPool3d), whose rules
// are the backward's rows that apply to it (1 for self, 3 for self, 4, 5-9).
// Every backend (CPU, CUDA, Meta, and the NPU glue through Meta) validates
// with this header, and the kernels share its element rule (axis_window:
// a window's extent and its divisor's factor on one axis).
//
//   row 1   grad_output, self, out: float32, float64, float16 or
//           bfloat16                                               TypeError
//   row 2   self and out have grad_output's dtype                  TypeError
//   row 3   self is 4-D or 5-D; grad_output and out have its rank  ValueError
//   row 4   every axis of self but the first is > 0                ValueError
//   row 5   kernel_size: 1 or 3 elements, each in [1, 2^31)        ValueError
//   row 6   stride: 0 (= kernel_size), 1 or 3 elements, each in
//           [1, 2^31)                                              ValueError
//   row 7   padding: 1 or 3 elements, each in [0, kernel_size/2]   ValueError
//   row 8   divisor_override: None or != 0                         ValueError
//   row 9   kernel_size <= self's size and the pooled size >= 1
//           on every axis                                          ValueError
//   row 10  grad_output has the pooled shape                       ValueError
//   row 11  out has self's shape                                   ValueError
//
// Rows 3-7 and 9 are max_pool's (contracts/pool_common.h), without
// dilation. With padding <= kernel_size / 2 and the ceil_mode rule (the
// last window starts inside self or its left padding), every window has at
// least one tap inside self.
#pragma once

#include "common/contract.h"
#include "contracts/pool_common.h"

#include <c10/macros/Macros.h>

#include <cstdint>
#include <optional>

namespace torch_aclnn::avg_pool {

constexpr const char* kForward = "avg_pool3d";
constexpr const char* kBackward = "avg_pool3d_backward";

using pooling::Triple;

// The pooling's parameters, each expanded to (D, H, W); divisor 0: none
// given (the window's own count).
struct Window {
  Triple kernel, stride, padding;
  bool ceil_mode, count_include_pad;
  int64_t divisor;
};

// Rows 5-8.
inline Window check_window(const char* op, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                           at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override) {
  const pooling::KernelStridePadding ksp = pooling::check_kernel_stride_padding(op, kernel_size, stride, padding);
  ACLNN_CHECK_VALUE(!divisor_override.has_value() || *divisor_override != 0, op,
                    "divisor_override must be None or nonzero, got 0");
  return {ksp.kernel, ksp.stride, ksp.padding, ceil_mode, count_include_pad, divisor_override.value_or(0)};
}

// Row 9: self's leading axes, then the pooled (oD, oH, oW). A window
// larger than self is refused even where the padding would make room (aten
// and aclnnAvgPool3d's document both refuse it).
inline c10::SmallVector<c10::SymInt, 5> pooled_sizes(const char* op, const at::Tensor& self, const Window& w) {
  const auto s = self.sym_sizes();
  const int64_t d = self.dim() - 3;
  c10::SmallVector<c10::SymInt, 5> pooled(s.begin(), s.begin() + d);
  for (int i = 0; i < 3; ++i) {
    ACLNN_CHECK_VALUE(s[d + i] >= w.kernel[i], op, "kernel_size must be <= self's size on every axis, got ",
                      "kernel_size ", fmt_list(w.kernel), " for self shape ", fmt_list(s), " (axis ", i,
                      " (D, H, W))");
    pooled.push_back(
        pooling::pooled_size_of(op, s[d + i], w.kernel[i], w.stride[i], w.padding[i], 1, w.ceil_mode, i, s));
  }
  return pooled;
}

// What the kernels need beyond the arguments.
struct Params {
  Window window;
};

using Plan = torch_aclnn::Plan<Params>;

// The result: the pooled shape, self's dtype, in self's memory format.
inline Plan check_forward(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                          at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                          std::optional<int64_t> divisor_override) {
  const char* op = kForward;
  const c10::Device device = one_device(op, {{"self", self}});
  check_dtype(op, "self", self.scalar_type());
  pooling::check_self(op, self);
  pooling::check_axes(op, self);
  const Window w = check_window(op, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  Result r;
  r.sizes = pooled_sizes(op, self, w);
  r.dtype = self.scalar_type();
  r.device = device;
  r.format = pooling::result_format(self);
  return {r, {w}};
}

// The result: self's shape, in self's memory format. out: grad_input of the
// out= overload (any layout: written through a temporary unless it is dense
// and shares no memory with grad_output).
inline Plan check_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
                           at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, Out out = {}) {
  const char* op = kBackward;
  const at::Tensor& grad_input = out.tensor;
  const c10::Device device = one_device(op, {{"grad_output", grad_output}, {"self", self}}, grad_input);
  // Rows 1 and 2.
  pooling::check_backward_dtypes(op, grad_output, self, grad_input);
  // Row 3.
  pooling::check_self(op, self);
  pooling::check_same_rank(op, "grad_output", grad_output, self);
  if (grad_input.defined()) pooling::check_same_rank(op, "grad_input", grad_input, self);
  // Row 4.
  pooling::check_axes(op, self);
  // Rows 5-8.
  const Window w = check_window(op, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  // Rows 9-10.
  const auto pooled = pooled_sizes(op, self, w);
  const c10::SymIntArrayRef expected(pooled);
  ACLNN_CHECK_VALUE(grad_output.sym_sizes() == expected, op, "grad_output must have the pooled shape ",
                    fmt_list(expected), ", got ", fmt_list(grad_output.sym_sizes()));
  // Row 11.
  return {pooling::grad_input_result(op, grad_output, self, grad_input, device), {w}};
}

// ---------------------------------------------------------------------------
// The element rule, shared by the CPU and CUDA kernels (aten's): on one axis
// of `size` positions, pooled position o's window starts at o*stride - pad
// and ends at min(start + kernel, size + pad); its taps inside self are
// [lo, hi) = [max(start, 0), min(end, size)); its factor of the divisor is
// end - start with count_include_pad, else hi - lo. The divisor of a window
// is the product of its three factors, or divisor_override when given.
template <typename index_t>
C10_HOST_DEVICE inline void axis_window(index_t o, index_t size, index_t kernel, index_t stride, index_t pad,
                                        bool count_include_pad, index_t& lo, index_t& hi, index_t& factor) {
  const index_t start = o * stride - pad;
  const index_t end = start + kernel < size + pad ? start + kernel : size + pad;
  lo = start > 0 ? start : 0;
  hi = end < size ? end : size;
  factor = count_include_pad ? end - start : hi - lo;
}

// On one axis, the pooled positions whose windows cover input position x:
// [first, last] (empty where last < first), among `pooled` positions.
template <typename index_t>
C10_HOST_DEVICE inline void covering(index_t x, index_t pooled, index_t kernel, index_t stride, index_t pad,
                                     index_t& first, index_t& last) {
  // o*stride - pad <= x < o*stride - pad + kernel
  const index_t t = x + pad - kernel + 1;  // o*stride >= t
  first = t <= 0 ? 0 : (t + stride - 1) / stride;
  last = (x + pad) / stride;
  if (last > pooled - 1) last = pooled - 1;
}

}  // namespace torch_aclnn::avg_pool
