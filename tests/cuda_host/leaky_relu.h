// Runs the per-element functors of the CUDA LeakyReLU kernels
// (csrc/cuda/leaky_relu.cuh) on the host over contiguous CPU tensors.
// tests/test_cuda_host_emulation.py compares them with the CPU kernels.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/leaky_relu.cuh"

#include <ATen/Dispatch.h>

namespace host_leaky_relu {

using namespace torch_aclnn::leaky_relu;
using namespace torch_aclnn::leaky_relu::kernels;

at::Tensor forward(const at::Tensor& self, double negative_slope) {
  const at::Tensor x = self.contiguous();
  at::Tensor out = at::empty_like(x);
  const Params p{negative_slope};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "forward", [&] {
    const Forward<scalar_t> f{Slope<scalar_t>(p)};
    const scalar_t* in = x.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = f(in[i]);
  });
  return out;
}

at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self, double negative_slope) {
  const at::Tensor g = grad_output.contiguous(), x = self.contiguous();
  at::Tensor out = at::empty_like(g);
  const Params p{negative_slope};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, g.scalar_type(), "backward", [&] {
    const Backward<scalar_t> f{Slope<scalar_t>(p)};
    const scalar_t* gp = g.const_data_ptr<scalar_t>();
    const scalar_t* xp = x.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < g.numel(); ++i) o[i] = f(gp[i], xp[i]);
  });
  return out;
}

}  // namespace host_leaky_relu

inline void register_leaky_relu(pybind11::module_& m) {
  using namespace host_leaky_relu;
  m.def("forward", &forward);
  m.def("backward", &backward);
}
