// CPU kernels of the SmoothL1 family (docs/spec.md §4).
//
// Inputs are first brought to the promoted dtype (a no-op in the common
// same-dtype case); a TensorIterator then handles broadcasting and arbitrary
// strides. All arithmetic runs in opmath (float32 for half/bfloat16, rounded
// once when stored), with the scalar and the at::vec forms of each formula
// doing the same operations in the same order, so every element's result is
// the same whichever path computes it.
//
//   loss         z = |self - target|;  z < beta ? 0.5 * z * z / beta : z - 0.5 * beta
//   grad_input   d = self - target;    r = |d| >= beta ? sign(d) : d / beta   (sign(0) = 0)
//                grad_input = norm * r * grad_output,
//                norm = 1 / numel(broadcast(self, target)) for 'mean', else 1
//   (NaN d fails |d| >= beta and gives d / beta = NaN, so NaN propagates.)
//
// 'none' and the backward write every output element exactly once (no
// zero-fill pass); both return a contiguous tensor of the broadcast shape.
//
// 'mean' / 'sum' reduce deterministically: the broadcast elements, in the
// TensorIterator's order, are cut into fixed chunks of kChunk elements (fixed
// boundaries, whatever the thread count). Each chunk sums its opmath losses in
// kLanes float64 lanes (element p in lane p % kLanes, whatever the vector
// width); the lanes, then the chunk sums, are added pairwise in a fixed order.
// The result therefore depends neither on the number of threads nor on the
// instruction set the kernels were built for (default, AVX2, AVX-512: the
// same bits), and its error is that of the per-element opmath losses plus ~1
// rounding of the output dtype ('mean' divides the float64 sum by the element
// count).
#include "contracts/smooth_l1.h"
#include "cpu/cpu_utils.h"
#include "cpu/elementwise.h"

#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#include <ATen/native/cpu/Loops.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
#include <immintrin.h>
#endif

namespace torch_aclnn::smooth_l1 {
namespace {

using at::vec::Vectorized;

// ---------------------------------------------------------------------------
// The formulas, over opmath T (float or double), as scalars and as vectors.

// x / beta. Where 1 / beta is an exact, normal power of two (beta = 1, 0.5,
// 2, ...: the default beta is 1) this is x * (1 / beta): both are the one
// rounding of the same real number, so the results are bitwise equal, and a
// multiplication is cheaper than a division (bfloat16 'mean' backward, one
// thread: ~5%). Normal: under flush-to-zero a subnormal inverse would be 0.
template <typename T>
struct DivBy {
  T beta, inverse;
  bool exact;
  explicit DivBy(T b) : beta(b), inverse(T(1) / b) {
    int e = 0;
    exact = std::isfinite(b) && b > T(0) && std::frexp(b, &e) == T(0.5) &&
            inverse >= std::numeric_limits<T>::min() && std::isfinite(inverse);
  }
  T operator()(T x) const { return exact ? x * inverse : x / beta; }
  Vectorized<T> operator()(const Vectorized<T>& x) const {
    return exact ? x * Vectorized<T>(inverse) : x / Vectorized<T>(beta);
  }
};

template <typename T>
struct Loss {
  T beta, half_beta;
  DivBy<T> by_beta;
  explicit Loss(double b)
      : beta(static_cast<T>(b)), half_beta(static_cast<T>(0.5) * static_cast<T>(b)), by_beta(beta) {}

  T operator()(T a, T b) const {
    const T z = std::abs(a - b);
    return z < beta ? by_beta(static_cast<T>(0.5) * z * z) : z - half_beta;
  }
  Vectorized<T> operator()(const Vectorized<T>& a, const Vectorized<T>& b) const {
    const Vectorized<T> z = (a - b).abs();
    const Vectorized<T> vbeta(beta);
    const Vectorized<T> quadratic = by_beta(Vectorized<T>(static_cast<T>(0.5)) * z * z);
    const Vectorized<T> linear = z - Vectorized<T>(half_beta);
    return Vectorized<T>::blendv(linear, quadratic, z < vbeta);
  }
};

// r = |d| >= beta ? sign(d) : d / beta. For a finite beta > 0 this equals
// clamp(d / beta, -1, 1), bitwise: |d| >= beta gives |d / beta| >= 1 after
// rounding (rounding is monotone), so the clamp yields sign(d); |d| < beta
// gives |d / beta| <= 1, left as it is; a NaN d gives d / beta = NaN, which
// the clamp passes through (at::vec::clamp and std::min/std::max keep a NaN
// first operand). Two min/max instead of three compares and three blends.
// beta = 0 (d / 0 is +-inf, or NaN for d = 0, where sign(0) = 0 is wanted)
// and beta = inf keep the compare-and-select form.
template <typename T>
struct Grad {
  T beta, norm;
  DivBy<T> by_beta;
  bool clamp;
  Grad(double b, double n)
      : beta(static_cast<T>(b)), norm(static_cast<T>(n)), by_beta(beta), clamp(std::isfinite(beta) && beta > T(0)) {}

