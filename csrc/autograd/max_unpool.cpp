// Reverse-mode derivatives of max_unpool3d (docs/spec.md §5; forward-mode
// tangents and vmap: torch_aclnn/ops/max_unpool.py). indices are not
// differentiable. max_unpool3d -> max_unpool3d_backward with respect to self
// (which lends only its shape and dtype: a stand-in is kept, not the values);
// max_unpool3d_backward is linear in grad_output and its adjoint is
// max_unpool3d with the same indices (exact for unique indices, as max_pool3d
// produces).
#include "autograd/derivative.h"

namespace torch_aclnn::autograd::max_unpool_formulas {

// max_unpool3d(Tensor self, Tensor indices, SymInt[3] output_size, int[3] stride, int[3] padding)
TORCH_ACLNN_DERIVATIVE(max_unpool3d, {Keep::like, Keep::value, Keep::none, Keep::none, Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>&) -> std::vector<at::Tensor> {
                         return {call("max_unpool3d_backward", {grad, a[0], a[1], a[2], a[3], a[4]}), {}, {}, {}, {}};
                       });

// max_unpool3d_backward(Tensor grad_output, Tensor self, Tensor indices, SymInt[3] output_size,
//                       int[3] stride, int[3] padding)
TORCH_ACLNN_DERIVATIVE(max_unpool3d_backward,
                       {Keep::none, Keep::like, Keep::value, Keep::none, Keep::none, Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>&) -> std::vector<at::Tensor> {
                         return {call("max_unpool3d", {grad, a[2], a[3], a[4], a[5]}), {}, {}, {}, {}, {}};
                       });

}  // namespace torch_aclnn::autograd::max_unpool_formulas
