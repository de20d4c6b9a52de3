// The contract of the MaxUnpool3d family (docs/spec.md §5): max_unpool3d_backward
// (aclnnMaxUnpool3dBackward, the document's 14 contract errors plus the index
// rule) and the forward max_unpool3d, whose rules are derived from the
// backward's. Every backend (CPU, CUDA, Meta) validates with this header.
//
// The forward's contract (the backward's rows that apply to it):
//   row 2   self: one of the nine dtypes below; indices: int64      TypeError
//   row 4   self is 4-D (N, D, H, W) or 5-D (N, C, D, H, W)         ValueError
//   row 5,6 indices has self's rank and shape                        ValueError
//   row 7   every axis of self but N is > 0                          ValueError
//   row 8   output_size, stride, padding have 3 elements             ValueError
//   row 9   output_size and stride elements are > 0                  ValueError
//   row 10  prod(output_size) >= D*H*W of self                       ValueError
//   row 15  every index is in [0, oD*oH*oW)   (kernels, not Meta)   IndexError
// Row 10 is stricter than aten (which accepts e.g. the unpool of a
// kernel 2, stride 1, padding 1 pooling): the forward keeps it so that a
// forward that succeeds always has a backward that does too. padding is
// validated for its length only, as in the spec and aten; it is not used by
// either computation.
#pragma once

#include "common/contract.h"
#include "contracts/pool_common.h"
#include "common/planes.h"

#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

namespace torch_aclnn::max_unpool {

constexpr const char* kForward = "max_unpool3d";
constexpr const char* kBackward = "max_unpool3d_backward";

// grad_output / self / out: the aclnn list (FLOAT, FLOAT16, INT16, INT32,
// INT64, INT8, UINT8, DOUBLE) plus BFLOAT16 on CPU/CUDA.
inline constexpr at::ScalarType kValueDtypeList[] = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar,
                                                     at::kByte,  at::kShort,  at::kInt,  at::kLong};
inline constexpr DtypeSet kValueDtypes{
    kValueDtypeList, "float32, float64, float16, bfloat16, int8, uint8, int16, int32 or int64"};

// indices: int64.
inline constexpr at::ScalarType kIndexDtypeList[] = {at::kLong};
inline constexpr DtypeSet kIndexDtypes{kIndexDtypeList, "int64"};

// The memory format results are produced in: channels_last_3d when the
// reference tensor is 5-D and channels_last_3d, contiguous otherwise.
using pooling::result_format;

// Rows 4-7 for self and indices (and out, when given): rank, shapes, sizes.
inline void check_self(const char* op, const at::Tensor& self, const at::Tensor& indices,
                       const at::Tensor& out = at::Tensor()) {
  pooling::check_self(op, self);
  pooling::check_same_rank(op, "indices", indices, self);
  if (out.defined()) pooling::check_same_rank(op, "grad_input", out, self);
  const auto s = self.sym_sizes();
  ACLNN_CHECK_VALUE(indices.sym_sizes() == s, op, "indices must have self's shape ", fmt_list(s), ", got ",
                    fmt_list(indices.sym_sizes()));
  if (out.defined()) {
    ACLNN_CHECK_VALUE(out.sym_sizes() == s, op, "grad_input must have self's shape ", fmt_list(s), ", got ",
                      fmt_list(out.sym_sizes()));
  }
  pooling::check_axes(op, self);
}

// Rows 8-9: output_size, stride and padding each have 3 elements;
// output_size and stride elements are > 0.
inline void check_lists(const char* op, c10::SymIntArrayRef output_size, at::IntArrayRef stride,
                        at::IntArrayRef padding) {
  ACLNN_CHECK_VALUE(output_size.size() == 3, op, "output_size must have 3 elements (D, H, W), got ",
                    output_size.size(), " (", fmt_list(output_size), ")");
  ACLNN_CHECK_VALUE(stride.size() == 3, op, "stride must have 3 elements (D, H, W), got ", stride.size(), " (",
                    fmt_list(stride), ")");
  ACLNN_CHECK_VALUE(padding.size() == 3, op, "padding must have 3 elements (D, H, W), got ", padding.size(),
                    " (", fmt_list(padding), ")");
  for (size_t i = 0; i < 3; ++i) {
    ACLNN_CHECK_VALUE(output_size[i] > 0, op, "output_size elements must be > 0, got ", fmt_list(output_size));
  }
  for (size_t i = 0; i < 3; ++i) {
    ACLNN_CHECK_VALUE(stride[i] > 0, op, "stride elements must be > 0, got ", fmt_list(stride));
  }
}

// Row 10: the pooled tensor cannot have more elements per plane than the
// volume it unpools into.
inline void check_volume(const char* op, const at::Tensor& self, c10::SymIntArrayRef output_size) {
  // The product itself must fit in int64 (checked where the sizes are
  // concrete; 2^21 per axis would wrap to -2^63).
  int64_t prod = 1;
  for (const c10::SymInt& e : output_size) {
    const auto v = e.maybe_as_int();
    if (!v) break;
    ACLNN_CHECK_VALUE(!__builtin_mul_overflow(prod, *v, &prod), op,
                      "prod(output_size) overflows int64, got output_size ", fmt_list(output_size));
  }
  const auto s = self.sym_sizes();
  const int64_t d = self.dim() - 3;
  const c10::SymInt in_volume = s[d] * s[d + 1] * s[d + 2];
  const c10::SymInt out_volume = output_size[0] * output_size[1] * output_size[2];
  ACLNN_CHECK_VALUE(out_volume >= in_volume, op, "prod(output_size) must be >= D*H*W of self, got output_size ",
                    fmt_list(output_size), " (", val(out_volume), " elements) for self shape ", fmt_list(s),
                    " (", val(in_volume), " elements per plane)");
}

