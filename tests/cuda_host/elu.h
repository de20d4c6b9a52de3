// Runs the per-element functors of the CUDA ELU kernels (csrc/cuda/elu.cuh)
// on the host over contiguous CPU tensors. tests/test_cuda_host_emulation.py
// compares them with aten's scalar CPU formula.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/elu.cuh"

#include <ATen/Dispatch.h>

namespace host_elu {

using namespace torch_aclnn::elu;
using namespace torch_aclnn::elu::kernels;

at::Tensor forward(const at::Tensor& self, double alpha, double scale, double input_scale) {
  const at::Tensor x = self.contiguous();
  at::Tensor out = at::empty_like(x);
  const Params p{alpha, scale, input_scale};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "forward", [&] {
    const Forward<scalar_t> f{Coefs<scalar_t>(p)};
    const scalar_t* in = x.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = f(in[i]);
  });
  return out;
}

at::Tensor backward(const at::Tensor& grad_output, double alpha, double scale, double input_scale, bool is_result,
                    const at::Tensor& self_or_result) {
  const at::Tensor g = grad_output.contiguous(), x = self_or_result.contiguous();
  at::Tensor out = at::empty_like(g);
  const Params p{alpha, scale, input_scale};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, g.scalar_type(), "backward", [&] {
    const scalar_t* gp = g.const_data_ptr<scalar_t>();
    const scalar_t* xp = x.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    if (is_result) {
      const Backward<scalar_t, true> f{Coefs<scalar_t>(p)};
      for (int64_t i = 0; i < g.numel(); ++i) o[i] = f(gp[i], xp[i]);
    } else {
      const Backward<scalar_t, false> f{Coefs<scalar_t>(p)};
      for (int64_t i = 0; i < g.numel(); ++i) o[i] = f(gp[i], xp[i]);
    }
  });
  return out;
}

}  // namespace host_elu

inline void register_elu(pybind11::module_& m) {
  using namespace host_elu;
  m.def("forward", &forward);
  m.def("backward", &backward);
}