  T operator()(T g, T a, T b) const {
    const T d = a - b;
    T r;
    if (clamp) {
      r = std::min(std::max(by_beta(d), T(-1)), T(1));
    } else {
      const T sign = d > T(0) ? T(1) : (d < T(0) ? T(-1) : T(0));
      r = std::abs(d) >= beta ? sign : by_beta(d);
    }
    return norm * r * g;
  }
  Vectorized<T> operator()(const Vectorized<T>& g, const Vectorized<T>& a, const Vectorized<T>& b) const {
    const Vectorized<T> d = a - b;
    Vectorized<T> r;
    if (clamp) {
      r = at::vec::clamp(by_beta(d), Vectorized<T>(T(-1)), Vectorized<T>(T(1)));
    } else {
      const Vectorized<T> zero(T(0));
      const Vectorized<T> sign = Vectorized<T>::blendv(
          Vectorized<T>::blendv(zero, Vectorized<T>(T(-1)), d < zero), Vectorized<T>(T(1)), d > zero);
      r = Vectorized<T>::blendv(by_beta(d), sign, d.abs() >= Vectorized<T>(beta));
    }
    return Vectorized<T>(norm) * r * g;
  }
};

// Applies an opmath vector function to Vectorized<scalar_t> arguments
// (half/bfloat16: widened to two float vectors, narrowed once).
template <typename scalar_t, typename F, typename... V>
inline Vectorized<scalar_t> apply_vec(const F& f, const V&... v) {
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    const auto wide = std::make_tuple(at::vec::convert_to_float<scalar_t>(v)...);
    return std::apply(
        [&](const auto&... w) {
          return at::vec::convert_from_float<scalar_t>(f(std::get<0>(w)...), f(std::get<1>(w)...));
        },
        wide);
  } else {
    return f(v...);
  }
}

// ---------------------------------------------------------------------------
// Elementwise kernels: the 'none' loss and grad_input.

// Operands dense with the output's sizes and strides (no broadcasting: the
// common case) go through the flat driver of cpu/elementwise.h, which runs
// the same vector forms (partial vectors at the ends instead of the scalar
// forms, which give the same values) and streams the stores of passes larger
// than the cache; anything else through TensorIterator's cpu_kernel_vec.

// Grad with a single grad_output value ('mean' / 'sum': a 0-dim grad_output),
// broadcast to every lane as cpu_kernel_vec broadcasts a stride-0 operand.
template <typename T>
struct GradOfOne {
  Grad<T> f;
  T g;
  Vectorized<T> operator()(const Vectorized<T>& a, const Vectorized<T>& b) const { return f(Vectorized<T>(g), a, b); }
};

void loss_none_into(const at::Tensor& self, const at::Tensor& target, double beta, at::Tensor& out) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "smooth_l1_loss_cpu", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    const Loss<opmath_t> f(beta);
    if (cpu::run_dense<scalar_t>(out, f, self, target)) return;
    auto iter = at::TensorIteratorConfig().add_output(out).add_const_input(self).add_const_input(target).build();
    at::native::cpu_kernel_vec(
        iter,
        [f](scalar_t a, scalar_t b) -> scalar_t {
          return static_cast<scalar_t>(f(static_cast<opmath_t>(a), static_cast<opmath_t>(b)));
        },
        [f](Vectorized<scalar_t> a, Vectorized<scalar_t> b) { return apply_vec<scalar_t>(f, a, b); });
  });
}

void grad_into(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target, double beta,
               double norm, at::Tensor& out) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "smooth_l1_loss_backward_cpu", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    const Grad<opmath_t> f(beta, norm);
    if (grad_output.numel() == 1) {
      const GradOfOne<opmath_t> one{f, static_cast<opmath_t>(grad_output.const_data_ptr<scalar_t>()[0])};
      if (cpu::run_dense<scalar_t>(out, one, self, target)) return;
    } else if (cpu::run_dense<scalar_t>(out, f, grad_output, self, target)) {
      return;
    }
    auto iter = at::TensorIteratorConfig()
                    .add_output(out)
                    .add_const_input(grad_output)
                    .add_const_input(self)
                    .add_const_input(target)
                    .build();
    at::native::cpu_kernel_vec(
        iter,
        [f](scalar_t g, scalar_t a, scalar_t b) -> scalar_t {
          return static_cast<scalar_t>(
              f(static_cast<opmath_t>(g), static_cast<opmath_t>(a), static_cast<opmath_t>(b)));
        },
        [f](Vectorized<scalar_t> g, Vectorized<scalar_t> a, Vectorized<scalar_t> b) {
          return apply_vec<scalar_t>(f, g, a, b);
        });
  });
}