using Plan = torch_aclnn::Plan<>;

// The result: self's leading sizes then output_size, in result_format(self).
inline Plan check_forward(const at::Tensor& self, const at::Tensor& indices, c10::SymIntArrayRef output_size,
                          at::IntArrayRef stride, at::IntArrayRef padding) {
  const char* op = kForward;
  const c10::Device device = one_device(op, {{"self", self}, {"indices", indices}});
  check_dtype(op, "self", self.scalar_type(), kValueDtypes);
  check_dtype(op, "indices", indices.scalar_type(), kIndexDtypes);
  check_self(op, self, indices);
  check_lists(op, output_size, stride, padding);
  check_volume(op, self, output_size);
  Result r;
  r.sizes.assign(self.sym_sizes().begin(), self.sym_sizes().end() - 3);
  r.sizes.append(output_size.begin(), output_size.end());
  check_fits_int64(op, "the result", r.sizes, c10::elementSize(self.scalar_type()));
  r.dtype = self.scalar_type();
  r.device = device;
  r.format = result_format(self);
  return {r};
}

// The result: self's shape in result_format(indices). out: grad_input of the
// out= overload (contiguous, row 1), written in place unless it shares
// memory with grad_output or indices; its temporary is contiguous too.
inline Plan check_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices,
                           c10::SymIntArrayRef output_size, at::IntArrayRef stride, at::IntArrayRef padding,
                           Out out = {}) {
  const char* op = kBackward;
  const at::Tensor& grad_input = out.tensor;
  const c10::Device device =
      one_device(op, {{"grad_output", grad_output}, {"self", self}, {"indices", indices}}, grad_input);
  // Row 2: supported dtypes; row 3: grad_output, self and out dtypes agree.
  pooling::check_backward_dtypes(op, grad_output, self, grad_input, kValueDtypes, {&indices, &kIndexDtypes});
  // Rows 4-7.
  check_self(op, self, indices, grad_input);
  // Row 1: the out= tensor is contiguous.
  if (grad_input.defined()) {
    ACLNN_CHECK_VALUE(grad_input.is_contiguous(), op, "grad_input must be contiguous, got shape ",
                      fmt_list(grad_input.sym_sizes()), " with strides ", fmt_list(grad_input.sym_strides()));
  }
  // Rows 8-9.
  check_lists(op, output_size, stride, padding);
  // Row 12: grad_output has self's rank.
  const auto go = grad_output.sym_sizes();
  const auto s = self.sym_sizes();
  ACLNN_CHECK_VALUE(grad_output.dim() == self.dim(), op, "grad_output must have self's rank ", self.dim(),
                    ", got ", grad_output.dim(), "-D with shape ", fmt_list(go));
  // Rows 13 (4-D: N) and 14 (5-D: N and C).
  if (self.dim() == 4) {
    ACLNN_CHECK_VALUE(go[0] == s[0], op, "grad_output's N must equal self's N = ", val(s[0]),
                      ", got grad_output shape ", fmt_list(go));
  } else {
    ACLNN_CHECK_VALUE(go[0] == s[0] && go[1] == s[1], op, "grad_output's N, C must equal self's ",
                      fmt_list(s.slice(0, 2)), ", got grad_output shape ", fmt_list(go));
  }
  // Row 11: grad_output's last three sizes are output_size.
  const int64_t d = grad_output.dim() - 3;
  ACLNN_CHECK_VALUE(go[d] == output_size[0] && go[d + 1] == output_size[1] && go[d + 2] == output_size[2], op,
                    "grad_output's last three sizes must equal output_size ", fmt_list(output_size),
                    ", got grad_output shape ", fmt_list(go));
  // Row 10.
  check_volume(op, self, output_size);
  Result r;
  r.sizes.assign(self.sym_sizes().begin(), self.sym_sizes().end());
  r.dtype = grad_output.scalar_type();
  r.device = device;
  r.format = grad_input.defined() ? c10::MemoryFormat::Contiguous : result_format(indices);
  r.reads = {&grad_output, &indices};
  return {r};
}

// ---------------------------------------------------------------------------
// Shared by the CPU and CUDA kernels: a tensor of shape (N, [C,] D, H, W) as
// N x C planes of S = D*H*W elements (C = 1 for 4-D input), unpooled into
// planes of oS = prod(output_size) elements; and a dispatch on the element
// size, since both operators only move bits.

using pooling::Geometry;
using pooling::geometry;

using planes::flat_stride;
using planes::flattenable;

// Calls f(T{}) with T the unsigned integer of t's element size.
template <typename F>
void dispatch_by_size(at::ScalarType t, const F& f) {
  switch (c10::elementSize(t)) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: TORCH_INTERNAL_ASSERT(false, "max_unpool: unexpected element size of ", t);
  }
}

}  // namespace torch_aclnn::max_unpool
