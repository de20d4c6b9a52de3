// Meta kernels (fake tensors, torch.compile) of the ELU family: the contract
// of csrc/contracts/elu.h plus the result's shape, dtype and strides, which
// are those the CPU kernels allocate (empty_like with the input's layout).
#include "contracts/elu.h"

#include <ATen/ops/empty_like.h>
#include <torch/library.h>

namespace torch_aclnn::elu {
namespace {

at::Tensor forward_meta(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                        const c10::Scalar& input_scale) {
  check_forward(self, alpha, scale, input_scale);
  return at::empty_like(self, c10::MemoryFormat::Preserve);
}

at::Tensor backward_meta(const at::Tensor& grad_output, const c10::Scalar& alpha, const c10::Scalar& scale,
                         const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result) {
  const Params p = check_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result);
  return at::empty_like(grad_output, grad_output.options().device(p.device), c10::MemoryFormat::Preserve);
}

void backward_out_meta(const at::Tensor& grad_output, const c10::Scalar& alpha, const c10::Scalar& scale,
                       const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result,
                       at::Tensor& grad_input) {
  check_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result, grad_input);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, Meta, m) {
  m.impl("elu", forward_meta);
  m.impl("elu_backward", backward_meta);
  m.impl("elu_backward.grad_input", backward_out_meta);
}

}  // namespace torch_aclnn::elu
