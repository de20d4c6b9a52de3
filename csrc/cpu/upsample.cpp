// CPU kernels of the upsample-nearest family (docs/spec.md §1, §2).
//
// Forward: a gather through per-axis offset tables.
// Backward: a deterministic gather. Every grad_input element sums its window
// of grad_output in (d, h, w) order, starting from +0.0, in opmath (float32
// for half/bfloat16), rounded once. Per-axis window tables replace per-element
// float math; the work is split over all rows / pixels of grad_input.
#include "common/out.h"
#include "contracts/upsample.h"
#include "cpu/cpu_utils.h"
#include "cpu/elementwise.h"

#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <cstring>
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
#include <immintrin.h>
#endif
#include <tuple>
#include <type_traits>
#include <vector>

namespace torch_aclnn::upsample {
namespace {

using c10::MemoryFormat;
using cpu::advance;
using cpu::grain_for;
using cpu::unravel;
using cpu::zero_fill;

// src(dst) for every dst of one axis.
template <Mode mode>
std::vector<int64_t> source_table(const Axes& a, int axis) {
  std::vector<int64_t> t(a.out[axis]);
  for (int64_t dst = 0; dst < a.out[axis]; ++dst) {
    t[dst] = source_index<mode>(a.s[axis], dst, a.in[axis]);
    TORCH_INTERNAL_ASSERT(t[dst] >= 0 && t[dst] < a.in[axis]);
  }
  return t;
}

// For every input index i of one axis, the output window [lo[i], hi[i]) of
// the dst with src(dst) == i (src is non-decreasing, so it is one range;
// empty when no output maps to i).
struct Windows {
  std::vector<int64_t> lo, hi;
};

template <Mode mode>
Windows window_table(const Axes& a, int axis) {
  Windows w;
  w.lo.assign(a.in[axis], 0);
  w.hi.assign(a.in[axis], 0);
  std::vector<int64_t> src = source_table<mode>(a, axis);
  for (int64_t dst = 0; dst < a.out[axis]; ++dst) {
    const int64_t i = src[dst];
    TORCH_INTERNAL_ASSERT(dst == 0 || src[dst - 1] <= i, "source index is not monotonic");
    if (w.hi[i] == 0) w.lo[i] = dst;
    w.hi[i] = dst + 1;
  }
  return w;
}

// ---------------------------------------------------------------------------
// Forward

template <Mode mode, typename scalar_t>
void forward_kernel(const at::Tensor& self, at::Tensor& out, const Axes& a, MemoryFormat fmt) {
  const int64_t N = self.size(0), C = self.size(1);
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  const auto st = self.strides();
  std::vector<int64_t> offD = source_table<mode>(a, 0), offH = source_table<mode>(a, 1),
                       offW = source_table<mode>(a, 2);
  for (auto& v : offD) v *= st[2];
  for (auto& v : offH) v *= st[3];
  for (auto& v : offW) v *= st[4];
  const scalar_t* in = self.const_data_ptr<scalar_t>();
  scalar_t* o = out.mutable_data_ptr<scalar_t>();

  if (fmt == MemoryFormat::Contiguous) {
    const int64_t sizes[4] = {N, C, oD, oH};
    const int64_t rows = N * C * oD * oH;
    at::parallel_for(0, rows, grain_for(oW), [&](int64_t b, int64_t e) {
      int64_t idx[4];
      unravel<4>(b, sizes, idx);
      for (int64_t r = b; r < e; ++r, advance<4>(sizes, idx)) {
        const scalar_t* src = in + idx[0] * st[0] + idx[1] * st[1] + offD[idx[2]] + offH[idx[3]];
        scalar_t* dst = o + r * oW;
        for (int64_t w = 0; w < oW; ++w) dst[w] = src[offW[w]];
      }
    });
  } else {
    const int64_t sizes[4] = {N, oD, oH, oW};
    const int64_t pixels = N * oD * oH * oW;
    const int64_t sC = st[1];
    at::parallel_for(0, pixels, grain_for(C), [&](int64_t b, int64_t e) {
      int64_t idx[4];
      unravel<4>(b, sizes, idx);
      for (int64_t p = b; p < e; ++p, advance<4>(sizes, idx)) {
        const scalar_t* src = in + idx[0] * st[0] + offD[idx[1]] + offH[idx[2]] + offW[idx[3]];
        scalar_t* dst = o + p * C;
        if (sC == 1) {
          // Vector copies inline (a memcpy call per pixel costs more than
          // the copy for the usual few dozen channels); bits, so any dtype.
          using BVec = at::vec::Vectorized<int8_t>;
          const auto* s8 = reinterpret_cast<const int8_t*>(src);
          auto* d8 = reinterpret_cast<int8_t*>(dst);
          const int64_t bytes = static_cast<int64_t>(sizeof(scalar_t)) * C;
          int64_t i = 0;
          for (; i + BVec::size() <= bytes; i += BVec::size()) BVec::loadu(s8 + i).store(d8 + i);
          if (i < bytes) BVec::loadu(s8 + i, bytes - i).store(d8 + i, static_cast<int>(bytes - i));
        } else {
          for (int64_t c = 0; c < C; ++c) dst[c] = src[c * sC];
        }
      }
    });
  }
}

template <Mode mode>
at::Tensor forward_cpu(const at::Tensor& self, c10::SymIntArrayRef output_size_, Scale sd, Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  check_forward(mode, self, output_size_, scales);
  const auto output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  const MemoryFormat fmt = result_format(self);
  at::Tensor out = cpu::empty({self.size(0), self.size(1), output_size[0], output_size[1], output_size[2]},
                              self.options().memory_format(fmt));
  if (out.numel() == 0) return out;
  const Axes a = make_axes(self.sizes(), output_size, scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "upsample_nearest3d_cpu", [&] {
    forward_kernel<mode, scalar_t>(self, out, a, fmt);
  });
  return out;
}

// ---------------------------------------------------------------------------
// Backward

// How one grad_output row (length out) folds into one grad_input row (length
// in) along W: every input index k owns the window [lo[k], hi[k]).
struct RowFold {
  int64_t uniform = 0;  // L > 0 when lo[k] = k*L and hi[k] = (k+1)*L for every k (out == L*in)
  // W down-scaled by exactly 2 (in == 2*out): input k = 2m + phase has the
  // one output m, the others none.
  bool halved = false;
  int64_t phase = 0;
  // Otherwise, pass t (0 <= t < taps) adds row[at[t][k]] to acc[k] when
  // t < hi[k] - lo[k], else adds +0.0 — which leaves every value bitwise as it
  // is, since an accumulator that starts at +0.0 is never -0.0. The passes run
  // in t order, so each element still adds its window in w order, and every
  // pass is a branch-free gather the compiler vectorises.
  int64_t taps = 0;
  std::vector<int32_t> at;     // taps x in offsets into the row (clamped in range)
  std::vector<uint8_t> valid;  // taps x in: 1 where the tap is inside the window
  // AVX512 / AVX2 builds, windows of at most 2 outputs (up-scaling by less
  // than 2, or down-scaling): block b of kBlock (16 / 8) input indices reads
  // one span of at most 2 * kBlock consecutive outputs, [base[b], base[b] +
  // need), loaded as two masked vectors; its two taps are two-source permutes
  // of them (idx0 / idx1 into the span), the first added only where the
  // window holds an output (mask `one`), the second only where it holds 2
  // (mask `two`). The same additions in the same order as the tap loop, which
  // does the indices past the blocks (and everything in the default build).
  // AVX512 builds end the row with a partial block (masked lanes past `in`),
  // so a row narrower than kBlock is one block too, and sum each block over
  // the whole (d, h) window at once (fold_window_blocks); AVX2 builds add the
  // blocks row by row (fold_row).
  int64_t blocks = 0;
  std::vector<int32_t> base, idx0, idx1;
  std::vector<uint16_t> load_lo, load_hi, one, two;
};

#if defined(CPU_CAPABILITY_AVX512)
constexpr int64_t kBlock = 16;
constexpr bool kPartialBlock = true;
#elif defined(CPU_CAPABILITY_AVX2)
constexpr int64_t kBlock = 8;
constexpr bool kPartialBlock = false;
#else
constexpr int64_t kBlock = 0;  // no permute blocks
constexpr bool kPartialBlock = false;
#endif

// The permute blocks of `f` (see RowFold), when every window has at most 2
// outputs and the outputs of every block of kBlock span at most 2 * kBlock.
void make_permute_blocks(RowFold& f, const Windows& w, int64_t in) {
  constexpr int64_t B = kBlock;
  if constexpr (B > 0) {
    const int64_t blocks = kPartialBlock ? (in + B - 1) / B : in / B;
    std::vector<int64_t> base(blocks, 0), need(blocks, 0);
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t lo = -1, hi = 0;  // the outputs of the block's non-empty windows
      for (int64_t k = b * B; k < std::min(in, b * B + B); ++k) {
        const int64_t size = w.hi[k] - w.lo[k];
        if (size > 2) return;
        if (size == 0) continue;
        if (lo < 0) lo = w.lo[k];
        hi = w.hi[k];
      }
      if (lo < 0) continue;  // no outputs: nothing to load
      if (hi - lo > 2 * B) return;
      base[b] = lo;
      need[b] = hi - lo;
    }
    f.blocks = blocks;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t n = need[b];
      f.base.push_back(static_cast<int32_t>(base[b]));
      f.load_lo.push_back(static_cast<uint16_t>(n >= B ? 0xFFFF : (1u << n) - 1));
      f.load_hi.push_back(static_cast<uint16_t>(n >= 2 * B ? 0xFFFF : n > B ? (1u << (n - B)) - 1 : 0));
      uint16_t one = 0, two = 0;
      for (int64_t j = 0; j < B; ++j) {
        const int64_t k = b * B + j, size = k < in ? w.hi[k] - w.lo[k] : 0;
        f.idx0.push_back(static_cast<int32_t>(size > 0 ? w.lo[k] - base[b] : 0));
        f.idx1.push_back(static_cast<int32_t>(size > 0 ? w.hi[k] - 1 - base[b] : 0));
        if (size > 0) one |= static_cast<uint16_t>(1u << j);
        if (size == 2) two |= static_cast<uint16_t>(1u << j);
      }
      f.one.push_back(one);
      f.two.push_back(two);
    }
  }
}

