// Runs the per-element functors of the CUDA ELU kernels (csrc/cuda/elu.cuh)
// on the host over contiguous CPU tensors. tests/test_cuda_host_*.py
// compares them with aten's scalar CPU formula.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/elu.cuh"
#include "elementwise.h"

namespace host_elu {

using namespace torch_aclnn::elu;
using namespace torch_aclnn::elu::kernels;

at::Tensor forward(const at::Tensor& self, double alpha, double scale, double input_scale) {
  const Params p{alpha, scale, input_scale};
  return host_elementwise::map([&](auto t) { return Forward<decltype(t)>{{Coefs<decltype(t)>(p)}}; }, self);
}

at::Tensor backward(const at::Tensor& grad_output, double alpha, double scale, double input_scale, bool is_result,
                    const at::Tensor& self_or_result) {
  const Params p{alpha, scale, input_scale};
  if (is_result) {
    return host_elementwise::map([&](auto t) { return Backward<decltype(t), true>{{Coefs<decltype(t)>(p)}}; },
                                 grad_output, self_or_result);
  }
  return host_elementwise::map([&](auto t) { return Backward<decltype(t), false>{{Coefs<decltype(t)>(p)}}; },
                               grad_output, self_or_result);
}

}  // namespace host_elu
