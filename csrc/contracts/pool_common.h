// The argument rules shared by the 3-D pooling families (docs/spec.md §9
// max_pool, §12 avg_pool; some also §5 max_unpool, §13 adaptive_avg_pool):
// self's rank and axes, the kernel_size / stride / padding lists (each 1 or
// 3 elements, stride also empty) expanded to (D, H, W), the pooled size
// with ceil_mode, a backward's dtype rows and result, and the plane
// geometry of the max_pool and max_unpool kernels. Each family numbers
// these rows in its own contract; the messages are the same.
//
// Pooled size per axis (aten's pooling_output_shape):
//   o = (in + 2*pad - dilation*(kernel-1) - 1 + (ceil_mode ? stride-1 : 0)) / stride + 1,
//   less one when ceil_mode and (o-1)*stride >= in + pad (the last window
//   must start inside self or its left padding).
#pragma once

#include "common/contract.h"

#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <array>
#include <cstdint>
#include <limits>

namespace torch_aclnn::pooling {

using Triple = std::array<int64_t, 3>;

// The largest kernel, stride or dilation element (aten's limit too: its sizes are int).
constexpr int64_t kMaxElement = std::numeric_limits<int32_t>::max();

// A list of 1 or 3 elements (or, with `empty`, 0: that value) as 3 elements.
inline Triple expand(const char* op, const char* arg, at::IntArrayRef v, const char* lengths,
                     const Triple* empty = nullptr) {
  ACLNN_CHECK_VALUE(v.size() == 1 || v.size() == 3 || (empty != nullptr && v.empty()), op, arg, " must have ",
                    lengths, " elements, got ", v.size(), " (", fmt_list(v), ")");
  if (v.empty()) return *empty;
  return v.size() == 1 ? Triple{v[0], v[0], v[0]} : Triple{v[0], v[1], v[2]};
}

// A list of 1 or 3 elements in [1, 2^31) (stride: also 0 elements, = empty).
inline Triple positive(const char* op, const char* arg, at::IntArrayRef v, const char* lengths,
                       const Triple* empty = nullptr) {
  const Triple t = expand(op, arg, v, lengths, empty);
  for (int64_t e : t) {
    ACLNN_CHECK_VALUE(e > 0, op, arg, " elements must be > 0, got ", fmt_list(v));
    ACLNN_CHECK_VALUE(e <= kMaxElement, op, arg, " elements must be < 2^31, got ", fmt_list(v));
  }
  return t;
}

// kernel_size, stride and padding (padding in [0, kernel_size / 2] per axis).
struct KernelStridePadding {
  Triple kernel, stride, padding;
};

inline KernelStridePadding check_kernel_stride_padding(const char* op, at::IntArrayRef kernel_size,
                                                       at::IntArrayRef stride, at::IntArrayRef padding) {
  KernelStridePadding w;
  w.kernel = positive(op, "kernel_size", kernel_size, "1 or 3");
  w.stride = positive(op, "stride", stride, "0, 1 or 3", &w.kernel);
  w.padding = expand(op, "padding", padding, "1 or 3");
  for (size_t i = 0; i < 3; ++i) {
    ACLNN_CHECK_VALUE(w.padding[i] >= 0 && w.padding[i] <= w.kernel[i] / 2, op,
                      "padding elements must be in [0, kernel_size / 2], got padding ", fmt_list(padding),
                      " for kernel_size ", fmt_list(kernel_size));
  }
  return w;
}

// The pooled size of one axis of `in` elements (axis i of (D, H, W)),
// checked >= 1 (dilation 1 for the families without one).
inline c10::SymInt pooled_size_of(const char* op, const c10::SymInt& in, int64_t k, int64_t s, int64_t p,
                                  int64_t d, bool ceil_mode, int i, c10::SymIntArrayRef self_sizes) {
  const c10::SymInt span = in + 2 * p - d * (k - 1) - 1;
  // (span + (ceil ? s - 1 : 0)) / s + 1 >= 1 needs span >= 0 when not ceil,
  // span + s - 1 >= 0 when ceil; truncating division is floor division then.
  const c10::SymInt top = span + (ceil_mode ? s - 1 : 0);
  ACLNN_CHECK_VALUE(top >= 0, op, "the pooled size must be >= 1 on every axis, got self shape ",
                    fmt_list(self_sizes), " too small for kernel_size ", k, ", dilation ", d, " and padding ", p,
                    " on axis ", i, " (D, H, W)");
  c10::SymInt o = top / s + 1;
  if (ceil_mode && (o - 1) * s >= in + p) o = o - 1;
  ACLNN_CHECK_VALUE(o >= 1, op, "the pooled size must be >= 1 on every axis, got ", val(o), " on axis ", i,
                    " (D, H, W) for self shape ", fmt_list(self_sizes));
  return o;
}

// self is 4-D or 5-D.
inline void check_self(const char* op, const at::Tensor& self) {
  const auto s = self.sym_sizes();
  ACLNN_CHECK_VALUE(self.dim() == 4 || self.dim() == 5, op,
                    "self must be 4-D (N, D, H, W) or 5-D (N, C, D, H, W), got ", self.dim(), "-D with shape ",
                    fmt_list(s));
}

// Every axis of self but the first is > 0.
inline void check_axes(const char* op, const at::Tensor& self) {
  const auto s = self.sym_sizes();
  for (int64_t i = 1; i < self.dim(); ++i) {
    ACLNN_CHECK_VALUE(s[i] > 0, op, "every axis of self but N must be > 0, got shape ", fmt_list(s), " (axis ", i,
                      " is ", val(s[i]), ")");
  }
}

// t has self's rank.
inline void check_same_rank(const char* op, const char* name, const at::Tensor& t, const at::Tensor& self) {
  ACLNN_CHECK_VALUE(t.dim() == self.dim(), op, name, " must have self's rank ", self.dim(), ", got ", t.dim(),
                    "-D with shape ", fmt_list(t.sym_sizes()));
}

// The memory format of the pooling operators' results: self's
// (channels_last_3d when self is 5-D and channels_last_3d, else contiguous).
inline c10::MemoryFormat result_format(const at::Tensor& self) {
  return self.dim() == 5 && self.suggest_memory_format() == c10::MemoryFormat::ChannelsLast3d
             ? c10::MemoryFormat::ChannelsLast3d
             : c10::MemoryFormat::Contiguous;
}

// A backward's index tensor and its dtypes.
struct Indices {
  const at::Tensor* tensor = nullptr;
  const DtypeSet* dtypes = nullptr;
};

// A backward's dtype rows: grad_output, self, indices (when the operator
// has them) and grad_input (the out= tensor, when given) have dtypes of
// their sets, in that order; then self and grad_input have grad_output's
// dtype.
inline void check_backward_dtypes(const char* op, const at::Tensor& grad_output, const at::Tensor& self,
                                  const at::Tensor& grad_input, const DtypeSet& dtypes = kFloating,
                                  Indices indices = {}) {
  check_dtype(op, "grad_output", grad_output.scalar_type(), dtypes);
  check_dtype(op, "self", self.scalar_type(), dtypes);
  if (indices.tensor != nullptr) check_dtype(op, "indices", indices.tensor->scalar_type(), *indices.dtypes);
  if (grad_input.defined()) check_dtype(op, "grad_input", grad_input.scalar_type(), dtypes);
  ACLNN_CHECK_TYPE(self.scalar_type() == grad_output.scalar_type(), op, "self must have grad_output's dtype ",
                   grad_output.scalar_type(), ", got ", self.scalar_type());
  if (grad_input.defined()) {
    ACLNN_CHECK_TYPE(grad_input.scalar_type() == grad_output.scalar_type(), op,
                     "grad_input must have grad_output's dtype ", grad_output.scalar_type(), ", got ",
                     grad_input.scalar_type());
  }
}

// The kernels' view of max_pool and max_unpool calls: self, of shape
// (N, [C,] D, H, W), as N x C planes of S = D*H*W elements (C = 1 for 4-D),
// and the pooled (max_pool) or unpooled (max_unpool) planes of
// oS = oD*oH*oW elements.
struct Geometry {
  int64_t N, C, D, H, W, S, oD, oH, oW, oS;
  bool five;
};

// self and the other planes' (oD, oH, oW).
inline Geometry geometry(const at::Tensor& self, at::IntArrayRef other) {
  Geometry g;
  g.five = self.dim() == 5;
  const int64_t d = self.dim() - 3;
  g.N = self.size(0);
  g.C = g.five ? self.size(1) : 1;
  g.D = self.size(d);
  g.H = self.size(d + 1);
  g.W = self.size(d + 2);
  g.S = g.D * g.H * g.W;
  g.oD = other[0];
  g.oH = other[1];
  g.oW = other[2];
  g.oS = g.oD * g.oH * g.oW;
  return g;
}

// A backward's last row and its result: grad_input (the out= tensor), when
// given, has self's shape; the result has self's shape, grad_output's dtype
// and result_format(self), on `device`; an out= tensor is written directly
// when it is dense and shares no memory with grad_output (nor indices, when
// given).
inline Result grad_input_result(const char* op, const at::Tensor& grad_output, const at::Tensor& self,
                                const at::Tensor& grad_input, c10::Device device,
                                const at::Tensor* indices = nullptr) {
  const auto s = self.sym_sizes();
  if (grad_input.defined()) {
    ACLNN_CHECK_VALUE(grad_input.sym_sizes() == s, op, "grad_input must have self's shape ", fmt_list(s),
                      ", got ", fmt_list(grad_input.sym_sizes()));
  }
  Result r = Result::grad_input(s, grad_output, device, result_format(self));
  if (indices != nullptr) r.reads.push_back(indices);
  return r;
}

}  // namespace torch_aclnn::pooling