RowFold make_row_fold(const Windows& w, int64_t in, int64_t out) {
  RowFold f;
  for (int64_t k = 0; k < in; ++k) f.taps = std::max(f.taps, w.hi[k] - w.lo[k]);
  f.at.resize(f.taps * in);
  f.valid.resize(f.taps * in);
  for (int64_t t = 0; t < f.taps; ++t) {
    for (int64_t k = 0; k < in; ++k) {
      const bool inside = w.lo[k] + t < w.hi[k];
      f.valid[t * in + k] = inside;
      f.at[t * in + k] = static_cast<int32_t>(inside ? w.lo[k] + t : 0);
    }
  }
  if (kBlock > 0 && f.taps <= 2) make_permute_blocks(f, w, in);
  if (out % in == 0) {
    const int64_t L = out / in;
    bool uniform = true;
    for (int64_t k = 0; k < in && uniform; ++k) uniform = w.lo[k] == k * L && w.hi[k] == (k + 1) * L;
    if (uniform) f.uniform = L;
  }
  if (in == 2 * out && out > 0) {
    f.phase = w.hi[0] > w.lo[0] ? 0 : 1;
    bool halved = true;
    for (int64_t k = 0; k < in && halved; ++k) {
      const bool owner = k % 2 == f.phase;
      halved = owner ? w.lo[k] == k / 2 && w.hi[k] == k / 2 + 1 : w.lo[k] == w.hi[k];
    }
    f.halved = halved;
  }
  return f;
}

// acc[k] += the window of k in `row`, adding in w order (so each element of
// grad_input keeps its (d, h, w) summation order).
template <int64_t L, typename scalar_t, typename acc_t>
inline void fold_uniform(acc_t* __restrict acc, const scalar_t* __restrict row, int64_t in) {
  for (int64_t k = 0; k < in; ++k) {
    acc_t s = acc[k];
    for (int64_t t = 0; t < L; ++t) s += static_cast<acc_t>(row[k * L + t]);
    acc[k] = s;
  }
}

