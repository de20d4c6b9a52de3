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
//   forward:  x > 0 ? x * scale : expm1(x * input_scale) * (alpha * scale)
//   backward: x > 0 ? g * scale
//                   : g * input_scale * (x + alpha * scale)                    (is_result)
//                   : g * input_scale * (alpha * scale) * exp(x * input_scale)  (otherwise)
// with CUDA's exp/expm1, so finite results are bitwise equal to aten's CUDA
// kernels. One deliberate difference: like the CPU kernels, a NaN x takes
// the negative branch (only x > 0 selects the positive one), so a NaN in
// self_or_result always gives NaN; aten's CUDA kernel tests x <= 0 instead
// and returns g * scale there.
#include "cuda/elementwise.cuh"
#include "cuda/elu.cuh"

#include <ATen/Dispatch.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

namespace torch_aclnn::elu {
namespace {

using kernels::Backward;
using kernels::Coefs;
using kernels::Forward;

at::Tensor forward_cuda(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                        const c10::Scalar& input_scale) {
  const Params p = check_forward(self, alpha, scale, input_scale);
  c10::cuda::CUDAGuard guard(self.device());
  at::Tensor out = at::empty_like(self, c10::MemoryFormat::Preserve);
  if (out.numel() == 0) return out;
  auto iter = at::TensorIteratorConfig().resize_outputs(false).add_output(out).add_const_input(self).build();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "elu_cuda", [&] {
    cuda::launch_elementwise<1, scalar_t>(iter, Forward<scalar_t>{Coefs<scalar_t>(p)});
  });
  return out;
}

// grad_input: defined, grad_output's shape and dtype, no internal overlap,
// and not partially overlapping either input.
void backward_into(const at::Tensor& grad_output, const Params& p, bool is_result, const at::Tensor& self_or_result,
                   at::Tensor& grad_input) {
  if (grad_input.numel() == 0) return;
  auto iter = at::TensorIteratorConfig()
                  .resize_outputs(false)
                  .add_output(grad_input)
                  .add_const_input(grad_output)
                  .add_const_input(self_or_result)
                  .build();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "elu_backward_cuda", [&] {
    if (is_result) {
      cuda::launch_elementwise<2, scalar_t>(iter, Backward<scalar_t, true>{Coefs<scalar_t>(p)});
    } else {
      cuda::launch_elementwise<2, scalar_t>(iter, Backward<scalar_t, false>{Coefs<scalar_t>(p)});
    }
  });
}

at::Tensor backward_cuda(const at::Tensor& grad_output_, const c10::Scalar& alpha, const c10::Scalar& scale,
                         const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result_) {
  const Params p = check_backward(grad_output_, alpha, scale, input_scale, is_result, self_or_result_);
  c10::cuda::CUDAGuard guard(p.device);
  const at::Tensor grad_output = on_device(grad_output_, p.device);
  const at::Tensor self_or_result = on_device(self_or_result_, p.device);
  at::Tensor grad_input = at::empty_like(grad_output, c10::MemoryFormat::Preserve);
  backward_into(grad_output, p, is_result, self_or_result, grad_input);
  return grad_input;
}

void backward_out_cuda(const at::Tensor& grad_output_, const c10::Scalar& alpha, const c10::Scalar& scale,
                       const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result_,
                       at::Tensor& grad_input) {
  const Params p = check_backward(grad_output_, alpha, scale, input_scale, is_result, self_or_result_, grad_input);
  at::assert_no_internal_overlap(grad_input);
  if (grad_input.numel() == 0) return;
  c10::cuda::CUDAGuard guard(p.device);
  const at::Tensor grad_output = on_device(grad_output_, p.device);
  const at::Tensor self_or_result = on_device(self_or_result_, p.device);
  write_out(
      grad_input, backward_writes_in_place(grad_input, grad_output, self_or_result),
      [&] { return at::empty_like(grad_output, c10::MemoryFormat::Preserve); },
      [&](at::Tensor& dst) { backward_into(grad_output, p, is_result, self_or_result, dst); });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  m.impl("elu", forward_cuda);
  m.impl("elu_backward", backward_cuda);
  m.impl("elu_backward.grad_input", backward_out_cuda);
}

}  // namespace torch_aclnn::elu
