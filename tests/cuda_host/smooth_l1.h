// Runs the per-element functors of the CUDA SmoothL1 kernels
// (csrc/cuda/smooth_l1.cuh) on the host over contiguous CPU tensors of one
// shape and dtype. tests/test_cuda_host_*.py compare them with the
// CPU kernels.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/smooth_l1.cuh"
#include "elementwise.h"

namespace host_smooth_l1 {

using namespace torch_aclnn::smooth_l1::kernels;

at::Tensor loss_none(const at::Tensor& self, const at::Tensor& target, double beta) {
  TORCH_CHECK(self.sizes() == target.sizes() && self.scalar_type() == target.scalar_type());
  return host_elementwise::map(
      [&](auto t) { return LossNone<decltype(t)>{Loss<at::opmath_type<decltype(t)>>(beta)}; }, self, target);
}

at::Tensor grad(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target, double beta,
                double norm) {
  TORCH_CHECK(self.sizes() == target.sizes() && self.sizes() == grad_output.sizes() &&
              self.scalar_type() == target.scalar_type() && self.scalar_type() == grad_output.scalar_type());
  return host_elementwise::map([&](auto t) { return Grad<decltype(t)>(beta, norm); }, grad_output, self, target);
}

}  // namespace host_smooth_l1
