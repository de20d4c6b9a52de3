// The contract of the AdaptiveAvgPool3d family (docs/spec.md §13):
// adaptive_avg_pool3d_backward (aclnnAdaptiveAvgPool3dBackward), the gradient
// of a 3-D adaptive average pooling, and its forward adaptive_avg_pool3d
// (aclnnAdaptiveAvgPool3d), checked by rows 1-4 for self and rows 7-8. Every
// backend (CPU, CUDA, Meta, and the NPU glue through Meta) validates with this
// header, and the kernels share its window rule (window).
//
//   row 1   grad_output, self, out: float32, float64, float16 or
//           bfloat16                                               TypeError
//   row 2   self and out have grad_output's dtype                  TypeError
//   row 3   self is 4-D (C, D, H, W) or 5-D (N, C, D, H, W);
//           grad_output and out have its rank                      ValueError
//   row 4   every axis of self but the first is > 0                ValueError
//   row 5   grad_output has self's leading axes (N, C; 4-D: C)
//           and D, H, W > 0 (the pooled size)                      ValueError
//   row 6   out has self's shape                                   ValueError
//   row 7   output_size: 3 elements, each > 0 (forward)            ValueError
//   row 8   each axis's in * out fits in int64, and (forward) the
//           result's byte size                                     ValueError
//
// Windows (aten's start_index / end_index): on an axis of `in` positions
// pooled to `out`, output i pools [floor(i*in/out), ceil((i+1)*in/out)).
#pragma once

#include "common/contract.h"
#include "contracts/pool_common.h"

#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>
#include <c10/macros/Macros.h>

#include <cstdint>

namespace torch_aclnn::adaptive_avg_pool {

constexpr const char* kForward = "adaptive_avg_pool3d";
constexpr const char* kBackward = "adaptive_avg_pool3d_backward";

// Rows 3 and 4 for self.
inline void check_self(const char* op, const at::Tensor& self) {
  const auto s = self.sym_sizes();
  ACLNN_CHECK_VALUE(self.dim() == 4 || self.dim() == 5, op,
                    "self must be 4-D (C, D, H, W) or 5-D (N, C, D, H, W), got ", self.dim(), "-D with shape ",
                    fmt_list(s));
  for (int64_t i = 1; i < self.dim(); ++i) {
    ACLNN_CHECK_VALUE(s[i] > 0, op, "every axis of self but the first must be > 0, got shape ", fmt_list(s),
                      " (axis ", i, " is ", val(s[i]), ")");
  }
}

// The memory format of both operators' results: self's (channels_last_3d
// when self is 5-D and channels_last_3d, else contiguous).
using pooling::result_format;

// Row 8: the window arithmetic multiplies an axis's input and output sizes
// (checked where both are concrete).
inline void check_products(const char* op, c10::SymIntArrayRef in, c10::SymIntArrayRef out, const char* name) {
  for (size_t i = 0; i < 3; ++i) {
    const auto a = in[i].maybe_as_int();
    const auto b = out[i].maybe_as_int();
    int64_t product = 0;
    ACLNN_CHECK_VALUE(!a || !b || !__builtin_mul_overflow(*a, *b, &product), op, name, " ", fmt_list(out),
                      " times self's size ", val(in[i]), " on axis ", i, " (D, H, W) overflows int64");
  }
}

using Plan = torch_aclnn::Plan<>;

// The forward's result: self's leading axes, then output_size, in
// result_format(self).
inline Plan check_forward(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  const char* op = kForward;
  const c10::Device device = one_device(op, {{"self", self}});
  check_dtype(op, "self", self.scalar_type());
  check_self(op, self);
  // Row 7.
  ACLNN_CHECK_VALUE(output_size.size() == 3, op, "output_size must have 3 elements (D, H, W), got ",
                    output_size.size(), " (", fmt_list(output_size), ")");
  for (size_t i = 0; i < 3; ++i) {
    ACLNN_CHECK_VALUE(output_size[i] > 0, op, "output_size elements must be > 0, got ", fmt_list(output_size));
  }
  const auto s = self.sym_sizes();
  const int64_t lead = self.dim() - 3;
  Result r;
  r.sizes.assign(s.begin(), s.begin() + lead);
  for (size_t i = 0; i < 3; ++i) r.sizes.push_back(output_size[i]);
  check_products(op, s.slice(lead), output_size, "output_size");
  check_fits_int64(op, "the result", r.sizes, c10::elementSize(self.scalar_type()));
  r.dtype = self.scalar_type();
  r.device = device;
  r.format = result_format(self);
  return {r};
}

// The result: self's shape in result_format(self). out: grad_input of the
// out= overload (any layout: written through a temporary unless it is dense
// and shares no memory with grad_output).
inline Plan check_backward(const at::Tensor& grad_output, const at::Tensor& self, Out out = {}) {
  const char* op = kBackward;
  const at::Tensor& grad_input = out.tensor;
  const c10::Device device = one_device(op, {{"grad_output", grad_output}, {"self", self}}, grad_input);
  // Rows 1 and 2.
  pooling::check_backward_dtypes(op, grad_output, self, grad_input);
  // Rows 3 and 4.
  check_self(op, self);
  pooling::check_same_rank(op, "grad_output", grad_output, self);
  if (grad_input.defined()) pooling::check_same_rank(op, "grad_input", grad_input, self);
  // Row 5.
  const auto s = self.sym_sizes();
  const auto g = grad_output.sym_sizes();
  const int64_t lead = self.dim() - 3;
  for (int64_t i = 0; i < lead; ++i) {
    ACLNN_CHECK_VALUE(g[i] == s[i], op, "grad_output must have self's leading axes ",
                      fmt_list(s.slice(0, lead)), lead == 2 ? " (N, C)" : " (C)", ", got grad_output shape ",
                      fmt_list(g), " for self shape ", fmt_list(s));
  }
  for (int64_t i = lead; i < self.dim(); ++i) {
    ACLNN_CHECK_VALUE(g[i] > 0, op, "grad_output's D, H, W must be > 0, got shape ", fmt_list(g));
  }
  check_products(op, s.slice(lead), g.slice(lead), "grad_output's D, H, W");
  // Row 6.
  return {pooling::grad_input_result(op, grad_output, self, grad_input, device)};
}

// ---------------------------------------------------------------------------
// Shared by the CPU and CUDA kernels.

// The window of output position i on an axis of `in` positions pooled to
// `out`: [start, end), floor(i*in/out) to ceil((i+1)*in/out), in integers
// (in*out fits in int64: row 8).
template <typename index_t>
C10_HOST_DEVICE inline index_t window_start(index_t i, index_t in, index_t out) {
  return (i / out) * in + ((i % out) * in) / out;
}
template <typename index_t>
C10_HOST_DEVICE inline index_t window_end(index_t i, index_t in, index_t out) {
  return 1 + ((i + 1) * in - 1) / out;
}

// The output positions whose windows contain input position x: [lo, hi)
// (the windows' starts and ends both grow with i).
template <typename index_t>
C10_HOST_DEVICE inline void covering(index_t x, index_t in, index_t out, index_t& lo, index_t& hi) {
  // lo: the first i with end(i) > x, i.e. (i+1)*in > x*out: i = floor(x*out/in).
  lo = (x * out) / in;
  // hi: the first i with start(i) > x, i.e. i*in >= (x+1)*out: i = ceil((x+1)*out/in).
  hi = ((x + 1) * out - 1) / in + 1;
}

}  // namespace torch_aclnn::adaptive_avg_pool
