// CUDA kernels of the ELU family (docs/spec.md §3): elu and elu_backward.
//
// Same contract (csrc/contracts/elu.h), result layout (empty_like with the
// input's layout) and out= rules as the CPU kernels in csrc/cpu/elu.cpp; the
// elementwise driver is csrc/cuda/elementwise.cuh (128-bit vector loads on
// dense operands, an offset calculator on strided ones).
//
// The formulas keep aten's order of operations and coefficients (computed on
// the host in the opmath type, as aten does), in opmath (float32 for
// half/bfloat16), rounded once:
//   forward:  x >= 0 ? x * scale : expm1(x * input_scale) * (alpha * scale)
//   backward: x > 0 ? g * scale
//                   : g * input_scale * (x + alpha * scale)                    (is_result)
//                   : g * input_scale * (alpha * scale) * exp(x * input_scale)  (otherwise)
// with CUDA's exp/expm1, so finite results are bitwise equal to aten's CUDA
// kernels. Two deliberate differences, both the CPU kernels' rules: the
// forward takes the positive branch at x = +-0 (aten's CPU rule; aten's CUDA
// kernel tests x > 0, which gives NaN there for an infinite alpha * scale or
// input_scale); and a NaN x takes the negative branch (the backward selects
// the positive one only where x > 0), so a NaN in self_or_result always gives
// NaN; aten's CUDA kernel tests x <= 0 instead and returns g * scale there.
#include "cuda/elementwise.cuh"
#include "cuda/elu.cuh"

#include <ATen/Dispatch.h>
#include <torch/library.h>

namespace torch_aclnn::elu {
namespace {

using kernels::Backward;
using kernels::Coefs;
using kernels::Forward;

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self, const c10::Scalar&, const c10::Scalar&,
                  const c10::Scalar&) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "elu_cuda", [&] {
    cuda::map_into<scalar_t>(out, Forward<scalar_t>{{Coefs<scalar_t>(p.params)}}, self);
  });
}

// grad_input: grad_output's shape and dtype, no internal overlap, and not
// partially overlapping either input. A 0-dim CPU input is read from a copy
// on the device.
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output, const c10::Scalar&,
                   const c10::Scalar&, const c10::Scalar&, bool is_result, const at::Tensor& self_or_result) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "elu_backward_cuda", [&] {
    if (is_result) {
      cuda::map_into<scalar_t>(grad_input, Backward<scalar_t, true>{{Coefs<scalar_t>(p.params)}}, grad_output,
                               self_or_result);
    } else {
      cuda::map_into<scalar_t>(grad_input, Backward<scalar_t, false>{{Coefs<scalar_t>(p.params)}}, grad_output,
                               self_or_result);
    }
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  entry::impl<cuda::Backend, check_forward, forward_into>(m, "elu");
  entry::impl<cuda::Backend, check_backward, backward_into>(m, "elu_backward");
}

}  // namespace torch_aclnn::elu
