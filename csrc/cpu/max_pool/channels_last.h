// The forward of channels_last_3d float32-compute windows, a vector of
// channels per window (max_window).
// (cpu/max_pool.cpp includes it and picks the path: pick_forward_path.)
#pragma once

#include "cpu/max_pool/window_fold.h"

namespace torch_aclnn::max_pool {
namespace {  // included by cpu/max_pool.cpp only

// K pooled results of the vector folds, lanes below nc (the rest not
// written): the values best holds, which are self's elements themselves
// (max_window only selects, never computes), and their positions where, as
// int64. float32 and bfloat16 values go back exactly (store_narrow); a
// float16 is read again from self at its position (self_at(where)), so that
// a NaN keeps its payload.
template <typename T, typename SelfAt>
inline void store_lanes(T* out, int64_t* ix, const at::vec::Vectorized<float>& best,
                        const at::vec::Vectorized<int32_t>& where, int nc, SelfAt self_at) {
  constexpr int K = at::vec::Vectorized<float>::size();
  alignas(64) int32_t at[K];
  where.store(at);  // (read by the float16 values and the non-AVX-512 positions)
#if defined(CPU_CAPABILITY_AVX512)
  const __mmask16 live = static_cast<__mmask16>((1u << nc) - 1);
  const __m512i w = where;
  _mm512_mask_storeu_epi64(ix, static_cast<__mmask8>(live), _mm512_cvtepi32_epi64(_mm512_castsi512_si256(w)));
  _mm512_mask_storeu_epi64(ix + 8, static_cast<__mmask8>(live >> 8),
                           _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(w, 1)));
#else
  for (int c = 0; c < nc; ++c) ix[c] = at[c];
#endif
  if constexpr (std::is_same_v<T, c10::Half>) {
    for (int c = 0; c < nc; ++c) out[c] = self_at(at[c], c);
  } else {
    cpu::store_narrow(out, best, nc);
  }
}

// The channels_last_3d forward in float32 compare with int32 positions: per
// pooled position and vector of channels (float16/bfloat16 widened), the
// window's taps folded in registers (max_window: window_max's result) and
// stored once (store_lanes).
template <typename T>
void forward_channels_last_vectors(T* out, int64_t* ix, Planes op, const T* x, Planes xp, const Geometry& g,
                                   const Window& w, int64_t grain) {
  using Vec = at::vec::Vectorized<float>;
  using IVec = at::vec::Vectorized<int32_t>;
  static_assert(Vec::size() == IVec::size());
  constexpr int64_t K = Vec::size();
  at::parallel_for(0, g.N * g.oD * g.oH, grain, [&](int64_t b, int64_t e) {
    for_each_channels_last_window(b, e, g, w, [&](int64_t n, int64_t o, int64_t first, const auto& taps) {
      const T* xn = x + n * xp.sN;
      T* os = out + n * op.sN + o * op.sK;
      int64_t* is = ix + n * op.sN + o * op.sK;
      for (int64_t c0 = 0; c0 < g.C; c0 += K) {
        const int nc = static_cast<int>(std::min(K, g.C - c0));
        Vec best;
        IVec at_;
        max_window(taps, first, [&](int64_t pos) {
          const T* xt = xn + pos * xp.sK + c0;
          return nc == K ? cpu::widen(xt) : std::get<0>(cpu::load_pair(xt, nc));
        }, best, at_);
        store_lanes(os + c0, is + c0, best, at_, nc, [&](int32_t pos, int c) { return xn[pos * xp.sK + c0 + c]; });
      }
    });
  });
}

}  // namespace
}  // namespace torch_aclnn::max_pool
