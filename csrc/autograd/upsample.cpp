// Reverse-mode derivatives of the nearest upsamplings (docs/spec.md §1-§2;
// forward-mode tangents and vmap: torch_aclnn/ops/upsample.py). Each
// forward is linear in self and its adjoint is the backward operator with the
// same mapping; the backward is linear in grad_output and its adjoint is the
// forward.
#include "autograd/derivative.h"

namespace torch_aclnn::autograd::upsample_formulas {
namespace {

// <forward>(Tensor self, SymInt[3] output_size, float? scales_d, float? scales_h, float? scales_w)
Formula forward_grad(const char* backward) {
  return [backward](const Args& a, const at::Tensor& grad, const std::vector<bool>&) -> std::vector<at::Tensor> {
    return {call(backward, {grad, a[1], sizes_of(a[0].toTensor()), a[2], a[3], a[4]}), {}, {}, {}, {}};
  };
}

// <forward>_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, float? scales_d,
//                    float? scales_h, float? scales_w)
Formula backward_grad(const char* forward) {
  return [forward](const Args& a, const at::Tensor& grad, const std::vector<bool>&) -> std::vector<at::Tensor> {
    return {call(forward, {grad, a[1], a[3], a[4], a[5]}), {}, {}, {}, {}, {}};
  };
}

const std::vector<Keep> kForward = {Keep::like, Keep::none, Keep::none, Keep::none, Keep::none};
const std::vector<Keep> kBackward(6, Keep::none);

}  // namespace

TORCH_ACLNN_DERIVATIVE(upsample_nearest3d, kForward, forward_grad("upsample_nearest3d_backward"));
TORCH_ACLNN_DERIVATIVE(upsample_nearest3d_backward, kBackward, backward_grad("upsample_nearest3d"));
TORCH_ACLNN_DERIVATIVE(upsample_nearest_exact3d, kForward, forward_grad("upsample_nearest_exact3d_backward"));
TORCH_ACLNN_DERIVATIVE(upsample_nearest_exact3d_backward, kBackward, backward_grad("upsample_nearest_exact3d"));

}  // namespace torch_aclnn::autograd::upsample_formulas
