// Meta kernels (fake tensors, torch.compile) of the upsample-nearest family:
// the contract of csrc/contracts/upsample.h plus the result's shape and layout.
#include "contracts/upsample.h"

#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace torch_aclnn::upsample {
namespace {

template <Mode mode>
at::Tensor forward_meta(const at::Tensor& self, c10::SymIntArrayRef output_size, Scale sd, Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  check_forward(mode, self, output_size, scales);
  const auto in = self.sym_sizes();
  return at::empty_symint({in[0], in[1], output_size[0], output_size[1], output_size[2]},
                          self.options().memory_format(result_format(self)));
}

template <Mode mode>
at::Tensor backward_meta(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                         c10::SymIntArrayRef input_size, Scale sd, Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  check_backward(mode, grad_output, output_size, input_size, scales);
  return at::empty_symint(input_size, grad_output.options().memory_format(result_format(grad_output)));
}

template <Mode mode>
void backward_out_meta(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                       c10::SymIntArrayRef input_size, Scale sd, Scale sh, Scale sw,
                       at::Tensor& grad_input) {
  const Scale scales[3] = {sd, sh, sw};
  check_backward(mode, grad_output, output_size, input_size, scales, grad_input);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, Meta, m) {
  m.impl("upsample_nearest3d", forward_meta<Mode::Nearest>);
  m.impl("upsample_nearest3d_backward", backward_meta<Mode::Nearest>);
  m.impl("upsample_nearest3d_backward.grad_input", backward_out_meta<Mode::Nearest>);
  m.impl("upsample_nearest_exact3d", forward_meta<Mode::NearestExact>);
  m.impl("upsample_nearest_exact3d_backward", backward_meta<Mode::NearestExact>);
  m.impl("upsample_nearest_exact3d_backward.grad_input", backward_out_meta<Mode::NearestExact>);
}

}  // namespace torch_aclnn::upsample
