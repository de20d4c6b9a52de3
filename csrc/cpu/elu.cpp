// CPU kernels of the ELU family (spec §3): elu and elu_backward.
//
// One elementwise driver over at::TensorIterator (which handles any shape up
// to 8 dims, 0-dim, empty and arbitrary strides without copies, and splits
// the work with at::parallel_for), and a flat loop for the common case of
// operands that are dense with the same strides (run_dense). Every element,
// in every layout and at every position, goes through the same
// at::vec::Vectorized formula: dense runs are loaded straight from memory,
// strided runs are gathered into a small block first, and the last partial
// block of a run uses partial loads and stores instead of a scalar loop.
// Results therefore do not depend on strides, alignment or the number of
// threads.
//
// The formulas keep aten's order of operations, coefficients and at::vec
// exp/expm1 (Sleef), so results are bitwise equal to aten's vectorised path.
// Where aten runs its scalar loop instead (the tail of each contiguous run,
// strided inputs) it uses std::exp/std::expm1: measured up to 2 ulp apart in
// float32/float64, 1 ulp in float16 (torch_aclnn.testing.elu.ulp_table).
// half/bfloat16 compute in float32 and round once.
#include "contracts/elu.h"
#include "cpu/cpu_utils.h"

// GCC 12 flags the _mm512_undefined_*() placeholders inside its own
// half<->float conversion intrinsics, inlined through at::vec, as "may be
// used uninitialized" (GCC bug 105593, fixed in GCC 13): silence that one
// false positive.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/TensorIterator.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>

namespace torch_aclnn::elu {
namespace {

using at::vec::Vectorized;

// ---------------------------------------------------------------------------
// The formulas, lane-wise in T = opmath type. x == 0 (and NaN) take the
// negative branch: the positive one is selected only where x > 0.

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

// elu(x) = x > 0 ? scale * x : alpha * scale * expm1(input_scale * x)
template <typename T>
struct Forward {
  Coefs<T> c;
  Vectorized<T> operator()(const Vectorized<T>& x) const {
    const Vectorized<T> pos = x > c.zero;
    if (!pos.zero_mask()) return x * c.poscoef;  // every lane positive: no expm1
    return Vectorized<T>::blendv((x * c.negiptcoef).expm1() * c.negcoef, x * c.poscoef, pos);
  }
};

// is_result = true:  g * (x > 0 ? scale : input_scale * (x + alpha * scale))
// is_result = false: g * (x > 0 ? scale : input_scale * alpha * scale * exp(input_scale * x))
template <typename T, bool is_result>
struct Backward {
  Coefs<T> c;
  Vectorized<T> operator()(const Vectorized<T>& g, const Vectorized<T>& x) const {
    const Vectorized<T> pos = x > c.zero;
    if (!pos.zero_mask()) return g * c.poscoef;  // every lane positive
    Vectorized<T> neg;
    if constexpr (is_result) {
      neg = g * c.negiptcoef * (x + c.negcoef);
    } else {
      neg = g * c.negiptcoef * c.negcoef * (x * c.negiptcoef).exp();
    }
    return Vectorized<T>::blendv(neg, g * c.poscoef, pos);
  }
};

// ---------------------------------------------------------------------------
// The driver.

// out[0:n] = op(in...[0:n]) for n <= Vectorized<scalar_t>::size() contiguous
// elements; half/bfloat16 lanes are widened to float32 and rounded once.
template <typename scalar_t, typename Op, typename... In>
C10_ALWAYS_INLINE void apply_block(const Op& op, scalar_t* out, int64_t n, const In*... in) {
  using V = Vectorized<scalar_t>;
  const bool full = n == V::size();
  auto load = [&](const scalar_t* p) { return full ? V::loadu(p) : V::loadu(p, n); };
  V r;
  if constexpr (c10::is_reduced_floating_point_v<scalar_t>) {
    auto widen = [&](const scalar_t* p) { return at::vec::convert_to_float<scalar_t>(load(p)); };
    auto lanes = std::make_tuple(widen(in)...);
    auto lo = std::apply([&](auto&... t) { return op(std::get<0>(t)...); }, lanes);
    auto hi = std::apply([&](auto&... t) { return op(std::get<1>(t)...); }, lanes);
    r = at::vec::convert_from_float<scalar_t>(lo, hi);
  } else {
    r = op(load(in)...);
  }
  if (full) {
    r.store(out);
  } else {
    r.store(out, n);
  }
}

// out[0:n] = op(in...[0:n]) over n contiguous elements, block by block.
template <typename scalar_t, typename Op, typename... In>
C10_ALWAYS_INLINE void apply_dense(const Op& op, scalar_t* out, int64_t n, const In*... in) {
  constexpr int64_t K = Vectorized<scalar_t>::size();
  for (int64_t i = 0; i < n; i += K) apply_block(op, out + i, std::min(K, n - i), (in + i)...);
}

// Runs op over iter (output 0, inputs 1..nin, all of dtype scalar_t).
template <typename scalar_t, int nin, typename Op>
void run(at::TensorIteratorBase& iter, const Op& op) {
  static_assert(nin == 1 || nin == 2);
  constexpr int nt = nin + 1;
  constexpr int64_t K = Vectorized<scalar_t>::size();
  constexpr int64_t es = sizeof(scalar_t);
  auto loop = [&](char** data, const int64_t* strides, int64_t n0, int64_t n1) {
    char* ptr[nt];
    std::copy(data, data + nt, ptr);
    const int64_t* outer = strides + nt;
    bool dense = true;
    for (int k = 0; k < nt; ++k) dense = dense && strides[k] == es;
    for (int64_t j = 0; j < n1; ++j) {
      auto* out = reinterpret_cast<scalar_t*>(ptr[0]);
      const auto* a = reinterpret_cast<const scalar_t*>(ptr[1]);
      const auto* b = reinterpret_cast<const scalar_t*>(ptr[nt - 1]);
      if (dense) {
        if constexpr (nin == 1) {
          apply_dense(op, out, n0, a);
        } else {
          apply_dense(op, out, n0, a, b);
        }
      } else {
        // Gather a block of each operand, compute it like a dense one, scatter.
        scalar_t buf[nt][K];
        for (int64_t i = 0; i < n0; i += K) {
          const int64_t n = std::min(K, n0 - i);
          for (int k = 1; k < nt; ++k) {
            const char* p = ptr[k] + i * strides[k];
            for (int64_t l = 0; l < n; ++l) buf[k][l] = *reinterpret_cast<const scalar_t*>(p + l * strides[k]);
          }
          if constexpr (nin == 1) {
            apply_block(op, buf[0], n, static_cast<const scalar_t*>(buf[1]));
          } else {
            apply_block(op, buf[0], n, static_cast<const scalar_t*>(buf[1]), static_cast<const scalar_t*>(buf[2]));
          }
          char* p = ptr[0] + i * strides[0];
          for (int64_t l = 0; l < n; ++l) *reinterpret_cast<scalar_t*>(p + l * strides[0]) = buf[0][l];
        }
      }
      for (int k = 0; k < nt; ++k) ptr[k] += outer[k];
    }
  };
  iter.for_each(loop);
}

// When every operand is non-overlapping and dense with the output's sizes and
// strides (a contiguous or channels_last tensor, and the empty_like made for
// it): one flat loop over memory, without building a TensorIterator, which
// costs more than the arithmetic on a small tensor. The same formula block by
// block as run(), lane by lane, so the results are identical. Returns false
// (nothing done) otherwise.
template <typename scalar_t, typename Op, typename... In>
bool run_dense(at::Tensor& out, const Op& op, const In&... in) {
  if (!out.is_non_overlapping_and_dense() ||
      !((in.sizes() == out.sizes() && in.strides() == out.strides()) && ...)) {
    return false;
  }
  scalar_t* o = out.mutable_data_ptr<scalar_t>();
  const auto inputs = std::make_tuple(in.template const_data_ptr<scalar_t>()...);
  at::parallel_for(0, out.numel(), cpu::kGrainSize, [&](int64_t b, int64_t e) {
    std::apply([&](const auto*... x) { apply_dense(op, o + b, e - b, (x + b)...); }, inputs);
  });
  return true;
}

// out = op(in...): run_dense when it applies, else run over a TensorIterator.
template <typename scalar_t, typename Op, typename... In>
void run_elementwise(at::Tensor& out, const Op& op, const In&... in) {
  if (run_dense<scalar_t>(out, op, in...)) return;
  at::TensorIteratorConfig config;
  config.resize_outputs(false).add_output(out);
  (config.add_const_input(in), ...);
  auto iter = config.build();
  run<scalar_t, sizeof...(In)>(iter, op);
}

// ---------------------------------------------------------------------------
// Operators

at::Tensor forward_cpu(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                       const c10::Scalar& input_scale) {
  const Params p = check_forward(self, alpha, scale, input_scale);
  at::Tensor out = cpu::empty_like(self);
  if (out.numel() == 0) return out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "elu_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    run_elementwise<scalar_t>(out, Forward<T>{Coefs<T>(p)}, self);
  });
  return out;
}

