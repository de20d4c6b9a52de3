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
// threads. On AVX-512, dense runs evaluate the exp/expm1 of the negative
// branch only for the lanes that take it, packed side by side
// (apply_compacted): the same function of the same argument per lane.
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
#include <array>
#include <tuple>
#include <type_traits>
#if defined(CPU_CAPABILITY_AVX512)
#include <immintrin.h>
#endif

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

// Ops with a costly branch (exp/expm1 on the lanes with x <= 0 or NaN) say
// so (kCompact) and expose its parts: neg_lanes (bit l set where lane l
// takes that branch), arg (the exp's argument), costly (the exp) and finish
// (the result from the exp's value, whatever it holds in the other lanes).
// operator() is finish(costly(arg)), so the compacted driver below, which
// runs costly only on the lanes that need it, gives the same bits.

// elu(x) = x > 0 ? scale * x : alpha * scale * expm1(input_scale * x)
template <typename T>
struct Forward {
  static constexpr bool kCompact = true;
  Coefs<T> c;
  int neg_lanes(const Vectorized<T>& x) const { return (x > c.zero).zero_mask(); }
  Vectorized<T> arg(const Vectorized<T>& x) const { return x * c.negiptcoef; }
  static Vectorized<T> costly(const Vectorized<T>& y) { return y.expm1(); }
  Vectorized<T> finish(const Vectorized<T>& e, const Vectorized<T>& x) const {
    return Vectorized<T>::blendv(e * c.negcoef, x * c.poscoef, x > c.zero);
  }
  Vectorized<T> operator()(const Vectorized<T>& x) const {
    if (!neg_lanes(x)) return x * c.poscoef;  // every lane positive: no expm1
    return finish(costly(arg(x)), x);
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
  int neg_lanes(const Vectorized<T>&, const Vectorized<T>& x) const { return (x > c.zero).zero_mask(); }
  Vectorized<T> arg(const Vectorized<T>&, const Vectorized<T>& x) const { return x * c.negiptcoef; }
  static Vectorized<T> costly(const Vectorized<T>& y) { return y.exp(); }
  Vectorized<T> finish(const Vectorized<T>& e, const Vectorized<T>& g, const Vectorized<T>& x) const {
    return Vectorized<T>::blendv(g * c.negiptcoef * c.negcoef * e, g * c.poscoef, x > c.zero);
  }
  Vectorized<T> operator()(const Vectorized<T>& g, const Vectorized<T>& x) const {
    if (!neg_lanes(g, x)) return g * c.poscoef;  // every lane positive
    return finish(costly(arg(g, x)), g, x);
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

#if defined(CPU_CAPABILITY_AVX512)
// The float32 vectors of K = Vectorized<scalar_t>::size() contiguous elements
// (half/bfloat16: two, widened), and back (rounded once).
template <typename scalar_t>
C10_ALWAYS_INLINE auto float_vectors(const scalar_t* p) {
  if constexpr (c10::is_reduced_floating_point_v<scalar_t>) {
    const auto [lo, hi] = at::vec::convert_to_float<scalar_t>(Vectorized<scalar_t>::loadu(p));
    return std::array<Vectorized<float>, 2>{lo, hi};
  } else {
    return std::array<Vectorized<float>, 1>{Vectorized<float>::loadu(p)};
  }
}

template <typename scalar_t, size_t m>
C10_ALWAYS_INLINE void store_float_vectors(scalar_t* p, const std::array<Vectorized<float>, m>& v) {
  if constexpr (c10::is_reduced_floating_point_v<scalar_t>) {
    at::vec::convert_from_float<scalar_t>(v[0], v[1]).store(p);
  } else {
    v[0].store(p);
  }
}

// out[0:n] = op(in...[0:n]) for ops with a costly branch (kCompact), float32
// opmath, AVX-512: blocks of kBlock elements in three passes. (1) The
// branch's arguments of the lanes that take it are packed side by side
// (vcompressps) into a buffer; (2) the costly function runs over the packed
// buffer only, a whole vector at a time; (3) its values are unpacked back to
// their lanes (vexpandps) and finished. The same function of the same
// argument, lane by lane, as op(), so bitwise the same; with random signs it
// evaluates about half as many vectors. Returns the number of elements done
// (whole blocks); apply_dense does the rest.
template <typename scalar_t, typename Op, typename... In>
int64_t apply_compacted(const Op& op, scalar_t* out, int64_t n, const In*... in) {
  using fVec = Vectorized<float>;
  constexpr int64_t K = Vectorized<scalar_t>::size(), F = fVec::size();
  constexpr size_t H = K / F;  // float vectors per vector of scalar_t
  // Block length, measured on AVX-512 (Zen 4, 2 threads, 32M elements and
  // 128K in cache): float32 with 1024 ran 5-10% slower than aten on DRAM-sized
  // tensors (memory and exps in turn, too little overlap), with 256 level with
  // or faster than it; bfloat16 with 256 lost most of its gain (in cache 0.71
  // against 0.55 ns per element with 1024).
  constexpr int64_t kBlock = sizeof(scalar_t) == 4 ? 256 : 1024;
  alignas(64) float packed[kBlock + F];
  // Every input's float vectors at element i; f applied to the h-th of each.
  const auto load = [&](int64_t i) { return std::make_tuple(float_vectors(in + i)...); };
  const auto apply = [](const auto& lanes, size_t h, const auto& f) {
    return std::apply([&](const auto&... v) { return f(v[h]...); }, lanes);
  };
  const auto neg_lanes = [&](const auto&... v) { return static_cast<__mmask16>(op.neg_lanes(v...)); };
  const auto arg = [&](const auto&... v) { return op.arg(v...); };
  int64_t done = 0;
  for (; done + kBlock <= n; done += kBlock) {
    int64_t count = 0;
    for (int64_t i = done; i < done + kBlock; i += K) {
      const auto lanes = load(i);
      for (size_t h = 0; h < H; ++h) {
        const __mmask16 mask = apply(lanes, h, neg_lanes);
        _mm512_storeu_ps(packed + count, _mm512_maskz_compress_ps(mask, apply(lanes, h, arg)));
        count += _mm_popcnt_u32(mask);
      }
    }
    fVec(0.0f).store(packed + count);  // the last packed vector's lanes past count: defined values
    for (int64_t j = 0; j < count; j += F) Op::costly(fVec::loadu(packed + j)).store(packed + j);
    int64_t next = 0;
    for (int64_t i = done; i < done + kBlock; i += K) {
      const auto lanes = load(i);
      std::array<fVec, H> result;
      for (size_t h = 0; h < H; ++h) {
        const __mmask16 mask = apply(lanes, h, neg_lanes);
        const fVec e = _mm512_maskz_expand_ps(mask, _mm512_loadu_ps(packed + next));
        next += _mm_popcnt_u32(mask);
        result[h] = apply(lanes, h, [&](const auto&... v) { return op.finish(e, v...); });
      }
      store_float_vectors(out + i, result);
    }
  }
  return done;
}
#endif

// out[0:n] = op(in...[0:n]) over n contiguous elements, block by block.
template <typename scalar_t, typename Op, typename... In>
C10_ALWAYS_INLINE void apply_dense(const Op& op, scalar_t* out, int64_t n, const In*... in) {
  constexpr int64_t K = Vectorized<scalar_t>::size();
  int64_t i = 0;
#if defined(CPU_CAPABILITY_AVX512)
  if constexpr (Op::kCompact && std::is_same_v<at::opmath_type<scalar_t>, float>) {
    i = apply_compacted(op, out, n, in...);
  }
#endif
  for (; i < n; i += K) apply_block(op, out + i, std::min(K, n - i), (in + i)...);
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
      run_elementwise<scalar_t>(grad_input, BackwardFromResult<T>{Coefs<T>(p)}, grad_output, self_or_result);
    } else {
      run_elementwise<scalar_t>(grad_input, BackwardFromInput<T>{Coefs<T>(p)}, grad_output, self_or_result);
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
