// The contract of the ELU family (docs/spec.md §3): elu (forward) and elu_backward
// (aclnnEluBackward), which also serve SELU and CELU. Every backend (CPU,
// CUDA, Meta, and the NPU glue through Meta) validates with this header.
#pragma once

#include "common/contract.h"

#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <cmath>
#include <limits>

namespace torch_aclnn::elu {

constexpr int64_t kMaxDims = 8;

inline void check_rank(const char* op, const char* arg, const at::Tensor& t) {
  ACLNN_CHECK_VALUE(t.dim() <= kMaxDims, op, arg, " must have at most ", kMaxDims, " dims, got ", t.dim(),
                    "-D with shape ", fmt_list(t.sym_sizes()));
}

// alpha, scale, input_scale: real numbers (int or float), representable in
// the kernel's compute type: float32 for float32/float16/bfloat16 tensors
// (as aten's Scalar conversion: a finite value beyond float32's range is
// refused, +-inf and NaN are kept). Otherwise 1e308 would become inf in the
// kernel, and inf * 0 at x == 0 NaN where the formula gives 0. Returns the
// value as a double (a symbolic scalar is specialised to its value).
inline double check_scalar(const char* op, const char* arg, const c10::Scalar& s, at::ScalarType dtype) {
  ACLNN_CHECK_TYPE(!s.isComplex() && !s.isBoolean(), op, arg, " must be a real number (int or float), got ",
                   s.isComplex() ? "complex " : "bool ", s);
  const double v = s.toDouble();
  ACLNN_CHECK_VALUE(dtype == at::kDouble || !std::isfinite(v) ||
                        std::abs(v) <= static_cast<double>(std::numeric_limits<float>::max()),
                    op, arg, " must fit in float32 (the compute type of ", dtype, " tensors), got ", v);
  return v;
}

// The scalar parameters of one call, as doubles.
struct Params {
  double alpha, scale, input_scale;
};
using Plan = torch_aclnn::Plan<Params>;

inline Params check_params(const char* op, const c10::Scalar& alpha, const c10::Scalar& scale,
                           const c10::Scalar& input_scale, at::ScalarType dtype) {
  return {check_scalar(op, "alpha", alpha, dtype), check_scalar(op, "scale", scale, dtype),
          check_scalar(op, "input_scale", input_scale, dtype)};
}

// The result: empty_like(self), self's layout kept.
inline Plan check_forward(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                          const c10::Scalar& input_scale) {
  constexpr const char* op = "elu";
  const c10::Device device = one_device(op, {{"self", self}});
  check_dtype(op, "self", self.scalar_type());
  const Params p = check_params(op, alpha, scale, input_scale, self.scalar_type());
  check_rank(op, "self", self);
  return {Result::like_tensor(self, device), p};
}

// grad_input (out= variant) may be any supported dtype that holds every value
// of grad_output's dtype exactly: grad_output's own dtype or a wider one
// (promote_types(grad_output, grad_input) == grad_input). Values are computed
// and rounded in grad_output's dtype, then widened exactly on store, so out=
// returns the same numbers as the functional form.
inline bool holds(at::ScalarType out, at::ScalarType in) {
  return kFloating.contains(out) && c10::promoteTypes(in, out) == out;
}

// The result: empty_like(grad_output) on the call's device. out= on every
// backend: grad_input (any strides) is written in place unless its dtype is
// wider than grad_output's or it shares memory with an input (other than
// being exactly it); then the values go through a temporary in grad_output's
// dtype (widened exactly by the copy). out: grad_input of the out= overload.
inline Plan check_backward(const at::Tensor& grad_output, const c10::Scalar& alpha, const c10::Scalar& scale,
                           const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result,
                           Out out = {}) {
  constexpr const char* op = "elu_backward";
  const at::Tensor& grad_input = out.tensor;
  const c10::Device device =
      one_device(op, {{"grad_output", grad_output}, {"self_or_result", self_or_result}}, grad_input);
  check_dtype(op, "grad_output", grad_output.scalar_type());
  check_dtype(op, "self_or_result", self_or_result.scalar_type());
  ACLNN_CHECK_TYPE(grad_output.scalar_type() == self_or_result.scalar_type(), op,
                   "self_or_result must have grad_output's dtype ", grad_output.scalar_type(), ", got ",
                   self_or_result.scalar_type());
  const Params p = check_params(op, alpha, scale, input_scale, grad_output.scalar_type());
  if (grad_input.defined()) {
    ACLNN_CHECK_TYPE(holds(grad_input.scalar_type(), grad_output.scalar_type()), op,
                     "grad_input's dtype must hold grad_output's dtype ", grad_output.scalar_type(),
                     " (the same dtype or a wider float32/float64), got ", grad_input.scalar_type());
  }
  check_rank(op, "grad_output", grad_output);
  ACLNN_CHECK_VALUE(self_or_result.sym_sizes() == grad_output.sym_sizes(), op,
                    "self_or_result must have grad_output's shape ", fmt_list(grad_output.sym_sizes()),
                    " (no broadcasting), got ", fmt_list(self_or_result.sym_sizes()));
  if (grad_input.defined()) {
    ACLNN_CHECK_VALUE(grad_input.sym_sizes() == grad_output.sym_sizes(), op,
                      "grad_input must have grad_output's shape ", fmt_list(grad_output.sym_sizes()),
                      ", got ", fmt_list(grad_input.sym_sizes()));
  }
  // With is_result the forward output is inverted on the negative branch,
  // which needs alpha >= 0 (a NaN alpha is not rejected: it is not < 0).
  ACLNN_CHECK_VALUE(!(is_result && p.alpha < 0), op,
                    "alpha must be >= 0 when is_result is True (the forward is not invertible), got ", p.alpha);
  Result r = Result::like_tensor(grad_output, device);
  r.out_elementwise = true;
  r.reads = {&grad_output, &self_or_result};
  return {r, p};
}

}  // namespace torch_aclnn::elu
