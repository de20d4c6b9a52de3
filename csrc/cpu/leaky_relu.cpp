// CPU kernels of the LeakyReLU family (docs/spec.md §11): leaky_relu and
// leaky_relu_backward.
//
// The formulas, as at::vec::Vectorized ops, run through the shared
// elementwise driver (cpu/elementwise.h). They are aten's vectorised ones,
// which its scalar loop matches bit for bit (x * 1 is x):
//   forward:  x * (x > 0 ? 1 : negative_slope)
//   backward: g * (x > 0 ? 1 : negative_slope)
// in the opmath type (float32 for half/bfloat16, rounded once), with
// negative_slope rounded to it as aten rounds it. So the results are bitwise
// equal to aten's CPU kernels for every dtype, layout and thread count.
// x == 0 and NaN take the negative_slope branch, as in aten.
#include "common/entry.h"
#include "contracts/leaky_relu.h"
#include "cpu/cpu_utils.h"
#include "cpu/elementwise.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

namespace torch_aclnn::leaky_relu {
namespace {

using at::vec::Vectorized;
using cpu::run_elementwise;

// The factor x > 0 ? 1 : negative_slope, lane-wise in T = opmath type.
template <typename T>
struct Slope {
  Vectorized<T> slope, one, zero;
  explicit Slope(const Params& p) : slope(static_cast<T>(p.negative_slope)), one(T(1)), zero(T(0)) {}
  Vectorized<T> factor(const Vectorized<T>& x) const { return Vectorized<T>::blendv(slope, one, x > zero); }
};

template <typename T>
struct Forward {
  Slope<T> s;
  Vectorized<T> operator()(const Vectorized<T>& x) const { return x * s.factor(x); }
};

// self_is_result needs no formula of its own: with negative_slope >= 0 the
// forward's output is > 0 exactly where its input is.
template <typename T>
struct Backward {
  Slope<T> s;
  Vectorized<T> operator()(const Vectorized<T>& g, const Vectorized<T>& x) const { return g * s.factor(x); }
};

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self, const c10::Scalar&) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "leaky_relu_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    run_elementwise<scalar_t>(out, Forward<T>{Slope<T>(p.params)}, self);
  });
}

// grad_input: grad_output's shape and dtype, no internal overlap, and not
// partially overlapping either input.
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output, const at::Tensor& self,
                   const c10::Scalar&, bool) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "leaky_relu_backward_cpu",
                                  [&] {
                                    using T = at::opmath_type<scalar_t>;
                                    run_elementwise<scalar_t>(grad_input, Backward<T>{Slope<T>(p.params)},
                                                              grad_output, self);
                                  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  entry::impl<cpu::Backend, check_forward, forward_into>(m, "leaky_relu");
  entry::impl<cpu::Backend, check_backward, backward_into>(m, "leaky_relu_backward");
}

}  // namespace torch_aclnn::leaky_relu
