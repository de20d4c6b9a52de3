// Meta kernels (fake tensors, torch.compile) of the SmoothL1 family: the
// contract of csrc/contracts/smooth_l1.h plus the result's dtype and shape.
// The CPU kernels return the same: a contiguous tensor of the promoted dtype,
// 0-dim for reduction 'mean' / 'sum'.
#include "contracts/smooth_l1.h"

#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace torch_aclnn::smooth_l1 {
namespace {

at::Tensor forward_meta(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta) {
  const Plan p = check_forward(self, target, reduction, beta);
  const auto options = self.options().dtype(p.dtype).device(p.device);
  if (reduction != kNone) return at::empty_symint({}, options);
  return at::empty_symint(p.shape, options);
}

at::Tensor backward_meta(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                         int64_t reduction, double beta) {
  const Plan p = check_backward(grad_output, self, target, reduction, beta);
  return at::empty_symint(p.shape, self.options().dtype(p.dtype).device(p.device));
}

void backward_out_meta(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                       int64_t reduction, double beta, at::Tensor& grad_input) {
  check_backward(grad_output, self, target, reduction, beta, grad_input);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, Meta, m) {
  m.impl("smooth_l1_loss", forward_meta);
  m.impl("smooth_l1_loss_backward", backward_meta);
  m.impl("smooth_l1_loss_backward.grad_input", backward_out_meta);
}

}  // namespace torch_aclnn::smooth_l1