template <typename scalar_t, typename acc_t>
inline void fold_row(acc_t* __restrict acc, const scalar_t* __restrict row, const RowFold& f, int64_t in,
                     int64_t out) {
  switch (f.uniform) {
    case 1:
      for (int64_t k = 0; k < in; ++k) acc[k] += static_cast<acc_t>(row[k]);
      return;
    case 3:
      return fold_uniform<3>(acc, row, in);
    case 4:
      return fold_uniform<4>(acc, row, in);
    default: {
      int64_t first = 0;  // the indices before it were folded by the permute blocks
      // (AVX-512 rows with permute blocks go through fold_window_blocks instead)
#if defined(CPU_CAPABILITY_AVX2)
      if constexpr (std::is_same_v<scalar_t, float> && std::is_same_v<acc_t, float>) {
        // Lane masks from bit masks; permutes pick within 8 lanes, a blend
        // picks the span's half.
        const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        const auto lanes = [&](uint16_t bits) {
          return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(bits), lane_bit), lane_bit);
        };
        const __m256i seven = _mm256_set1_epi32(7);
        const auto pick = [&](__m256 lo, __m256 hi, __m256i idx) {
          const __m256 upper = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, seven));
          return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx), _mm256_permutevar8x32_ps(hi, idx), upper);
        };
        for (int64_t b = 0; b < f.blocks; ++b) {
          const float* span = row + f.base[b];
          // Whole loads while the row goes on past 16 (lanes past `need` are
          // never picked); masked ones (slow on some CPUs) only at its end.
          const bool whole = f.base[b] + 16 <= out;
          const __m256 lo = whole ? _mm256_loadu_ps(span) : _mm256_maskload_ps(span, lanes(f.load_lo[b]));
          const __m256 hi = whole ? _mm256_loadu_ps(span + 8) : _mm256_maskload_ps(span + 8, lanes(f.load_hi[b]));
          const auto* i0 = reinterpret_cast<const __m256i*>(f.idx0.data() + 8 * b);
          const auto* i1 = reinterpret_cast<const __m256i*>(f.idx1.data() + 8 * b);
          const __m256 tap0 = pick(lo, hi, _mm256_loadu_si256(i0));
          const __m256 tap1 = pick(lo, hi, _mm256_loadu_si256(i1));
          // + (+0.0) where the window holds fewer outputs: leaves a bitwise
          // as it is (an accumulator that starts at +0.0 is never -0.0).
          const auto keep = [&](__m256 tap, uint16_t bits) {
            return _mm256_and_ps(tap, _mm256_castsi256_ps(lanes(bits)));
          };
          __m256 a = _mm256_add_ps(_mm256_loadu_ps(acc + 8 * b), keep(tap0, f.one[b]));
          a = _mm256_add_ps(a, keep(tap1, f.two[b]));
          _mm256_storeu_ps(acc + 8 * b, a);
        }
        first = f.blocks * 8;
      }
#endif
      for (int64_t t = 0; t < f.taps; ++t) {
        const int32_t* __restrict at = f.at.data() + t * in;
        const uint8_t* __restrict valid = f.valid.data() + t * in;
        for (int64_t k = first; k < in; ++k) {
          const acc_t v = static_cast<acc_t>(row[at[k]]);
          acc[k] += valid[k] ? v : acc_t(0);
        }
      }
    }
  }
}

