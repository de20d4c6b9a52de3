// NCDHW backward rows on AVX-512 whose W fold the permute blocks cover.
// (csrc/cpu/upsample.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/upsample/row_fold.h"
#include "cpu/lanes.h"

namespace torch_aclnn::upsample {
namespace {  // included by cpu/upsample.cpp only

#if defined(CPU_CAPABILITY_AVX512)
// One grad_input row whose W fold the permute blocks cover (f.blocks * 16 >=
// in; see RowFold): block by block, each of 16 elements sums its window's
// rows in (d, h) order, and within a row its two taps in w order, in one
// float32 register from +0.0, and is stored once (half/bfloat16: widened in
// registers, rounded once; float32 non-temporal when `stream`: dst 64-byte
// aligned). The additions of the row-by-row fold in the same order, without
// storing and reloading the partial sums, and each block's tables are read
// once per row of grad_input instead of once per row of grad_output.
template <typename scalar_t>
void fold_window_blocks(scalar_t* dst, const Window2<scalar_t>& win, const RowFold& f, int64_t in, bool stream) {
  using fVec = at::vec::Vectorized<float>;
  for (int64_t b = 0; b < f.blocks; ++b) {
    const __m512i idx0 = _mm512_loadu_si512(f.idx0.data() + 16 * b);
    const __m512i idx1 = _mm512_loadu_si512(f.idx1.data() + 16 * b);
    const __mmask16 load_lo = f.load_lo[b], load_hi = f.load_hi[b], one = f.one[b], two = f.two[b];
    // Whole loads where the span's 32 elements lie inside the (n, c) volume
    // of grad_output (lanes past the block's outputs are never picked):
    // masked loads only at the end of its last row. On AMD family 26 (Zen 5)
    // masked loads of rows that come from memory run several times slower
    // than whole ones (the scale-1.5 bench case fell below aten with every
    // load masked).
    __m512 a = _mm512_setzero_ps();
    for (int64_t d = win.d0; d < win.d1; ++d) {
      for (int64_t h = win.h0; h < win.h1; ++h) {
        const scalar_t* span = win.row(d, h) + f.base[b];
        const bool whole = win.inside(d, h, f.base[b], 32);
        __m512 lo, hi;
        if constexpr (std::is_same_v<scalar_t, float>) {
          lo = whole ? _mm512_loadu_ps(span) : _mm512_maskz_loadu_ps(load_lo, span);
          hi = whole ? _mm512_loadu_ps(span + 16) : _mm512_maskz_loadu_ps(load_hi, span + 16);
        } else {
          const __mmask32 lanes = _mm512_kunpackw(load_hi, load_lo);  // (hi << 16) | lo
          const auto [l, h2] = at::vec::convert_to_float<scalar_t>(at::vec::Vectorized<scalar_t>(
              whole ? _mm512_loadu_si512(span) : _mm512_maskz_loadu_epi16(lanes, span)));
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

}  // namespace
}  // namespace torch_aclnn::upsample
