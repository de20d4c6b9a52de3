// The contract of the LeakyReLU family (docs/spec.md §11): leaky_relu (forward)
// and leaky_relu_backward (aclnnLeakyReluBackward). Every backend (CPU, CUDA,
// Meta, and the NPU glue through Meta) validates with this header.
//
// The dtypes are every family's (common/contract.h: check_dtype); the rank,
// scalar and out= dtype rules are ELU's (contracts/elu.h), reused here so
// that both families say them the same way.
#pragma once

#include "contracts/elu.h"

namespace torch_aclnn::leaky_relu {

using elu::check_rank;
using elu::holds;

// negative_slope as a double: a real number (int or float), within float32's
// range for float32/float16/bfloat16 tensors (+-inf and NaN kept), as elu's
// scalars.
struct Params {
  double negative_slope;
};
using Plan = torch_aclnn::Plan<Params>;

inline Params check_slope(const char* op, const c10::Scalar& negative_slope, at::ScalarType dtype) {
  return {elu::check_scalar(op, "negative_slope", negative_slope, dtype)};
}

// The result: empty_like(self), self's layout kept.
inline Plan check_forward(const at::Tensor& self, const c10::Scalar& negative_slope) {
  constexpr const char* op = "leaky_relu";
  const c10::Device device = one_device(op, {{"self", self}});
  check_dtype(op, "self", self.scalar_type());
  const Params p = check_slope(op, negative_slope, self.scalar_type());
  check_rank(op, "self", self);
  return {Result::like_tensor(self, device), p};
}

// The result: empty_like(grad_output) on the call's device. out= (grad_input,
// any strides) as elu_backward's: written in place unless its dtype is wider
// than grad_output's or it shares memory with an input other than being
// exactly it; then through a temporary in grad_output's dtype.
inline Plan check_backward(const at::Tensor& grad_output, const at::Tensor& self, const c10::Scalar& negative_slope,
                           bool self_is_result, Out out = {}) {
  constexpr const char* op = "leaky_relu_backward";
  const at::Tensor& grad_input = out.tensor;
  const c10::Device device = one_device(op, {{"grad_output", grad_output}, {"self", self}}, grad_input);
  check_dtype(op, "grad_output", grad_output.scalar_type());
  check_dtype(op, "self", self.scalar_type());
  ACLNN_CHECK_TYPE(grad_output.scalar_type() == self.scalar_type(), op, "self must have grad_output's dtype ",
                   grad_output.scalar_type(), ", got ", self.scalar_type());
  const Params p = check_slope(op, negative_slope, grad_output.scalar_type());
  if (grad_input.defined()) {
    ACLNN_CHECK_TYPE(holds(grad_input.scalar_type(), grad_output.scalar_type()), op,
                     "grad_input's dtype must hold grad_output's dtype ", grad_output.scalar_type(),
                     " (the same dtype or a wider float32/float64), got ", grad_input.scalar_type());
  }
  check_rank(op, "grad_output", grad_output);
  ACLNN_CHECK_VALUE(self.sym_sizes() == grad_output.sym_sizes(), op, "self must have grad_output's shape ",
                    fmt_list(grad_output.sym_sizes()), " (no broadcasting), got ", fmt_list(self.sym_sizes()));
  if (grad_input.defined()) {
    ACLNN_CHECK_VALUE(grad_input.sym_sizes() == grad_output.sym_sizes(), op,
                      "grad_input must have grad_output's shape ", fmt_list(grad_output.sym_sizes()), ", got ",
                      fmt_list(grad_input.sym_sizes()));
  }
  // With self_is_result, self is the forward's output, whose sign tells the
  // branch only when negative_slope >= 0 (a NaN slope is not < 0).
  ACLNN_CHECK_VALUE(!(self_is_result && p.negative_slope < 0), op,
                    "negative_slope must be >= 0 when self_is_result is True (the forward's output does not "
                    "tell the branch), got ",
                    p.negative_slope);
  Result r = Result::like_tensor(grad_output, device);
  r.out_elementwise = true;
  r.reads = {&grad_output, &self};
  return {r, p};
}

}  // namespace torch_aclnn::leaky_relu