// Widens a half/bfloat16 row to float32 (vectorised).
template <typename scalar_t>
inline void widen_row(const scalar_t* __restrict src, float* __restrict dst, int64_t n) {
  using bVec = at::vec::Vectorized<scalar_t>;
  using fVec = at::vec::Vectorized<float>;
  int64_t i = 0;
  for (; i + bVec::size() <= n; i += bVec::size()) {
    auto [lo, hi] = at::vec::convert_to_float<scalar_t>(bVec::loadu(src + i));
    lo.store(dst + i);
    hi.store(dst + i + fVec::size());
  }
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

// K consecutive elements (K lanes of the opmath type) as one opmath vector,
// half/bfloat16 widened (a half-width load: at::vec::load_to_float, not a
// masked full-width one, which costs more on Zen 4).
template <typename scalar_t>
C10_ALWAYS_INLINE auto widen(const scalar_t* p) {
  using aVec = at::vec::Vectorized<at::opmath_type<scalar_t>>;
  if constexpr (c10::is_reduced_floating_point_v<scalar_t>) {
    aVec v;
    at::vec::load_to_float(p, v);
    return v;
  } else {
    return aVec::loadu(p);
  }
}

// The (d, h) window of one NCDHW grad_input row: the grad_output rows
// (d, h), d in [d0, d1), h in [h0, h1), of its (n, c) volume.
template <typename scalar_t>
struct Window2 {
  const scalar_t* volume;
  int64_t d0, d1, h0, h1, oH, oW;
  const scalar_t* row(int64_t d, int64_t h) const { return volume + (d * oH + h) * oW; }
};

// 2K consecutive elements (K lanes of the opmath type) as two opmath vectors,
// half/bfloat16 widened; and back, rounded once.
template <typename scalar_t>
C10_ALWAYS_INLINE auto load_pair(const scalar_t* p) {
  using aVec = at::vec::Vectorized<at::opmath_type<scalar_t>>;
  if constexpr (c10::is_reduced_floating_point_v<scalar_t>) {
    static_assert(at::vec::Vectorized<scalar_t>::size() == 2 * aVec::size());
    return at::vec::convert_to_float<scalar_t>(at::vec::Vectorized<scalar_t>::loadu(p));
  } else {
    return std::make_tuple(aVec::loadu(p), aVec::loadu(p + aVec::size()));
  }
}

// With `stream`, non-temporal stores (p 64-byte aligned; cpu::store_vector).
template <typename scalar_t, typename aVec>
C10_ALWAYS_INLINE void store_pair(scalar_t* p, const aVec& lo, const aVec& hi, bool stream = false) {
  if constexpr (c10::is_reduced_floating_point_v<scalar_t>) {
    cpu::store_vector(at::vec::convert_from_float<scalar_t>(lo, hi), p, stream);
  } else {
    cpu::store_vector(lo, p, stream);
    cpu::store_vector(hi, p + aVec::size(), stream);
  }
}

// The first n (0 <= n <= 2K) of 2K consecutive elements as two opmath
// vectors, the lanes past n +0.0 (nothing past n is read); and the first n
// lanes of two opmath vectors stored, rounded once (nothing past n written).
template <typename scalar_t>
C10_ALWAYS_INLINE auto load_pair(const scalar_t* p, int64_t n) {
  using aVec = at::vec::Vectorized<at::opmath_type<scalar_t>>;
  constexpr int64_t K = aVec::size();
  if constexpr (c10::is_reduced_floating_point_v<scalar_t>) {
    return at::vec::convert_to_float<scalar_t>(at::vec::Vectorized<scalar_t>::loadu(p, n));
  } else {
    return std::make_tuple(aVec::loadu(p, std::min(n, K)), aVec::loadu(p + K, std::max<int64_t>(n - K, 0)));
  }
}

template <typename scalar_t, typename aVec>
C10_ALWAYS_INLINE void store_pair(scalar_t* p, const aVec& lo, const aVec& hi, int64_t n) {
  constexpr int64_t K = aVec::size();
  if constexpr (c10::is_reduced_floating_point_v<scalar_t>) {
    at::vec::convert_from_float<scalar_t>(lo, hi).store(p, static_cast<int>(n));
  } else {
    lo.store(p, static_cast<int>(std::min(n, K)));
    if (n > K) hi.store(p + K, static_cast<int>(n - K));
  }
}

// One grad_input row whose (d, h) window is a single grad_output row, when W
// is down-scaled by exactly 2 (RowFold::halved): element 2m + phase is
// +0.0 + row[m] (the one addition of the generic path, which also turns
// -0.0 into +0.0), the others +0.0. Blocks of 2K outputs interleave a
// vector of the row with zeros; the rest is a scalar loop (partial vectors
// measured no faster on rows of 4 or 8).
template <typename scalar_t>
void spread_by_2(scalar_t* __restrict dst, const scalar_t* __restrict row, int64_t iW, int64_t phase) {
  using acc_t = at::opmath_type<scalar_t>;
  using aVec = at::vec::Vectorized<acc_t>;
  constexpr int64_t K = aVec::size();
  const aVec zero(acc_t(0));
  const auto spread = [&](const aVec& x) {
    return phase == 0 ? at::vec::interleave2(zero + x, zero) : at::vec::interleave2(zero, zero + x);
  };
  // The next single-row windows read the next rows of grad_output (iW / 2
  // elements each: halved means iW == 2 * oW): ask for them early (between
  // these rows lie zero rows, which hardware prefetch does not bridge well).
  constexpr int64_t kAhead = 4;
  const int64_t oW = iW / 2, line = 64 / sizeof(scalar_t);
  for (int64_t k = 0; k < oW; k += line) __builtin_prefetch(row + kAhead * oW + k);
  int64_t k = 0;
  for (; k + 4 * K <= iW; k += 4 * K) {  // 2K source elements
    const auto [x0, x1] = load_pair(row + k / 2);
    const auto [a0, b0] = spread(x0);
    const auto [a1, b1] = spread(x1);
    store_pair(dst + k, a0, b0);
    store_pair(dst + k + 2 * K, a1, b1);
  }
  for (; k < iW; ++k) {
    dst[k] = k % 2 == phase ? static_cast<scalar_t>(acc_t(0) + static_cast<acc_t>(row[k / 2])) : scalar_t(0);
  }
}

// 2K consecutive elements (K lanes of the opmath type) split into their even
// and odd elements, as two opmath vectors (half/bfloat16 widened).
// bfloat16 with AVX-512 / AVX2: element 2m is the low half of 32-bit word m
// and 2m + 1 its high half, and a bfloat16 widens exactly by moving its bits
// to the top of a float32, so a shift and a mask give the two vectors
// (bitwise what widening then deinterleaving gives, without the permutes).
template <typename scalar_t>
C10_ALWAYS_INLINE auto load_even_odd(const scalar_t* p) {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  using fVec = at::vec::Vectorized<float>;
#endif
#if defined(CPU_CAPABILITY_AVX512)
  if constexpr (std::is_same_v<scalar_t, c10::BFloat16>) {
    const __m512i w = _mm512_loadu_si512(p);
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    return std::make_pair(fVec(_mm512_castsi512_ps(_mm512_slli_epi32(w, 16))),
                          fVec(_mm512_castsi512_ps(_mm512_and_si512(w, high))));
  }
#elif defined(CPU_CAPABILITY_AVX2)
  if constexpr (std::is_same_v<scalar_t, c10::BFloat16>) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    return std::make_pair(fVec(_mm256_castsi256_ps(_mm256_slli_epi32(w, 16))),
                          fVec(_mm256_castsi256_ps(_mm256_and_si256(w, high))));
  }
#endif
  const auto [x0, x1] = load_pair(p);
  return at::vec::deinterleave2(x0, x1);
}

// One grad_input row when W is up-scaled by exactly 2 (every W window is
// {2k, 2k+1}): each block of 2K elements (K float lanes) sums its windows in
// two vector registers, the rows in (d, h) order and within a row w = 2k then
// 2k + 1 (a deinterleave of the loaded row), so the same additions in the
// same order as the generic fold; half/bfloat16 are widened in registers and
// rounded once. The last iW % 2K elements, in the same order, K at a time
// with partial loads and stores (a narrow row is all tail).
template <typename scalar_t>
void fold_by_2(scalar_t* __restrict dst, const Window2<scalar_t>& win, int64_t iW, bool stream) {
  using acc_t = at::opmath_type<scalar_t>;
  using aVec = at::vec::Vectorized<acc_t>;
  constexpr int64_t K = aVec::size();
  int64_t k = 0;
  for (; k + 2 * K <= iW; k += 2 * K) {
    aVec a0(acc_t(0)), a1(acc_t(0));
    for (int64_t d = win.d0; d < win.d1; ++d) {
      for (int64_t h = win.h0; h < win.h1; ++h) {
        const scalar_t* row = win.row(d, h) + 2 * k;  // 4K elements
        const auto [even0, odd0] = load_even_odd(row);
        const auto [even1, odd1] = load_even_odd(row + 2 * K);
        a0 = a0 + even0;
        a0 = a0 + odd0;
        a1 = a1 + even1;
        a1 = a1 + odd1;
      }
    }
    store_pair(dst + k, a0, a1, stream);
  }
  for (; k < iW; k += K) {  // the last < 2K: K at a time, partial loads and stores
    const int64_t n = std::min(K, iW - k);
    aVec a(acc_t(0));
    for (int64_t d = win.d0; d < win.d1; ++d) {
      for (int64_t h = win.h0; h < win.h1; ++h) {
        const auto [x0, x1] = load_pair(win.row(d, h) + 2 * k, 2 * n);
        const auto [even, odd] = at::vec::deinterleave2(x0, x1);
        a = a + even;
        a = a + odd;
      }
    }
    store_pair(dst + k, a, a, n);
  }
}