// ---------------------------------------------------------------------------
// Reduction ('mean' / 'sum').
//
// The sum has the same bits in every build (default, AVX2, AVX-512): each
// loss is the same IEEE operations in every build (setup.py compiles the CPU
// kernels with -ffp-contract=off, so no build fuses a multiply and an add),
// and the order of the additions depends on the element positions alone,
// never on the vector width:
//   - the broadcast elements, in the TensorIterator's order, are cut into
//     chunks of kChunk elements (fixed boundaries, whatever the thread count);
//   - element p of a chunk (p = 0, 1, ...) is added to float64 lane
//     p % kLanes; each lane adds its elements in order, from +0.0;
//   - a chunk's kLanes lanes are added pairwise in one fixed order
//     (lane_total), and the chunk sums pairwise in chunk order (pairwise_sum).
// Whole vectors of losses are added lane by lane (kLanes is a whole number
// of vectors in every build). Elements that do not start at a multiple of
// kLanes (after a row's or a block's tail) are staged, and added as one
// zero-padded group once kLanes are staged or the chunk ends: loss(0, 0) is
// +0 for every beta >= 0, and x + (+0) = x for every lane value x (never -0:
// lanes start at +0 and losses are >= +0 or NaN).

// Elements per chunk: the unit of parallel work and of the fixed summation
// order. Lanes: the float64 accumulators of a chunk. Blocks: the unit in
// which strided operands are gathered.
constexpr int64_t kChunk = 16384;
constexpr int kLanes = 16;
constexpr int64_t kBlock = 256;

// The kLanes lanes held in acc (lane k in element k % kD of acc[k / kD]),
// added pairwise: lane[k] = lane[k] + lane[k + w] for k < w, w = kLanes / 2, ..., 1.
template <size_t N>
double lane_total(const Vectorized<double> (&acc)[N]) {
  constexpr int kD = Vectorized<double>::size();
  static_assert(N * kD == kLanes);
  alignas(64) double lanes[kLanes];
  for (size_t j = 0; j < N; ++j) acc[j].store(lanes + j * kD);
  for (int w = kLanes / 2; w >= 1; w /= 2) {
    for (int k = 0; k < w; ++k) lanes[k] = lanes[k] + lanes[k + w];
  }
  return lanes[0];
}

// The kLanes float64 lanes of one chunk. add(j, v) adds the opmath vector v
// to lanes j * v.size() ... (j + 1) * v.size() - 1, element by element.
template <typename T>
struct Lanes;

template <>
struct Lanes<double> {
  static constexpr int kIn = Vectorized<double>::size();  // lanes per add
  static_assert(kLanes % kIn == 0);
  Vectorized<double> acc[kLanes / kIn];
  Lanes() {
    for (auto& a : acc) a = Vectorized<double>(0.0);
  }
  void add(int j, const Vectorized<double>& v) { acc[j] += v; }
  double total() const { return lane_total(acc); }
};

template <>
struct Lanes<float> {
  static constexpr int kD = Vectorized<double>::size();
  static constexpr int kIn = Vectorized<float>::size();  // lanes per add
  static_assert(kIn == 2 * kD && kLanes % kIn == 0);
  Vectorized<double> acc[kLanes / kD];
  Lanes() {
    for (auto& a : acc) a = Vectorized<double>(0.0);
  }
  // Widened to float64 (exact), then added.
  void add(int j, const Vectorized<float>& v) {
#if defined(CPU_CAPABILITY_AVX512)
    const __m512 x = v;
    acc[2 * j] += Vectorized<double>(_mm512_cvtps_pd(_mm512_castps512_ps256(x)));
    acc[2 * j + 1] += Vectorized<double>(_mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1)));
#elif defined(CPU_CAPABILITY_AVX2)
    const __m256 x = v;
    acc[2 * j] += Vectorized<double>(_mm256_cvtps_pd(_mm256_castps256_ps128(x)));
    acc[2 * j + 1] += Vectorized<double>(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
#else
    alignas(64) float f[kIn];
    alignas(64) double d[kIn];
    v.store(f);
    for (int k = 0; k < kIn; ++k) d[k] = f[k];
    acc[2 * j] += Vectorized<double>::loadu(d);
    acc[2 * j + 1] += Vectorized<double>::loadu(d + kD);
#endif
  }
  double total() const { return lane_total(acc); }
};

