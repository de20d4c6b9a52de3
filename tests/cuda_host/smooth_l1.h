// Runs the per-element functors of the CUDA SmoothL1 kernels
// (csrc/cuda/smooth_l1.cuh) on the host over contiguous CPU tensors of one
// shape and dtype. tests/test_cuda_host_emulation.py compares them with the
// CPU kernels.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/smooth_l1.cuh"

#include <ATen/Dispatch.h>

namespace host_smooth_l1 {

using namespace torch_aclnn::smooth_l1::kernels;

at::Tensor loss_none(const at::Tensor& self, const at::Tensor& target, double beta) {
  const at::Tensor a = self.contiguous(), b = target.contiguous();
  TORCH_CHECK(a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type());
  at::Tensor out = at::empty_like(a);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "loss_none", [&] {
    using T = at::opmath_type<scalar_t>;
    const LossNone<scalar_t> f{Loss<T>(beta)};
    const scalar_t* ap = a.const_data_ptr<scalar_t>();
    const scalar_t* bp = b.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < a.numel(); ++i) o[i] = f(ap[i], bp[i]);
  });
  return out;
}

at::Tensor grad(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target, double beta,
                double norm) {
  const at::Tensor g = grad_output.contiguous(), a = self.contiguous(), b = target.contiguous();
  TORCH_CHECK(a.sizes() == b.sizes() && a.sizes() == g.sizes() && a.scalar_type() == b.scalar_type() &&
              a.scalar_type() == g.scalar_type());
  at::Tensor out = at::empty_like(a);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "grad", [&] {
    const Grad<scalar_t> f(beta, norm);
    const scalar_t* gp = g.const_data_ptr<scalar_t>();
    const scalar_t* ap = a.const_data_ptr<scalar_t>();
    const scalar_t* bp = b.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t i = 0; i < a.numel(); ++i) o[i] = f(gp[i], ap[i], bp[i]);
  });
  return out;
}

}  // namespace host_smooth_l1

inline void register_smooth_l1(pybind11::module_& m) {
  using namespace host_smooth_l1;
  m.def("loss_none", &loss_none);
  m.def("grad", &grad);
}