#if defined(CPU_CAPABILITY_AVX512)
// One grad_input row whose W fold the permute blocks cover (f.blocks * 16 >=
// in; see RowFold): block by block, each of 16 elements sums its window's
// rows in (d, h) order, and within a row its two taps in w order, in one
// float32 register from +0.0, and is stored once (half/bfloat16: widened in
// registers, rounded once; float32 non-temporal when `stream`: dst 64-byte
// aligned). The additions of the row-by-row fold in the same order, without
// storing and reloading the partial sums, and each block's tables are read
// once per row of grad_input instead of once per row of grad_output.
// nearest-exact, scale 1.5, float32, 1 thread, in cache ((1,2,32,64,64) <-
// (1,2,48,96,96)): 0.25 -> 0.175 ns per grad_output element; (2,16,...)
// out=, 2 threads: 2.41-2.63 -> 2.31-2.46 ms; bfloat16, which widened each
// row into a float32 one first, 1 thread: 4.8-5.2 -> 3.6-3.8 ms.
template <typename scalar_t>
void fold_window_blocks(scalar_t* dst, const Window2<scalar_t>& win, const RowFold& f, int64_t in, bool stream) {
  using fVec = at::vec::Vectorized<float>;
  for (int64_t b = 0; b < f.blocks; ++b) {
    const __m512i idx0 = _mm512_loadu_si512(f.idx0.data() + 16 * b);
    const __m512i idx1 = _mm512_loadu_si512(f.idx1.data() + 16 * b);
    const __mmask16 load_lo = f.load_lo[b], load_hi = f.load_hi[b], one = f.one[b], two = f.two[b];
    __m512 a = _mm512_setzero_ps();
    for (int64_t d = win.d0; d < win.d1; ++d) {
      for (int64_t h = win.h0; h < win.h1; ++h) {
        const scalar_t* span = win.row(d, h) + f.base[b];
        __m512 lo, hi;
        if constexpr (std::is_same_v<scalar_t, float>) {
          lo = _mm512_maskz_loadu_ps(load_lo, span);
          hi = _mm512_maskz_loadu_ps(load_hi, span + 16);
        } else {
          const __mmask32 lanes = _mm512_kunpackw(load_hi, load_lo);  // (hi << 16) | lo
          const auto [l, h2] = at::vec::convert_to_float<scalar_t>(
              at::vec::Vectorized<scalar_t>(_mm512_maskz_loadu_epi16(lanes, span)));
          lo = l;
          hi = h2;
        }
        a = _mm512_mask_add_ps(a, one, a, _mm512_permutex2var_ps(lo, idx0, hi));
        a = _mm512_mask_add_ps(a, two, a, _mm512_permutex2var_ps(lo, idx1, hi));
      }
    }
    const int64_t n = std::min<int64_t>(16, in - 16 * b);
    if constexpr (std::is_same_v<scalar_t, float>) {
      if (n == 16) {
        cpu::store_vector(fVec(a), dst + 16 * b, stream);
      } else {  // the partial last block
        _mm512_mask_storeu_ps(dst + 16 * b, static_cast<__mmask16>((1u << n) - 1), a);
      }
    } else {
      const __m256i r = _mm512_castsi512_si256(at::vec::convert_from_float<scalar_t>(fVec(a), fVec(0.0f)));
      if (n == 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 16 * b), r);
      } else {
        _mm256_mask_storeu_epi16(dst + 16 * b, static_cast<__mmask16>((1u << n) - 1), r);
      }
    }
  }
}
#endif

// channels_last_3d backward when a pixel's channels are exactly one opmath
// vector (C == K: 16 float32/half/bfloat16 channels with AVX-512): the
// grad_output rows of a grad_input row's (d, h) window are read one after
// another (d-major), each as one sequential stream, and folded into an
// accumulator row, pixel k adding the row's pixels w of its W window. Every
// element so sums its window in (d, h, w) order from +0.0, as the per-pixel
// register loop of backward_kernel does, which reads the window's rows side
// by side a pixel (here: one 32- or 64-byte load) at a time and was slower
// for such narrow pixels. half/bfloat16 accumulate in a float32 row, rounded
// once; float32/float64 in grad_input itself.
template <typename scalar_t>
void pixel_vector_rows(const scalar_t* g, scalar_t* o, const Axes& a, const Windows& wd, const Windows& wh,
                       const Windows& ww, int64_t N, int64_t grain) {
  using acc_t = at::opmath_type<scalar_t>;
  using aVec = at::vec::Vectorized<acc_t>;
  constexpr int64_t C = aVec::size();
  constexpr bool kAccInPlace = std::is_same_v<acc_t, scalar_t>;
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  const int64_t sizes[3] = {N, iD, iH};
  // Rows of whole 64-byte lines, on 64-byte boundaries, when grad_output and
  // grad_input exceed the last-level cache: accumulate in the float32 row
  // (float32 too) and write it out with non-temporal stores (cpu/elementwise.h).
  const int64_t pixel_bytes = C * static_cast<int64_t>(sizeof(scalar_t)), row_bytes = iW * pixel_bytes;
  const bool stream = cpu::stream_stores((N * oD * oH * oW + N * iD * iH * iW) * pixel_bytes) &&
                      reinterpret_cast<uintptr_t>(o) % 64 == 0 && row_bytes % 64 == 0;
  const bool in_place = kAccInPlace && !stream;
  at::parallel_for(0, N * iD * iH, grain, [&](int64_t b, int64_t e) {
    // The float32 row starts 2 KiB (mod 4 KiB) away from grad_output's
    // rows: its stores and the row's loads advance together, and equal
    // addresses modulo 4 KiB would stall the loads (4K aliasing).
    std::vector<acc_t> storage(in_place ? 0 : iW * C + 4096 / sizeof(acc_t));
    acc_t* buffer = storage.data();
    if (!in_place) {
      buffer += (reinterpret_cast<uintptr_t>(g) + 2048 - reinterpret_cast<uintptr_t>(buffer)) % 4096 / sizeof(acc_t);
    }
    int64_t idx[3];
    unravel<3>(b, sizes, idx);
    for (int64_t r = b; r < e; ++r, advance<3>(sizes, idx)) {
      const int64_t n = idx[0], i = idx[1], j = idx[2];
      scalar_t* out_row = o + r * iW * C;
      acc_t* acc = in_place ? reinterpret_cast<acc_t*>(out_row) : buffer;
      std::fill(acc, acc + iW * C, acc_t(0));
      for (int64_t d = wd.lo[i]; d < wd.hi[i]; ++d) {
        for (int64_t h = wh.lo[j]; h < wh.hi[j]; ++h) {
          const scalar_t* row = g + ((n * oD + d) * oH + h) * oW * C;
          for (int64_t k = 0; k < iW; ++k) {
            aVec v = aVec::loadu(acc + k * C);
            const int64_t w1 = ww.hi[k];
            int64_t w = ww.lo[k];
            for (; w + 2 <= w1; w += 2) {  // two pixels (one 64-byte load for half/bfloat16), in w order
              const auto [x0, x1] = load_pair(row + w * C);
              v = v + x0;
              v = v + x1;
            }
            if (w < w1) v = v + widen(row + w * C);
            v.store(acc + k * C);
          }
        }
      }
      if (stream) {  // pixel pairs (whole lines: the row starts on a 64-byte boundary), then an odd last pixel
        int64_t k = 0;
        for (; k + 2 * C <= iW * C; k += 2 * C) {
          store_pair(out_row + k, aVec::loadu(acc + k), aVec::loadu(acc + k + C), true);
        }
        at::vec::convert(acc + k, out_row + k, iW * C - k);
      } else if constexpr (!kAccInPlace) {
        at::vec::convert(acc, out_row, iW * C);
      }
    }
    if (stream) cpu::stream_fence();
  });
}