// grad_input: defined, grad_output's shape and dtype, no internal overlap,
// and not partially overlapping either input.
void backward_into(const at::Tensor& grad_output, const Params& p, bool is_result, const at::Tensor& self_or_result,
                   at::Tensor& grad_input) {
  if (grad_input.numel() == 0) return;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "elu_backward_cpu", [&] {
    using T = at::opmath_type<scalar_t>;
    if (is_result) {
      run_elementwise<scalar_t>(grad_input, Backward<T, true>{Coefs<T>(p)}, grad_output, self_or_result);
    } else {
      run_elementwise<scalar_t>(grad_input, Backward<T, false>{Coefs<T>(p)}, grad_output, self_or_result);
    }
  });
}

at::Tensor backward_cpu(const at::Tensor& grad_output, const c10::Scalar& alpha, const c10::Scalar& scale,
                        const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result) {
  const Params p = check_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result);
  at::Tensor grad_input = cpu::empty_like(grad_output);
  backward_into(grad_output, p, is_result, self_or_result, grad_input);
  return grad_input;
}

void backward_out_cpu(const at::Tensor& grad_output, const c10::Scalar& alpha, const c10::Scalar& scale,
                      const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result,
                      at::Tensor& grad_input) {
  const Params p = check_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result, grad_input);
  at::assert_no_internal_overlap(grad_input);
  if (grad_input.numel() == 0) return;
  write_out(
      grad_input, backward_writes_in_place(grad_input, grad_output, self_or_result),
      [&] { return cpu::empty_like(grad_output); },
      [&](at::Tensor& dst) { backward_into(grad_output, p, is_result, self_or_result, dst); });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  m.impl("elu", forward_cpu);
  m.impl("elu_backward", backward_cpu);
  m.impl("elu_backward.grad_input", backward_out_cpu);
}

}  // namespace torch_aclnn::elu
