// Reverse-mode derivatives of the AdaptiveAvgPool3d family (docs/spec.md
// §13; forward-mode tangents and vmap: torch_aclnn/ops/adaptive_avg_pool.py).
// adaptive_avg_pool3d is linear in self: its adjoint is
// adaptive_avg_pool3d_backward, for which self lends only its shape, dtype
// and layout (self is kept, as aten's derivative keeps it: the gradient takes
// its layout). adaptive_avg_pool3d_backward is linear in
// grad_output: its adjoint pools the incoming gradient (of self's shape) to
// grad_output's D, H, W with the same windows, which is adaptive_avg_pool3d.
#include "autograd/derivative.h"

namespace torch_aclnn::autograd::adaptive_avg_pool_formulas {
namespace {

// t's last three sizes, as the IValue a `SymInt[3]` argument takes.
c10::IValue spatial_sizes(const at::Tensor& t) {
  const auto s = t.sym_sizes().slice(t.dim() - 3);
  if (const auto sizes = c10::asIntArrayRefSlowOpt(s)) return c10::IValue(sizes->vec());
  return c10::IValue(s);
}

}  // namespace

// adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor
TORCH_ACLNN_DERIVATIVE(adaptive_avg_pool3d, {Keep::value, Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>&) -> std::vector<at::Tensor> {
                         return {call("adaptive_avg_pool3d_backward", {grad, a[0]}), {}};
                       });

// adaptive_avg_pool3d_backward(Tensor grad_output, Tensor self) -> Tensor
TORCH_ACLNN_DERIVATIVE(adaptive_avg_pool3d_backward, {Keep::like, Keep::like},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>& needs)
                           -> std::vector<at::Tensor> {
                         auto grad_output = if_needed(needs, 0, [&] {
                           return call("adaptive_avg_pool3d", {grad, spatial_sizes(a[0].toTensor())});
                         });
                         return {grad_output, {}};
                       });

}  // namespace torch_aclnn::autograd::adaptive_avg_pool_formulas