// The most outputs any window of an axis holds.
int64_t max_window(const Windows& w) {
  int64_t m = 0;
  for (size_t k = 0; k < w.lo.size(); ++k) m = std::max(m, w.hi[k] - w.lo[k]);
  return m;
}

// Whether the NCDHW backward takes sparse_rows: rows of at most 32 elements
// (the row-by-row fold pays more per row than such a row costs to write), and
// no window of any axis holds more than one output (down-scaling, or keeping
// a size). Wider rows take halved_rows when W is halved, else the row-by-row
// fold: zeroing every row and then writing the ones that receive outputs
// measured faster out= but slower on a freshly allocated result (W 64 halved,
// 1 thread: 0.60-0.67 -> 0.67-0.96 ms).
bool use_sparse_rows(const Axes& a, const Windows& wd, const Windows& wh, const Windows& ww) {
  return a.in[2] <= 32 && max_window(wd) <= 1 && max_window(wh) <= 1 && max_window(ww) <= 1;
}

// NCDHW backward when every window of every axis holds at most one output
// (use_sparse_rows): each grad_input element is +0.0 + its one grad_output
// element (the single addition of the generic fold, which also turns -0.0
// into +0.0) or +0.0. Blocks of rows (64 KiB) are zeroed at once (zero_fill),
// then, while in L2, only the rows that receive outputs are visited, and in
// them only the elements that do are written.
template <typename scalar_t>
void sparse_rows(const scalar_t* g, scalar_t* o, const Axes& a, const Windows& wd, const Windows& wh,
                 const Windows& ww, int64_t planes) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  std::vector<int64_t> ks, ws;  // the elements k of a row that receive an output, and its w
  for (int64_t k = 0; k < iW; ++k) {
    if (ww.hi[k] > ww.lo[k]) {
      ks.push_back(k);
      ws.push_back(ww.lo[k]);
    }
  }
  const int64_t owned = static_cast<int64_t>(ks.size());
  // Rows per block: 64 KiB, zeroed and then written while in L2.
  const int64_t block = std::max<int64_t>(1, (64 << 10) / (iW * static_cast<int64_t>(sizeof(scalar_t))));
  at::parallel_for(0, planes * iD * iH, grain_for(iW), [&](int64_t b, int64_t e) {
    const int64_t *dlo = wd.lo.data(), *dhi = wd.hi.data(), *hlo = wh.lo.data(), *hhi = wh.hi.data();
    const int64_t *k_of = ks.data(), *w_of = ws.data();
    int64_t zeroed = b;  // rows [b, zeroed) are cleared
    for (int64_t r = b; r < e;) {
      if (r >= zeroed) {
        const int64_t to = std::min(e, r + block);
        zero_fill(o + r * iW, (to - r) * iW);
        zeroed = to;
      }
      const int64_t slice = r / iH, i = slice % iD, end = std::min(zeroed, (slice + 1) * iH);
      if (dlo[i] < dhi[i]) {
        const scalar_t* volume = g + ((slice / iD) * oD + dlo[i]) * oH * oW;
        for (int64_t j = r - slice * iH; r < end; ++r, ++j) {
          if (hlo[j] == hhi[j]) continue;
          const scalar_t* row = volume + hlo[j] * oW;
          scalar_t* dst = o + r * iW;
          for (int64_t t = 0; t < owned; ++t) {
            dst[k_of[t]] = static_cast<scalar_t>(acc_t(0) + static_cast<acc_t>(row[w_of[t]]));
          }
        }
      }
      r = end;
    }
  });
}

