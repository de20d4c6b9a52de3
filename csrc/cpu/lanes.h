// Lane helpers of the CPU kernels (at::vec, per instruction set): widening
// loads of half/bfloat16 into opmath vectors and rounding stores back, in
// pairs, partial, whole rows, exact (store_narrow), and split into even and
// odd elements. The upsample backwards and max_pool3d use them.
#pragma once

#include "cpu/cpu_utils.h"
#include "cpu/elementwise.h"

#include <ATen/OpMathType.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <tuple>
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
#include <immintrin.h>
#endif
#include <type_traits>

namespace torch_aclnn::cpu {
namespace {  // (each kernel file its own copy, per instruction set)

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
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    aVec v;
    at::vec::load_to_float(p, v);
    return v;
  } else {
    return aVec::loadu(p);
  }
}

// 2K consecutive elements (K lanes of the opmath type) as two opmath vectors,
// half/bfloat16 widened; and back, rounded once.
template <typename scalar_t>
C10_ALWAYS_INLINE auto load_pair(const scalar_t* p) {
  using aVec = at::vec::Vectorized<at::opmath_type<scalar_t>>;
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    static_assert(at::vec::Vectorized<scalar_t>::size() == 2 * aVec::size());
    return at::vec::convert_to_float<scalar_t>(at::vec::Vectorized<scalar_t>::loadu(p));
  } else {
    return std::make_tuple(aVec::loadu(p), aVec::loadu(p + aVec::size()));
  }
}

// With `stream`, non-temporal stores (p 64-byte aligned; cpu::store_vector).
template <typename scalar_t, typename aVec>
C10_ALWAYS_INLINE void store_pair(scalar_t* p, const aVec& lo, const aVec& hi, bool stream = false) {
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    store_vector(at::vec::convert_from_float<scalar_t>(lo, hi), p, stream);
  } else {
    store_vector(lo, p, stream);
    store_vector(hi, p + aVec::size(), stream);
  }
}

// The first n (0 <= n <= 2K) of 2K consecutive elements as two opmath
// vectors, the lanes past n +0.0 (nothing past n is read); and the first n
// lanes of two opmath vectors stored, rounded once (nothing past n written).
template <typename scalar_t>
C10_ALWAYS_INLINE auto load_pair(const scalar_t* p, int64_t n) {
  using aVec = at::vec::Vectorized<at::opmath_type<scalar_t>>;
  constexpr int64_t K = aVec::size();
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    return at::vec::convert_to_float<scalar_t>(at::vec::Vectorized<scalar_t>::loadu(p, n));
  } else {
    return std::make_tuple(aVec::loadu(p, std::min(n, K)), n > K ? aVec::loadu(p + K, n - K) : aVec(0));
  }
}

template <typename scalar_t, typename aVec>
C10_ALWAYS_INLINE void store_pair(scalar_t* p, const aVec& lo, const aVec& hi, int64_t n) {
  constexpr int64_t K = aVec::size();
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    at::vec::convert_from_float<scalar_t>(lo, hi).store(p, static_cast<int>(n));
  } else {
    lo.store(p, static_cast<int>(std::min(n, K)));
    if (n > K) hi.store(p + K, static_cast<int>(n - K));
  }
}

// The first n <= K float32 lanes of v stored as scalar_t (nothing past n
// written), each exact for a value widened from scalar_t: bfloat16 as each
// lane's top 16 bits, NaN payloads too (widening only moves the bits);
// float32 and float16 through store_pair (a float16 NaN's payload may
// change).
template <typename scalar_t>
C10_ALWAYS_INLINE void store_narrow(scalar_t* out, const at::vec::Vectorized<float>& v, int n) {
  if constexpr (!std::is_same_v<scalar_t, c10::BFloat16>) {
    store_pair(out, v, v, static_cast<int64_t>(n));
  } else {
#if defined(CPU_CAPABILITY_AVX512)
    const __m256i top = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16));
    _mm256_mask_storeu_epi16(out, static_cast<__mmask16>((1u << n) - 1u), top);
#else
    constexpr int K = at::vec::Vectorized<float>::size();
    alignas(64) scalar_t lanes[K];
#if defined(CPU_CAPABILITY_AVX2)
    const __m256i s = _mm256_srli_epi32(_mm256_castps_si256(v), 16);
    const __m128i top = _mm_packus_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    if (n == K) return _mm_storeu_si128(reinterpret_cast<__m128i*>(out), top);
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), top);
#else
    alignas(64) uint32_t bits[K];
    v.store(reinterpret_cast<float*>(bits));
    for (int i = 0; i < n; ++i) lanes[i] = scalar_t(static_cast<uint16_t>(bits[i] >> 16), scalar_t::from_bits());
#endif
    std::copy_n(lanes, n, out);
#endif
  }
}

// n sums converted to scalar_t (at::vec::convert). float32 to half/bfloat16:
// the last partial block goes through the same vector conversion as the
// whole ones (at::vec::convert rounds its tail element by element, which
// encodes a NaN differently), so an element's bits do not depend on where
// the row ends.
template <typename scalar_t, typename src_t>
inline void narrow_row(const src_t* __restrict src, scalar_t* __restrict dst, int64_t n) {
  if constexpr (std::is_same_v<src_t, float> && at::vec::is_reduced_floating_point_v<scalar_t>) {
    using fVec = at::vec::Vectorized<float>;
    constexpr int64_t K = fVec::size();
    int64_t i = 0;
    for (; i + 2 * K <= n; i += 2 * K) store_pair(dst + i, fVec::loadu(src + i), fVec::loadu(src + i + K));
    if (i < n) {
      const auto [lo, hi] = load_pair(src + i, n - i);
      store_pair(dst + i, lo, hi, n - i);
    }
  } else {
    at::vec::convert(src, dst, n);
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

}  // namespace
}  // namespace torch_aclnn::cpu
