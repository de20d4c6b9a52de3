// The contract of the SmoothL1 family (docs/spec.md §4): smooth_l1_loss and
// smooth_l1_loss_backward (aclnnSmoothL1LossBackward). Every backend (CPU,
// CUDA, Meta, and the NPU glue through Meta) validates with this header and
// takes the result's dtype and shape from it.
//
//   dtypes     every tensor is float32, float64, float16 or bfloat16; the
//              computation dtype is their promotion by torch's rules
//              (at::native::result_type: 0-dim tensors rank below the others)
//   shapes     broadcast(self, target) for the loss; broadcast(grad_output,
//              self, target) for grad_input
//   reduction  0 'none', 1 'mean', 2 'sum'
//   beta       >= 0 (NaN rejected); 0 is plain L1
#pragma once

#include "common/contract.h"

#include <ATen/native/TypeProperties.h>
#include <c10/core/SymInt.h>
#include <c10/core/SymIntArrayRef.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <charconv>
#include <string>

namespace torch_aclnn::smooth_l1 {

constexpr const char* kForward = "smooth_l1_loss";
constexpr const char* kBackward = "smooth_l1_loss_backward";

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

using SymShape = c10::SmallVector<c10::SymInt, 6>;

// A double as Python's repr writes it ("-1.0", "0.1", "nan", "inf").
inline std::string fmt_float(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

inline void check_reduction(const char* op, int64_t reduction) {
  ACLNN_CHECK_VALUE(reduction == kNone || reduction == kMean || reduction == kSum, op,
                    "reduction must be 0 ('none'), 1 ('mean') or 2 ('sum'), got ", reduction);
}

inline void check_beta(const char* op, double beta) {
  // Written as !(beta >= 0) so that NaN fails too.
  ACLNN_CHECK_VALUE(beta >= 0.0, op, "beta must be >= 0, got ", fmt_float(beta));
}

// Broadcasts shape `b` (named b_name) into `shape` (the broadcast of the
// arguments named so far, shape_name), numpy rules. Over SymInts: on symbolic
// sizes the comparisons become guards, as torch's own broadcasting does.
inline void broadcast_into(const char* op, SymShape& shape, const std::string& shape_name,
                           c10::SymIntArrayRef b, const char* b_name) {
  const SymShape a = shape;
  const size_t nd = std::max(a.size(), b.size());
  shape.assign(nd, c10::SymInt(1));
  for (size_t i = 0; i < nd; ++i) {
    // Aligned from the right; a missing axis is 1.
    const bool in_a = i + a.size() >= nd, in_b = i + b.size() >= nd;
    const c10::SymInt sa = in_a ? a[i + a.size() - nd] : c10::SymInt(1);
    const c10::SymInt sb = in_b ? b[i + b.size() - nd] : c10::SymInt(1);
    if (sa == 1) {
      shape[i] = sb;
    } else if (sb == 1) {
      shape[i] = sa;
    } else {
      ACLNN_CHECK_VALUE(sa == sb, op, shape_name, " ", fmt_list(a), " and ", b_name, " ", fmt_list(b),
                        " are not broadcastable: size ", sa, " vs ", sb, " at dim ",
                        static_cast<int64_t>(i) - static_cast<int64_t>(nd));
      shape[i] = sa;
    }
  }
}

// 'mean' / 'sum' read every element of the broadcast but allocate none of it, so an
// expanded broadcast far larger than memory would run for hours or days where torch
// (which materialises it) fails at once. Spec §4 row 7: at most 2^48 elements
// (2.8e14, beyond what any device holds as a tensor). Concrete sizes only.
constexpr int64_t kMaxReducedElements = int64_t{1} << 48;

inline void check_reduced_count(const char* op, c10::SymIntArrayRef sizes) {
  int64_t n = 1;
  for (const c10::SymInt& s : sizes) {
    const auto v = s.maybe_as_int();
    if (!v) return;
    if (*v == 0) return;  // (empty: nothing to read)
    if (__builtin_mul_overflow(n, *v, &n) || n > kMaxReducedElements) n = kMaxReducedElements + 1;
  }
  ACLNN_CHECK_VALUE(n <= kMaxReducedElements, op, "'mean' and 'sum' reduce at most 2^48 elements, but the "
                    "broadcast of self and target ", fmt_list(sizes), " has more (docs/spec.md §4 row 7)");
}

// What a valid call computes: a contiguous result of the promoted dtype on
// the call's device, the broadcast shape (0-dim for the loss with 'mean' /
// 'sum'). Kernels read the inputs in result.dtype.
using Plan = torch_aclnn::Plan<>;

// torch's type promotion over the tensors, each already checked supported;
// with floating inputs only the result is always one of them, but a future
// relaxation of check_dtype must not produce an unsupported one silently.
inline at::ScalarType promote(const char* op, std::initializer_list<const at::Tensor*> tensors) {
  at::native::ResultTypeState state;
  for (const at::Tensor* t : tensors) state = at::native::update_result_type_state(*t, state);
  const at::ScalarType dtype = at::native::result_type(state);
  ACLNN_CHECK_TYPE(kFloating.contains(dtype), op, "the inputs' dtypes promote to ", dtype,
                   ", which is not ", kFloating.names);
  return dtype;
}

inline Plan check_forward(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta) {
  const char* op = kForward;
  const c10::Device device = one_device(op, {{"self", self}, {"target", target}});
  check_dtype(op, "self", self.scalar_type());
  check_dtype(op, "target", target.scalar_type());
  check_reduction(op, reduction);
  check_beta(op, beta);
  Result r;
  r.dtype = promote(op, {&self, &target});
  r.device = device;
  r.sizes.assign(self.sym_sizes().begin(), self.sym_sizes().end());
  broadcast_into(op, r.sizes, "self", target.sym_sizes(), "target");
  // 'none' allocates the broadcast; 'mean' / 'sum' count its elements.
  check_fits_int64(op, "the broadcast of self and target", r.sizes,
                   reduction == kNone ? c10::elementSize(r.dtype) : 1);
  if (reduction != kNone) {
    check_reduced_count(op, r.sizes);
    r.sizes.clear();
  }
  return {r};
}

// out: grad_input of the out= overload, written in place (any strides)
// unless it shares memory with an input.
inline Plan check_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                           int64_t reduction, double beta, Out out = {}) {
  const char* op = kBackward;
  const at::Tensor& grad_input = out.tensor;
  const c10::Device device =
      one_device(op, {{"grad_output", grad_output}, {"self", self}, {"target", target}}, grad_input);
  check_dtype(op, "grad_output", grad_output.scalar_type());
  check_dtype(op, "self", self.scalar_type());
  check_dtype(op, "target", target.scalar_type());
  check_reduction(op, reduction);
  check_beta(op, beta);
  Result r;
  r.dtype = promote(op, {&grad_output, &self, &target});
  r.device = device;
  r.sizes.assign(self.sym_sizes().begin(), self.sym_sizes().end());
  broadcast_into(op, r.sizes, "self", target.sym_sizes(), "target");
  broadcast_into(op, r.sizes, "broadcast(self, target)", grad_output.sym_sizes(), "grad_output");
  check_fits_int64(op, "grad_input", r.sizes, c10::elementSize(r.dtype));
  if (grad_input.defined()) {
    ACLNN_CHECK_TYPE(grad_input.scalar_type() == r.dtype, op, "grad_input must have the promoted dtype ",
                     r.dtype, " of grad_output, self and target, got ", grad_input.scalar_type());
    const auto gi = grad_input.sym_sizes();
    bool same = gi.size() == r.sizes.size();
    for (size_t i = 0; same && i < gi.size(); ++i) same = gi[i] == r.sizes[i];
    ACLNN_CHECK_VALUE(same, op, "grad_input must have the broadcast shape of grad_output, self and target ",
                      fmt_list(r.sizes), ", got ", fmt_list(gi));
  }
  r.reads = {&grad_output, &self, &target};
  return {r};
}

}  // namespace torch_aclnn::smooth_l1
