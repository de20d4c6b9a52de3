// Reverse-mode derivatives of the AvgPool3d family (docs/spec.md §12;
// forward-mode tangents and vmap: torch_aclnn/ops/avg_pool.py). avg_pool3d
// is linear in self and its adjoint is avg_pool3d_backward, which keeps self
// (as aten's derivative does: the gradient's layout follows it).
// avg_pool3d_backward is linear in grad_output and its adjoint is
// avg_pool3d applied to the incoming gradient (of self's shape); self lends
// only its shape and dtype (a stand-in is kept).
#include "autograd/derivative.h"

namespace torch_aclnn::autograd::avg_pool_formulas {

// avg_pool3d(Tensor self, int[] kernel_size, int[] stride, int[] padding, bool ceil_mode,
//            bool count_include_pad, int? divisor_override)
TORCH_ACLNN_DERIVATIVE(avg_pool3d, {Keep::value, Keep::none, Keep::none, Keep::none, Keep::none, Keep::none,
                                    Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>&) -> std::vector<at::Tensor> {
                         return {call("avg_pool3d_backward", {grad, a[0], a[1], a[2], a[3], a[4], a[5], a[6]}),
                                 {}, {}, {}, {}, {}, {}};
                       });

// avg_pool3d_backward(Tensor grad_output, Tensor self, int[] kernel_size, int[] stride, int[] padding,
//                     bool ceil_mode, bool count_include_pad, int? divisor_override)
TORCH_ACLNN_DERIVATIVE(avg_pool3d_backward,
                       {Keep::none, Keep::like, Keep::none, Keep::none, Keep::none, Keep::none, Keep::none,
                        Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>& needs)
                           -> std::vector<at::Tensor> {
                         auto grad_output = if_needed(needs, 0, [&] {
                           return call("avg_pool3d", {grad, a[2], a[3], a[4], a[5], a[6], a[7]});
                         });
                         return {grad_output, {}, {}, {}, {}, {}, {}, {}};
                       });

}  // namespace torch_aclnn::autograd::avg_pool_formulas
