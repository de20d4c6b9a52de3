// Runs the per-element functors of the CUDA LeakyReLU kernels
// (csrc/cuda/leaky_relu.cuh) on the host over contiguous CPU tensors.
// tests/test_cuda_host_*.py compare them with the CPU kernels.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/leaky_relu.cuh"
#include "elementwise.h"

namespace host_leaky_relu {

using namespace torch_aclnn::leaky_relu;
using namespace torch_aclnn::leaky_relu::kernels;

at::Tensor forward(const at::Tensor& self, double negative_slope) {
  const Params p{negative_slope};
  return host_elementwise::map([&](auto t) { return Forward<decltype(t)>{{Slope<decltype(t)>(p)}}; }, self);
}

at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self, double negative_slope) {
  const Params p{negative_slope};
  return host_elementwise::map([&](auto t) { return Backward<decltype(t)>{{Slope<decltype(t)>(p)}}; }, grad_output,
                               self);
}

}  // namespace host_leaky_relu
