// CPU kernels of the ELU family (docs/spec.md §3): elu and elu_backward.
//
// The formulas, as at::vec::Vectorized ops, run through the shared
// elementwise driver (cpu/elementwise.h): a flat loop for operands dense with
// the same strides, an at::TensorIterator otherwise, the same formula for
// every element whatever its position, layout or thread. On AVX-512, dense
// runs evaluate the exp/expm1 of the negative branch only for the lanes that
// take it, packed side by side (apply_compacted): the same function of the
// same argument per lane.
//
// The formulas keep aten's order of operations, coefficients and at::vec
// exp/expm1 (Sleef), so results are bitwise equal to aten's vectorised path.
// Where aten runs its scalar loop instead (the tail of each contiguous run,
// strided inputs) it uses std::exp/std::expm1: measured up to 2 ulp apart in
// float32/float64, 1 ulp in float16 (torch_aclnn.testing.elu.ulp_table).
// half/bfloat16 compute in float32 and round once.
#include "common/entry.h"
#include "contracts/elu.h"
#include "cpu/cpu_utils.h"
#include "cpu/elementwise.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

namespace torch_aclnn::elu {
namespace {

using at::vec::Vectorized;
using cpu::BlendLanes;
using cpu::not_greater_equal_lanes;
using cpu::not_greater_lanes;
using cpu::run_elementwise;

// ---------------------------------------------------------------------------
// The formulas, lane-wise in T = opmath type. NaN takes the negative branch.
// x == +-0 takes the forward's positive branch (x >= 0, aten's CPU rule: +-0 *
// scale, where the negative one gives 0 * inf = NaN for an infinite alpha *
// scale or input_scale, and a zero of the other sign for negative ones) and
// the backward's negative branch (x > 0 selects the positive one, as aten's).

template <typename T>
struct Coefs {
  Vectorized<T> poscoef, negcoef, negiptcoef, zero;
  explicit Coefs(const Params& p)
      : poscoef(static_cast<T>(p.scale)),
        // alpha * scale rounded in T, as aten forms it.
        negcoef(static_cast<T>(p.alpha) * static_cast<T>(p.scale)),
        negiptcoef(static_cast<T>(p.input_scale)),
        zero(T(0)) {}
};

// Ops with a costly branch (exp/expm1 on the lanes with x < 0 or NaN, x <= 0 in the backward) say
// so (kCompact) and expose its parts: neg_lanes (bit l set where lane l
// takes that branch), arg (the exp's argument), costly (the exp) and finish
// (the result from the exp's value, whatever it holds in the other lanes).
// operator() is finish(costly(arg)), so the compacted driver
// (cpu::apply_compacted), which runs costly only on the lanes that need it,
// gives the same bits.

// elu(x) = x >= 0 ? scale * x : alpha * scale * expm1(input_scale * x)
template <typename T>
struct Forward {
  static constexpr bool kCompact = true;
  Coefs<T> c;
  int neg_lanes(const Vectorized<T>& x) const { return not_greater_equal_lanes(x, c.zero); }
  Vectorized<T> arg(const Vectorized<T>& x) const { return x * c.negiptcoef; }
  static Vectorized<T> costly(const Vectorized<T>& y) { return y.expm1(); }
  template <typename Lanes>
  Vectorized<T> finish(const Vectorized<T>& e, const Lanes& lanes, const Vectorized<T>& x) const {
    return lanes.select(e * c.negcoef, x * c.poscoef);
  }
  Vectorized<T> operator()(const Vectorized<T>& x) const {
    if (!neg_lanes(x)) return x * c.poscoef;  // every lane positive: no expm1
    return finish(costly(arg(x)), BlendLanes<T>{x >= c.zero}, x);
  }
};

// is_result = true: g * (x > 0 ? scale : input_scale * (x + alpha * scale))
// (no transcendental: nothing to pack)
template <typename T>
struct BackwardFromResult {
  static constexpr bool kCompact = false;
  Coefs<T> c;
  Vectorized<T> operator()(const Vectorized<T>& g, const Vectorized<T>& x) const {
    const Vectorized<T> pos = x > c.zero;
    if (!pos.zero_mask()) return g * c.poscoef;  // every lane positive
    return Vectorized<T>::blendv(g * c.negiptcoef * (x + c.negcoef), g * c.poscoef, pos);
  }
};

// is_result = false: g * (x > 0 ? scale : input_scale * alpha * scale * exp(input_scale * x))
template <typename T>
struct BackwardFromInput {
  static constexpr bool kCompact = true;
  Coefs<T> c;
  int neg_lanes(const Vectorized<T>&, const Vectorized<T>& x) const { return not_greater_lanes(x, c.zero); }
  Vectorized<T> arg(const Vectorized<T>&, const Vectorized<T>& x) const { return x * c.negiptcoef; }
  static Vectorized<T> costly(const Vectorized<T>& y) { return y.exp(); }
  template <typename Lanes>
  Vectorized<T> finish(const Vectorized<T>& e, const Lanes& lanes, const Vectorized<T>& g,
                       const Vectorized<T>&) const {
    return lanes.select(g * c.negiptcoef * c.negcoef * e, g * c.poscoef);
  }
  Vectorized<T> operator()(const Vectorized<T>& g, const Vectorized<T>& x) const {
    if (!neg_lanes(g, x)) return g * c.poscoef;  // every lane positive
    return finish(costly(arg(g, x)), BlendLanes<T>{x > c.zero}, g, x);
  }
};

// ---------------------------------------------------------------------------
// Operators

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self, const c10::Scalar&, const c10::Scalar&,
                  const c10::Scalar&) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "elu_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    run_elementwise<scalar_t>(out, Forward<T>{Coefs<T>(p.params)}, self);
  });
}

// grad_input: grad_output's shape and dtype, no internal overlap, and not
// partially overlapping either input.
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output, const c10::Scalar&,
                   const c10::Scalar&, const c10::Scalar&, bool is_result, const at::Tensor& self_or_result) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "elu_backward_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    if (is_result) {
      run_elementwise<scalar_t>(grad_input, BackwardFromResult<T>{Coefs<T>(p.params)}, grad_output, self_or_result);
    } else {
      run_elementwise<scalar_t>(grad_input, BackwardFromInput<T>{Coefs<T>(p.params)}, grad_output, self_or_result);
    }
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  entry::impl<cpu::Backend, check_forward, forward_into>(m, "elu");
  entry::impl<cpu::Backend, check_backward, backward_into>(m, "elu_backward");
}

}  // namespace torch_aclnn::elu