// NCDHW backward when W is down-scaled by exactly 2 (RowFold::halved) and
// no window of D or H holds more than one output: each grad_input row is
// either +0.0 everywhere (no output maps to its slice or row; consecutive such
// rows are cleared at once by zero_fill) or a single grad_output row spread
// to every other element (spread_by_2). The rows are walked slice by slice,
// the source row found from the two window tables alone (the bench's scale
// 0.5 case, float32, 2 threads, out=, alternating builds: 0.245-0.35 ->
// 0.147-0.257 ms with zero_fill; the generic row loop spent more on each
// row's bookkeeping than on its 256 bytes, and memset more than the rows).
template <typename scalar_t>
void halved_rows(const scalar_t* g, scalar_t* o, const Axes& a, const Windows& wd, const Windows& wh, int64_t phase,
                 int64_t planes) {
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  at::parallel_for(0, planes * iD * iH, grain_for(iW), [&](int64_t b, int64_t e) {
    const int64_t *dlo = wd.lo.data(), *dhi = wd.hi.data(), *hlo = wh.lo.data(), *hhi = wh.hi.data();
    int64_t zeros_from = b;  // rows [zeros_from, r) are +0.0, not yet cleared
    for (int64_t r = b; r < e;) {
      const int64_t slice = r / iH, i = slice % iD, end = std::min(e, (slice + 1) * iH);
      if (dlo[i] == dhi[i]) {
        r = end;
        continue;
      }
      const scalar_t* volume = g + ((slice / iD) * oD + dlo[i]) * oH * oW;
      for (int64_t j = r - slice * iH; r < end; ++r, ++j) {
        if (hlo[j] == hhi[j]) continue;
        if (r > zeros_from) zero_fill(o + zeros_from * iW, (r - zeros_from) * iW);
        zeros_from = r + 1;
        spread_by_2(o + r * iW, volume + hlo[j] * oW, iW, phase);
      }
    }
    if (e > zeros_from) zero_fill(o + zeros_from * iW, (e - zeros_from) * iW);
  });
}

// go and gi are both contiguous in `fmt`.
template <Mode mode, typename scalar_t>
void backward_kernel(const at::Tensor& go, at::Tensor& gi, const Axes& a, MemoryFormat fmt) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr bool kAccInPlace = std::is_same_v<acc_t, scalar_t>;
  const int64_t N = gi.size(0), C = gi.size(1);
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  const Windows wd = window_table<mode>(a, 0), wh = window_table<mode>(a, 1), ww = window_table<mode>(a, 2);
  const scalar_t* g = go.const_data_ptr<scalar_t>();
  scalar_t* o = gi.mutable_data_ptr<scalar_t>();

  if (fmt == MemoryFormat::Contiguous) {
    if (use_sparse_rows(a, wd, wh, ww)) {
      sparse_rows<scalar_t>(g, o, a, wd, wh, ww, N * C);
      return;
    }
    // One grad_input row (n, c, i, j, :) at a time: for each (d, h) of its
    // window, fold grad_output row (d, h) into it along W.
    const RowFold fold = make_row_fold(ww, iW, oW);
    if (fold.halved && max_window(wd) <= 1 && max_window(wh) <= 1) {
      halved_rows<scalar_t>(g, o, a, wd, wh, fold.phase, N * C);
      return;
    }
    // Non-temporal stores (cpu/elementwise.h) for the whole blocks of the x2
    // fold and of fold_window_blocks when grad_output and grad_input together
    // exceed the last-level cache and every row starts on a 64-byte boundary
    // (so every block does).
    const bool stream = cpu::stream_stores(go.nbytes() + gi.nbytes()) &&
                        reinterpret_cast<uintptr_t>(o) % 64 == 0 && (iW * sizeof(scalar_t)) % 64 == 0;
    const int64_t sizes[4] = {N * C, iD, iH, 1};
    const int64_t rows = N * C * iD * iH;
    const int64_t cost = std::max<int64_t>(iW, oD * oH * oW / std::max<int64_t>(1, iD * iH));
    at::parallel_for(0, rows, grain_for(cost), [&](int64_t b, int64_t e) {
      // half/bfloat16: accumulate in a float32 row, widening each source row once.
      std::vector<acc_t> buffer(kAccInPlace ? 0 : iW), wide(kAccInPlace ? 0 : oW);
      // Rows no output maps to (down-scaling) are +0.0 (all bits zero); a run
      // of them, consecutive in memory, is cleared at once (zero_fill).
      int64_t zeros_from = b;
      const auto clear_zeros = [&](int64_t end) {
        if (end > zeros_from) zero_fill(o + zeros_from * iW, (end - zeros_from) * iW);
      };
      int64_t idx[4];
      unravel<4>(b, sizes, idx);
      for (int64_t r = b; r < e; ++r, advance<4>(sizes, idx)) {
        const int64_t nc = idx[0], i = idx[1], j = idx[2];
        if (wd.lo[i] == wd.hi[i]) {
          // No output maps to slice i: skip to the last row of its plane in
          // this range (the whole run is cleared at once).
          const int64_t skip = std::min(e - 1 - r, iH - 1 - j);
          r += skip;
          idx[2] += skip;
          continue;
        }
        if (wh.lo[j] == wh.hi[j]) continue;
        clear_zeros(r);
        zeros_from = r + 1;
        scalar_t* dst = o + r * iW;
        const Window2 win{g + nc * oD * oH * oW, wd.lo[i], wd.hi[i], wh.lo[j], wh.hi[j], oH, oW};
        if (fold.uniform == 2) {
          fold_by_2(dst, win, iW, stream);
          continue;
        }
        if (fold.halved && win.d1 - win.d0 == 1 && win.h1 - win.h0 == 1) {
          spread_by_2(dst, win.row(win.d0, win.h0), iW, fold.phase);
          continue;
        }
#if defined(CPU_CAPABILITY_AVX512)
        if constexpr (!std::is_same_v<scalar_t, double>) {
          if (fold.blocks * 16 >= iW) {
            fold_window_blocks(dst, win, fold, iW, stream && std::is_same_v<scalar_t, float>);
            continue;
          }
        }
#endif
        acc_t* acc = kAccInPlace ? reinterpret_cast<acc_t*>(dst) : buffer.data();
        std::fill(acc, acc + iW, acc_t(0));
        for (int64_t d = win.d0; d < win.d1; ++d) {
          for (int64_t h = win.h0; h < win.h1; ++h) {
            const scalar_t* row = win.row(d, h);
            if constexpr (kAccInPlace) {
              fold_row(acc, row, fold, iW, oW);
            } else {
              widen_row(row, wide.data(), oW);
              fold_row(acc, wide.data(), fold, iW, oW);
            }
          }
        }
        if constexpr (!kAccInPlace) {
          at::vec::convert(acc, dst, iW);
        }
      }
      clear_zeros(e);
      if (stream) cpu::stream_fence();
    });
  } else {
    // channels_last_3d: one row of pixels (n, i, j, :, :) at a time, C
    // contiguous. The grad_output rows of the row's (d, h) window are listed
    // once (d-major); each pixel k sums, per channel, those rows' pixels w of
    // its W window, in (d, h, w) order.
    const int64_t sizes[3] = {N, iD, iH};
    const int64_t rows = N * iD * iH;
    const int64_t cost = iW * std::max<int64_t>(C, C * oD * oH * oW / std::max<int64_t>(1, iD * iH * iW));
    using sVec = at::vec::Vectorized<scalar_t>;
    using aVec = at::vec::Vectorized<acc_t>;
    constexpr bool kReduced = !kAccInPlace;
    constexpr int64_t L = sVec::size(), K = aVec::size();  // channels per load; float lanes
    static_assert(!kReduced || L == 2 * K);
    if (C == K) {
      pixel_vector_rows<scalar_t>(g, o, a, wd, wh, ww, N, grain_for(cost));
      return;
    }
    at::parallel_for(0, rows, grain_for(cost), [&](int64_t b, int64_t e) {
      std::vector<const scalar_t*> window;  // the grad_output rows of the (d, h) window
      int64_t idx[3];
      unravel<3>(b, sizes, idx);
      for (int64_t r = b; r < e; ++r, advance<3>(sizes, idx)) {
        const int64_t n = idx[0], i = idx[1], j = idx[2];
        scalar_t* out_row = o + r * iW * C;
        window.clear();
        for (int64_t d = wd.lo[i]; d < wd.hi[i]; ++d) {
          for (int64_t h = wh.lo[j]; h < wh.hi[j]; ++h) window.push_back(g + ((n * oD + d) * oH + h) * oW * C);
        }
        for (int64_t k = 0; k < iW; ++k) {
          scalar_t* dst = out_row + k * C;
          const int64_t w0 = ww.lo[k], w1 = ww.hi[k];
          if (window.empty() || w0 == w1) {  // no output maps here (down-scaling)
            zero_fill(dst, C);
            continue;
          }
          // Vectors of channels accumulate in registers, half/bfloat16
          // widened to float32 there and rounded once; the channels past the
          // vectors in a scalar loop.
          const auto each_pixel = [&](auto&& add) {
            for (const scalar_t* row : window) {
              for (int64_t w = w0; w < w1; ++w) add(row + w * C);
            }
          };
          int64_t c = 0;
          for (; c + L <= C; c += L) {
            aVec v0(acc_t(0)), v1(acc_t(0));
            if constexpr (kReduced) {
              each_pixel([&](const scalar_t* px) {
                const auto [x0, x1] = load_pair(px + c);
                v0 = v0 + x0;
                v1 = v1 + x1;
              });
              store_pair(dst + c, v0, v1);
            } else {
              each_pixel([&](const scalar_t* px) { v0 = v0 + aVec::loadu(px + c); });
              v0.store(dst + c);
            }
          }
          if constexpr (kReduced) {
            if (c + K <= C) {  // half a vector of channels (masked load and store)
              aVec v0(acc_t(0));
              each_pixel([&](const scalar_t* px) { v0 = v0 + widen(px + c); });
              at::vec::convert_from_float<scalar_t>(v0, aVec(acc_t(0))).store(dst + c, K);
              c += K;
            }
          }
          for (; c < C; ++c) {
            acc_t acc = 0;
            each_pixel([&](const scalar_t* px) { acc += static_cast<acc_t>(px[c]); });
            dst[c] = static_cast<scalar_t>(acc);
          }
        }
      }
    });
  }
}

