// Reverse-mode derivatives of the ELU family (docs/spec.md §3; forward-mode
// tangents and vmap: torch_aclnn/ops/elu.py).
//   elu(x)         d/dx: elu_backward(grad, alpha, scale, input_scale, is_result=false, x)
//   elu_backward   linear in grad_output: elu_backward again;
//                  d/dself_or_result, times v (zero where self_or_result > 0):
//                    is_result:     v * grad_output * input_scale
//                    not is_result: input_scale * elu_backward(v * grad_output, ..., false, x)
#include "autograd/derivative.h"

namespace torch_aclnn::autograd::elu_formulas {
namespace {

// elu_backward's derivative with respect to self_or_result, applied to v.
at::Tensor d_self_or_result(const at::Tensor& v, const Args& a) {
  const at::Tensor& grad_output = a[0].toTensor();
  const at::Tensor& x = a[5].toTensor();
  const at::Scalar input_scale = a[3].toScalar();
  const at::Tensor d = a[4].toBool()
      ? v * grad_output * input_scale
      : call("elu_backward", {v * grad_output, a[1], a[2], a[3], false, x}) * input_scale;
  return d.masked_fill(x > 0, 0);
}

}  // namespace

// elu(Tensor self, Scalar alpha, Scalar scale, Scalar input_scale)
TORCH_ACLNN_DERIVATIVE(elu, {Keep::value, Keep::none, Keep::none, Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>&) -> std::vector<at::Tensor> {
                         return {call("elu_backward", {grad, a[1], a[2], a[3], false, a[0]}), {}, {}, {}};
                       });

// elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, bool is_result,
//              Tensor self_or_result)
TORCH_ACLNN_DERIVATIVE(elu_backward, {Keep::value, Keep::none, Keep::none, Keep::none, Keep::none, Keep::value},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>& needs)
                           -> std::vector<at::Tensor> {
                         return {if_needed(needs, 0, [&] { return call("elu_backward", {grad, a[1], a[2], a[3], a[4], a[5]}); }),
                                 {}, {}, {}, {},
                                 if_needed(needs, 5, [&] { return d_self_or_result(grad, a); })};
                       });

}  // namespace torch_aclnn::autograd::elu_formulas