// The float64 sum of the opmath losses of one chunk, fed its elements in
// order (add, any number of calls; then total).
template <typename scalar_t>
struct ChunkSum {
  using opmath_t = at::opmath_type<scalar_t>;
  static constexpr int64_t kVec = Vectorized<scalar_t>::size();
  // Elements per group: whole vectors and whole sets of kLanes lanes.
  static constexpr int64_t kGroup = std::max<int64_t>(kVec, kLanes);
  // Opmath vectors per set of kLanes lanes.
  static constexpr int kPerLanes = kLanes / Lanes<opmath_t>::kIn;
  static_assert(kGroup % kVec == 0 && kGroup % kLanes == 0 && kBlock % kGroup == 0);

  const Loss<opmath_t>& f;
  Lanes<opmath_t> lanes;
  int64_t staged = 0;  // elements in sa / sb, < kLanes
  alignas(64) scalar_t sa[kGroup];
  alignas(64) scalar_t sb[kGroup];

  explicit ChunkSum(const Loss<opmath_t>& loss) : f(loss) {}

  // kGroup contiguous elements, the first one for lane 0, added to lanes l.
  // The q-th opmath vector of the group (element order) goes to lanes
  // (q % kPerLanes) * kIn ... (q % kPerLanes + 1) * kIn - 1.
  static void add_group(Lanes<opmath_t>& l, const Loss<opmath_t>& loss, const scalar_t* a, const scalar_t* b) {
    for (int64_t i = 0; i < kGroup; i += kVec) {
      const int q = static_cast<int>(i / kVec);
      const auto va = Vectorized<scalar_t>::loadu(a + i);
      const auto vb = Vectorized<scalar_t>::loadu(b + i);
      if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
        auto [a0, a1] = at::vec::convert_to_float<scalar_t>(va);
        auto [b0, b1] = at::vec::convert_to_float<scalar_t>(vb);
        l.add((2 * q) % kPerLanes, loss(a0, b0));
        l.add((2 * q + 1) % kPerLanes, loss(a1, b1));
      } else {
        l.add(q % kPerLanes, loss(va, vb));
      }
    }
  }

  // The staged elements, zero-padded to a group.
  void flush() {
    if (staged == 0) return;
    std::fill(sa + staged, sa + kGroup, scalar_t(0));
    std::fill(sb + staged, sb + kGroup, scalar_t(0));
    add_group(lanes, f, sa, sb);
    staged = 0;
  }

  // The next n contiguous elements.
  void add(const scalar_t* a, const scalar_t* b, int64_t n) {
    int64_t i = 0;
    while (i < n) {
      if (staged == 0 && i + kGroup <= n) {
        // At a multiple of kLanes: whole groups straight from a and b, into
        // local copies of the lanes and the loss (kept in registers: the
        // members could alias a and b as far as the compiler knows, so
        // adding into them stores and reloads them every group).
        Lanes<opmath_t> l = lanes;
        const Loss<opmath_t> loss = f;
        for (; i + kGroup <= n; i += kGroup) add_group(l, loss, a + i, b + i);
        lanes = l;
        if (i == n) break;
      }
      const int64_t m = std::min<int64_t>(n - i, kLanes - staged);
      std::copy(a + i, a + i + m, sa + staged);
      std::copy(b + i, b + i + m, sb + staged);
      staged += m;
      i += m;
      if (staged == kLanes) flush();
    }
  }

  // One TensorIterator row: n elements at byte strides sa, sb (any, incl. 0).
  void add_row(const char* a, int64_t stride_a, const char* b, int64_t stride_b, int64_t n) {
    constexpr int64_t es = sizeof(scalar_t);
    if (stride_a == es && stride_b == es) {
      add(reinterpret_cast<const scalar_t*>(a), reinterpret_cast<const scalar_t*>(b), n);
      return;
    }
    alignas(64) scalar_t ga[kBlock];
    alignas(64) scalar_t gb[kBlock];
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t m = std::min(kBlock, n - i);
      const char* pa = a + i * stride_a;
      const char* pb = b + i * stride_b;
      const scalar_t* ca = reinterpret_cast<const scalar_t*>(pa);
      const scalar_t* cb = reinterpret_cast<const scalar_t*>(pb);
      if (stride_a != es) {
        for (int64_t k = 0; k < m; ++k) ga[k] = *reinterpret_cast<const scalar_t*>(pa + k * stride_a);
        ca = ga;
      }
      if (stride_b != es) {
        for (int64_t k = 0; k < m; ++k) gb[k] = *reinterpret_cast<const scalar_t*>(pb + k * stride_b);
        cb = gb;
      }
      add(ca, cb, m);
    }
  }

  double total() {
    flush();
    return lanes.total();
  }
};