template <Mode mode>
void backward_into(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                   const Scale (&scales)[3], at::Tensor& grad_input, MemoryFormat fmt) {
  if (grad_input.numel() == 0) return;
  const at::Tensor go = grad_output.contiguous(fmt);
  const Axes a = make_axes(input_size, output_size, scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "upsample_nearest3d_backward_cpu", [&] {
    backward_kernel<mode, scalar_t>(go, grad_input, a, fmt);
  });
}

template <Mode mode>
at::Tensor backward_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                        c10::SymIntArrayRef input_size, Scale sd, Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  check_backward(mode, grad_output, output_size, input_size, scales);
  const MemoryFormat fmt = result_format(grad_output);
  const auto in_size = C10_AS_INTARRAYREF_SLOW(input_size);
  at::Tensor grad_input = cpu::empty(in_size, grad_output.options().memory_format(fmt));
  backward_into<mode>(grad_output, C10_AS_INTARRAYREF_SLOW(output_size), in_size, scales, grad_input, fmt);
  return grad_input;
}

template <Mode mode>
void backward_out_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                      c10::SymIntArrayRef input_size, Scale sd, Scale sh, Scale sw,
                      at::Tensor& grad_input) {
  const Scale scales[3] = {sd, sh, sw};
  check_backward(mode, grad_output, output_size, input_size, scales, grad_input);
  at::assert_no_internal_overlap(grad_input);
  const auto out_size = C10_AS_INTARRAYREF_SLOW(output_size);
  const auto in_size = C10_AS_INTARRAYREF_SLOW(input_size);
  // Write straight into grad_input when it is dense in a layout the kernel
  // produces and shares no memory with grad_output; otherwise go through a
  // temporary.
  const MemoryFormat preferred = result_format(grad_output);
  const bool direct = grad_input.is_contiguous(dense_format_5d(grad_input, preferred)) &&
                      shares_no_memory(grad_input, {&grad_output});
  write_out(
      grad_input, direct, [&] { return cpu::empty(in_size, grad_output.options().memory_format(preferred)); },
      [&](at::Tensor& dst) {
        backward_into<mode>(grad_output, out_size, in_size, scales, dst, dense_format_5d(dst, preferred));
      });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  m.impl("upsample_nearest3d", forward_cpu<Mode::Nearest>);
  m.impl("upsample_nearest3d_backward", backward_cpu<Mode::Nearest>);
  m.impl("upsample_nearest3d_backward.grad_input", backward_out_cpu<Mode::Nearest>);
  m.impl("upsample_nearest_exact3d", forward_cpu<Mode::NearestExact>);
  m.impl("upsample_nearest_exact3d_backward", backward_cpu<Mode::NearestExact>);
  m.impl("upsample_nearest_exact3d_backward.grad_input", backward_out_cpu<Mode::NearestExact>);
}

}  // namespace torch_aclnn::upsample
