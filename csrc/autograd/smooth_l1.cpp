// Reverse-mode derivatives of smooth_l1_loss (docs/spec.md §4; forward-mode
// tangents and vmap: torch_aclnn/ops/smooth_l1.py). With d = self - target
// (broadcast), l'(d) = d / beta inside |d| < beta, else sign(d), and
// B(g) = smooth_l1_loss_backward(g, self, target, ...) = norm * l'(d) * g:
//   smooth_l1_loss            d/dself = sum_to(B(grad), self), d/dtarget = -sum_to(B(grad), target)
//   smooth_l1_loss_backward   linear in grad_output: sum_to(B(gg), grad_output);
//                             d/dself, d/dtarget: second() summed to each, negated for target
#include "autograd/derivative.h"

#include <ATen/ExpandUtils.h>

namespace torch_aclnn::autograd::smooth_l1_formulas {
namespace {

// d/dself of smooth_l1_loss_backward applied to v: norm / beta * [|d| < beta] * v * grad_output, in the
// broadcast shape. |d| is compared in the kernels' opmath; the mask is piecewise constant in self and
// target (l''(d) = 0 everywhere for beta == 0).
at::Tensor second(const at::Tensor& v, const at::Tensor& grad_output, const at::Tensor& self,
                  const at::Tensor& target, int64_t reduction, double beta) {
  const at::Tensor s = self.detach(), t = target.detach();
  at::Tensor d = s - t;
  if (d.scalar_type() == at::kHalf || d.scalar_type() == at::kBFloat16) d = s.to(at::kFloat) - t.to(at::kFloat);
  const at::Tensor h = at::where(d.abs() < beta, v * grad_output, at::Scalar(0.0));
  if (!(beta > 0)) return h;
  c10::SymInt numel = 1;
  for (const c10::SymInt& n : at::infer_size_symint(self.sym_sizes(), target.sym_sizes())) numel = numel * n;
  const bool mean = reduction == 1 && numel > 0;
  return mean ? h * at::Scalar(c10::SymFloat(1.0) / c10::SymFloat(numel) / c10::SymFloat(beta)) : h * (1.0 / beta);
}

}  // namespace

// smooth_l1_loss(Tensor self, Tensor target, int reduction, float beta)
TORCH_ACLNN_DERIVATIVE(smooth_l1_loss, {Keep::value, Keep::value, Keep::none, Keep::none},
                       [](const Args& a, const at::Tensor& grad, const std::vector<bool>& needs)
                           -> std::vector<at::Tensor> {
                         if (!needs[0] && !needs[1]) return {{}, {}, {}, {}};
                         const at::Tensor& self = a[0].toTensor();
                         const at::Tensor& target = a[1].toTensor();
                         const at::Tensor g = call("smooth_l1_loss_backward", {grad, self, target, a[2], a[3]});
                         return {if_needed(needs, 0, [&] { return sum_to_like(g, self); }),
                                 if_needed(needs, 1, [&] { return -sum_to_like(g, target); }), {}, {}};
                       });

// smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, float beta)
TORCH_ACLNN_DERIVATIVE(smooth_l1_loss_backward, {Keep::value, Keep::value, Keep::value, Keep::none, Keep::none},
                       [](const Args& a, const at::Tensor& gg, const std::vector<bool>& needs)
                           -> std::vector<at::Tensor> {
                         const at::Tensor& grad_output = a[0].toTensor();
                         const at::Tensor& self = a[1].toTensor();
                         const at::Tensor& target = a[2].toTensor();
                         at::Tensor h;
                         if (needs[1] || needs[2]) h = second(gg, grad_output, self, target, a[3].toInt(), a[4].toDouble());
                         return {if_needed(needs, 0, [&] {
                                   return sum_to_like(call("smooth_l1_loss_backward", {gg, self, target, a[3], a[4]}),
                                                      grad_output);
                                 }),
                                 if_needed(needs, 1, [&] { return sum_to_like(h, self); }),
                                 if_needed(needs, 2, [&] { return -sum_to_like(h, target); }), {}, {}};
                       });

}  // namespace torch_aclnn::autograd::smooth_l1_formulas
