// Reverse-mode derivatives of the LeakyReLU family (docs/spec.md §11;
// forward-mode tangents and vmap: torch_aclnn/ops/leaky_relu.py).
//   leaky_relu(x)        d/dx: leaky_relu_backward(grad, x, negative_slope, self_is_result=false)
//   leaky_relu_backward  linear in grad_output: leaky_relu_backward again (the
//                        same self and self_is_result); piecewise constant in
//                        self: its gradient is zeros (as aten's).
#include "autograd/derivative.h"

namespace torch_aclnn::autograd::leaky_relu_formulas {

// leaky_relu(Tensor self, Scalar negative_slope)
TORCH_ACLNN_DERIVATIVE(leaky_relu, {Keep::value, Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>&) -> std::vector<at::Tensor> {
                         return {call("leaky_relu_backward", {grad, a[0], a[1], false}), {}};
                       });

// leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, bool self_is_result)
TORCH_ACLNN_DERIVATIVE(leaky_relu_backward, {Keep::none, Keep::value, Keep::none, Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>& needs)
                           -> std::vector<at::Tensor> {
                         return {if_needed(needs, 0,
                                           [&] { return call("leaky_relu_backward", {grad, a[1], a[2], a[3]}); }),
                                 if_needed(needs, 1, [&] { return at::zeros_like(a[1].toTensor()); }), {}, {}};
                       });

}  // namespace torch_aclnn::autograd::leaky_relu_formulas
