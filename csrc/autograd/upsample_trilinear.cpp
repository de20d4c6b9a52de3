// Reverse-mode derivatives of the trilinear upsampling (docs/spec.md §10;
// forward-mode tangents and vmap: torch_aclnn/ops/upsample_trilinear.py). The
// forward is linear in self and its adjoint is the backward operator with the
// same taps and weights; the backward is linear in grad_output and its
// adjoint is the forward.
#include "autograd/derivative.h"

namespace torch_aclnn::autograd::upsample_trilinear_formulas {
namespace {

// upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, float? scales_d,
//                      float? scales_h, float? scales_w)
std::vector<at::Tensor> forward_grad(const Args& a, const at::Tensor& grad, const std::vector<bool>&) {
  return {call("upsample_trilinear3d_backward", {grad, a[1], sizes_of(a[0].toTensor()), a[2], a[3], a[4], a[5]}),
          {}, {}, {}, {}, {}};
}

// upsample_trilinear3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size,
//                               bool align_corners, float? scales_d, float? scales_h, float? scales_w)
std::vector<at::Tensor> backward_grad(const Args& a, const at::Tensor& grad, const std::vector<bool>&) {
  return {call("upsample_trilinear3d", {grad, a[1], a[3], a[4], a[5], a[6]}), {}, {}, {}, {}, {}, {}};
}

const std::vector<Keep> kForward = {Keep::like, Keep::none, Keep::none, Keep::none, Keep::none, Keep::none};
const std::vector<Keep> kBackward(7, Keep::none);

}  // namespace

TORCH_ACLNN_DERIVATIVE(upsample_trilinear3d, kForward, forward_grad);
TORCH_ACLNN_DERIVATIVE(upsample_trilinear3d_backward, kBackward, backward_grad);

}  // namespace torch_aclnn::autograd::upsample_trilinear_formulas