// Fixed-order pairwise sum.
double pairwise_sum(const double* p, int64_t n) {
  if (n <= 8) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += p[i];
    return s;
  }
  const int64_t h = n / 2;
  return pairwise_sum(p, h) + pairwise_sum(p + h, n - h);
}

// Chunks per block: the chunks' sums are added pairwise within blocks of 2^30
// elements, then the blocks' sums pairwise. Below 2^30 elements that is one
// pairwise sum over all chunks; above, the partial sums held at once stay at
// one block's (512 KiB), not 8 bytes per chunk of the whole broadcast.
constexpr int64_t kBlockChunks = int64_t{1} << 16;

template <typename scalar_t>
double loss_sum(at::TensorIterator& iter, double beta) {
  using opmath_t = at::opmath_type<scalar_t>;
  const Loss<opmath_t> f(beta);
  const int64_t numel = iter.numel();
  const int64_t nchunks = (numel + kChunk - 1) / kChunk;
  const int64_t nblocks = (nchunks + kBlockChunks - 1) / kBlockChunks;
  std::vector<double> partial(std::min(nchunks, kBlockChunks), 0.0);
  std::vector<double> blocks(nblocks, 0.0);
  for (int64_t b = 0; b < nblocks; ++b) {
    const int64_t first = b * kBlockChunks, count = std::min(kBlockChunks, nchunks - first);
    at::parallel_for(0, count, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t chunk = first + c;
        ChunkSum<scalar_t> acc(f);
        iter.serial_for_each(
            [&](char** data, const int64_t* strides, int64_t n0, int64_t n1) {
              for (int64_t j = 0; j < n1; ++j) {
                acc.add_row(data[0] + j * strides[2], strides[0], data[1] + j * strides[3], strides[1], n0);
              }
            },
            {chunk * kChunk, std::min(numel, (chunk + 1) * kChunk)});
        partial[c] = acc.total();
      }
    });
    blocks[b] = pairwise_sum(partial.data(), count);
  }
  return nblocks == 1 ? blocks[0] : pairwise_sum(blocks.data(), nblocks);
}

// out: 0-dim, self's dtype.
void loss_reduced(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta, at::Tensor& out) {
  auto iter = at::TensorIteratorConfig().add_const_input(self).add_const_input(target).build();
  const int64_t numel = iter.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "smooth_l1_loss_cpu", [&] {
    const double sum = loss_sum<scalar_t>(iter, beta);
    // 'mean' of no elements is 0 / 0 = NaN, as in torch.
    const double value = reduction == kMean ? sum / static_cast<double>(numel) : sum;
    *out.mutable_data_ptr<scalar_t>() = static_cast<scalar_t>(value);
  });
}

// ---------------------------------------------------------------------------
// Operators: the inputs in the promoted dtype.

at::Tensor as_dtype(const at::Tensor& t, at::ScalarType dtype) {
  return t.scalar_type() == dtype ? t : t.to(dtype);
}

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self_, const at::Tensor& target_,
                  int64_t reduction, double beta) {
  const at::Tensor self = as_dtype(self_, p.result.dtype), target = as_dtype(target_, p.result.dtype);
  if (reduction != kNone) return loss_reduced(self, target, reduction, beta, out);
  loss_none_into(self, target, beta, out);
}

void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output_, const at::Tensor& self_,
                   const at::Tensor& target_, int64_t reduction, double beta) {
  const at::ScalarType dtype = p.result.dtype;
  const at::Tensor grad_output = as_dtype(grad_output_, dtype), self = as_dtype(self_, dtype),
                   target = as_dtype(target_, dtype);
  // 'mean': the derivative of the mean over broadcast(self, target) (docs/spec.md §4;
  // not self.numel(), which aten uses).
  const int64_t loss_numel = c10::multiply_integers(at::infer_size(self.sizes(), target.sizes()));
  const double norm = reduction == kMean ? 1.0 / static_cast<double>(loss_numel) : 1.0;
  grad_into(grad_output, self, target, beta, norm, grad_input);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  entry::impl<cpu::Backend, check_forward, forward_into>(m, "smooth_l1_loss");
  entry::impl<cpu::Backend, check_backward, backward_into>(m, "smooth_l1_loss_backward");
}

}  // namespace torch_aclnn::smooth_l1
