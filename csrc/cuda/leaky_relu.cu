// CUDA kernels of the LeakyReLU family (docs/spec.md §11): leaky_relu and
// leaky_relu_backward.
//
// Same contract (csrc/contracts/leaky_relu.h), result layout (empty_like with
// the input's layout) and out= rules as the CPU kernels in
// csrc/cpu/leaky_relu.cpp; the elementwise driver is csrc/cuda/elementwise.cuh
// (128-bit vector loads on dense operands, an offset calculator on strided
// ones). The formulas (csrc/cuda/leaky_relu.cuh) are aten's, in opmath
// (float32 for half/bfloat16), rounded once, with no transcendental: the
// results are bitwise equal to the CPU kernels and to aten's.
#include "cuda/elementwise.cuh"
#include "cuda/leaky_relu.cuh"

#include <ATen/Dispatch.h>
#include <torch/library.h>

namespace torch_aclnn::leaky_relu {
namespace {

using kernels::Backward;
using kernels::Forward;
using kernels::Slope;

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self, const c10::Scalar&) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "leaky_relu_cuda", [&] {
    cuda::map_into<scalar_t>(out, Forward<scalar_t>{{Slope<scalar_t>(p.params)}}, self);
  });
}

// grad_input: grad_output's shape and dtype, no internal overlap, and not
// partially overlapping either input. A 0-dim CPU input is read from a copy
// on the device.
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output, const at::Tensor& self,
                   const c10::Scalar&, bool) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "leaky_relu_backward_cuda",
                                  [&] {
                                    cuda::map_into<scalar_t>(grad_input,
                                                             Backward<scalar_t>{{Slope<scalar_t>(p.params)}},
                                                             grad_output, self);
                                  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  entry::impl<cuda::Backend, check_forward, forward_into>(m, "leaky_relu");
  entry::impl<cuda::Backend, check_backward, backward_into>(m, "leaky_relu_backward");
}

}  // namespace torch_aclnn::leaky_relu
