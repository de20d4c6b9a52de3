// The W fold of the NCDHW row-by-row paths: how one grad_output row adds into
// one grad_input row (RowFold), the generic tap-by-tap fold (fold_row), and
// the (d, h) window of grad_output rows a grad_input row sums (Window2).
// (csrc/cpu/upsample.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/upsample/windows.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
#include <immintrin.h>
#endif

namespace torch_aclnn::upsample {
namespace {  // included by cpu/upsample.cpp only


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

// The (d, h) window of one NCDHW grad_input row: the grad_output rows
// (d, h), d in [d0, d1), h in [h0, h1), of its (n, c) volume (oD x oH x oW).
template <typename scalar_t>
struct Window2 {
  const scalar_t* volume;
  int64_t d0, d1, h0, h1, oD, oH, oW;
  const scalar_t* row(int64_t d, int64_t h) const { return volume + (d * oH + h) * oW; }
  // Whether the n elements from row (d, h)'s element w lie inside the volume.
  bool inside(int64_t d, int64_t h, int64_t w, int64_t n) const { return (d * oH + h) * oW + w + n <= oD * oH * oW; }
};

}  // namespace
}  // namespace torch_aclnn::upsample
