// Reverse-mode derivatives of the MaxPool3d family (docs/spec.md §9;
// forward-mode tangents and vmap: torch_aclnn/ops/max_pool.py).
// max_pool3d_with_indices -> max_pool3d_with_indices_backward with its
// indices result, keeping self (as aten's derivative does: the result's
// layout follows it). max_pool3d_with_indices_backward is linear in
// grad_output: its adjoint gathers the incoming gradient (of self's shape)
// at the indices, a tensor of the pooled shape; self lends only its shape
// and dtype (a stand-in is kept). Indices are not differentiable.
#include "autograd/derivative.h"

#include <ATen/ops/gather.h>

namespace torch_aclnn::autograd::max_pool_formulas {

// max_pool3d_with_indices(Tensor self, int[] kernel_size, int[] stride, int[] padding, int[] dilation,
//                         bool ceil_mode) -> (Tensor, Tensor)
TORCH_ACLNN_DERIVATIVE(max_pool3d_with_indices,
                       {Keep::value, Keep::none, Keep::none, Keep::none, Keep::none, Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>&) -> std::vector<at::Tensor> {
                         // a[6], a[7]: the results (values: not kept; indices)
                         return {call("max_pool3d_with_indices_backward", {grad, a[0], a[7], a[1], a[2], a[3], a[4], a[5]}),
                                 {}, {}, {}, {}, {}};
                       },
                       {Keep::none, Keep::value});

// max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, Tensor indices, int[] kernel_size,
//                                  int[] stride, int[] padding, int[] dilation, bool ceil_mode)
TORCH_ACLNN_DERIVATIVE(max_pool3d_with_indices_backward,
                       {Keep::none, Keep::like, Keep::value, Keep::none, Keep::none, Keep::none, Keep::none,
                        Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>& needs)
                           -> std::vector<at::Tensor> {
                         const at::Tensor& indices = a[2].toTensor();
                         auto grad_output = if_needed(needs, 0, [&] {
                           // (N x C planes: reshape, not flatten / view, which vmap of this
                           // formula does not batch; the plane size spelled out for empty N)
                           const auto planes = [](const at::Tensor& t) {
                             c10::SymDimVector p(t.sym_sizes().begin(), t.sym_sizes().end() - 3);
                             p.push_back(t.sym_size(-3) * t.sym_size(-2) * t.sym_size(-1));
                             return t.reshape_symint(p);
                           };
                           return planes(grad)
                               .gather(-1, planes(indices).to(at::kLong))
                               .reshape_symint(indices.sym_sizes());
                         });
                         return {grad_output, {}, {}, {}, {}, {}, {}, {}};
                       });

}  // namespace torch_aclnn::autograd::max_pool_formulas
