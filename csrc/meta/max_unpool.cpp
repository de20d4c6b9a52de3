// Meta kernels (fake tensors, torch.compile) of the MaxUnpool3d family: the
// contract of csrc/contracts/max_unpool.h plus the result's shape and layout.
// The index rule (row 15) depends on data and is checked by the real kernels.
#include "contracts/max_unpool.h"

#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace torch_aclnn::max_unpool {
namespace {

at::Tensor forward_meta(const at::Tensor& self, const at::Tensor& indices, c10::SymIntArrayRef output_size,
                        at::IntArrayRef stride, at::IntArrayRef padding) {
  check_forward(self, indices, output_size, stride, padding);
  const auto s = self.sym_sizes();
  std::vector<c10::SymInt> shape(s.begin(), s.end() - 3);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  return at::empty_symint(shape, self.options().memory_format(result_format(self)));
}

at::Tensor backward_meta(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices,
                         c10::SymIntArrayRef output_size, at::IntArrayRef stride, at::IntArrayRef padding) {
  check_backward(grad_output, self, indices, output_size, stride, padding);
  return at::empty_symint(self.sym_sizes(), grad_output.options().memory_format(result_format(indices)));
}

void backward_out_meta(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices,
                       c10::SymIntArrayRef output_size, at::IntArrayRef stride, at::IntArrayRef padding,
                       at::Tensor& grad_input) {
  check_backward(grad_output, self, indices, output_size, stride, padding, grad_input);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, Meta, m) {
  m.impl("max_unpool3d", forward_meta);
  m.impl("max_unpool3d_backward", backward_meta);
  m.impl("max_unpool3d_backward.grad_input", backward_out_meta);
}

}  // namespace torch_aclnn::max_unpool
