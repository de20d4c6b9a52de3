// The backward of disjoint windows in one write pass, without a zero-fill:
// every tap gets its window's term or 0 (NCDHW planes, channels_last_3d).
// (cpu/max_pool.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/max_pool/walk.h"

namespace torch_aclnn::max_pool {
namespace {  // included by cpu/max_pool.cpp only

// The taps of n windows of one row of disjoint windows: window i's taps are
// dst[i * s + l * d] (flat position pos0 + i * s + l * d), l in [0, k); each
// gets the window's term where the window's index names it, else 0.
// hits[i] += how many of its taps the index names (0 or 1). K > 0: k = s = K,
// d = 1 and adjacent indices (xK = 1): the loop vectorises.
template <int K, typename T, typename I>
inline void write_windows(T* __restrict dst, int64_t n, int64_t pos0, int64_t k, int64_t s, int64_t d,
                          const T* __restrict terms, const I* __restrict ix, int64_t xK, int32_t* __restrict hits) {
  const int64_t kk = K ? K : k, ss = K ? K : s, dd = K ? 1 : d, xk = K ? 1 : xK;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = static_cast<int64_t>(ix[i * xk]);
    const T term = terms[i];
    int32_t named = 0;
    for (int64_t l = 0; l < kk; ++l) {
      const int64_t at = i * ss + l * dd;
      const bool mine = v == pos0 + at;
      dst[at] = keep_if(mine, term);
      named += mine;
    }
    hits[i] += named;
  }
}

// Disjoint windows (no position in two), grad_input's D, H, W axes dense:
// one plane in a single write pass instead of zero-fill and scatter. Row by
// row as in the forward, every tap inside self of every window is written
// once (write_windows). An index that is a tap of its own window names
// exactly one; any other names none (row 12). Returns the first pooled
// position whose index named none, or kNone. Positions in no window are
// the caller's (zero-filled first).
// hits, terms: oW elements of scratch.
template <typename T, typename I>
int64_t write_plane(T* out, const T* go, int64_t gK, const I* ix, int64_t xK, const Geometry& g, const Window& w,
                    int32_t* hits, T* terms) {
  const auto& k = w.kernel;
  const auto& s = w.stride;
  const auto& p = w.padding;
  const auto& d = w.dilation;
  // The pooled positions [a, b) whose windows lie inside the row on W (the
  // rest, at most a few at each end, are clamped one by one).
  const int64_t a = std::min(g.oW, (p[2] + s[2] - 1) / s[2]);
  const int64_t reach = g.W - 1 + p[2] - (k[2] - 1) * d[2];
  const int64_t b = std::max(a, reach < 0 ? 0 : std::min(g.oW, reach / s[2] + 1));
  const bool dense = xK == 1, packed = s[2] == k[2] && (d[2] == 1 || k[2] == 1);
  return for_each_pooled_row(g, w, [&](const PooledRow& r) {
    const int64_t o = r.o;
    std::fill(hits, hits + g.oW, 0);
    for (int64_t ow = 0; ow < g.oW; ++ow) terms[ow] = first_term(go[(o + ow) * gK]);
    const I* xr = ix + o * xK;
    for (int64_t i = r.lo0; i < r.hi0; ++i) {
      for (int64_t j = r.lo1; j < r.hi1; ++j) {
        const int64_t row = r.input_row(i, j, g, w);
        const auto clamped = [&](int64_t ow) {
          int64_t lo2, hi2;
          const int64_t x = ow * s[2] - p[2];
          tap_range<int64_t>(x, g.W, k[2], d[2], lo2, hi2);
          const int64_t first = row + x + lo2 * d[2];
          write_windows<0>(out + first, 1, first, hi2 - lo2, s[2], d[2], terms + ow, xr + ow * xK, xK, hits + ow);
        };
        for (int64_t ow = 0; ow < a; ++ow) clamped(ow);
        const int64_t first = row + a * s[2] - p[2], n = b - a;
        const auto inside = [&](auto K) {
          write_windows<decltype(K)::value>(out + first, n, first, k[2], s[2], d[2], terms + a, xr + a * xK, xK,
                                            hits + a);
        };
        if (dense && packed && k[2] == 2) {
          inside(std::integral_constant<int, 2>{});
        } else if (dense && packed && k[2] == 3) {
          inside(std::integral_constant<int, 3>{});
        } else if (dense && packed && k[2] == 1) {
          inside(std::integral_constant<int, 1>{});
        } else {
          inside(std::integral_constant<int, 0>{});
        }
        for (int64_t ow = b; ow < g.oW; ++ow) clamped(ow);
      }
    }
    int32_t miss = 0;
    for (int64_t ow = 0; ow < g.oW; ++ow) miss |= hits[ow] ^ 1;
    if (C10_UNLIKELY(miss != 0)) {
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        if (hits[ow] != 1) return o + ow;
      }
    }
    return kNone;
  });
}

// channels_last_3d with disjoint windows: write_plane's single write pass,
// over the channels. Tasks are pooled rows (n, od, oh); every tap inside self
// of every window gets, channel by channel, the window's term where the
// channel's index names the tap, else 0. Each index that names no tap of its
// own window is noted (row 12). Positions in no window are zero-filled first.
template <typename T, typename I>
void write_channels_last(T* out, Planes op, const T* go, Planes gp, const I* ix, Planes xp, const Geometry& g,
                         const Window& w, FirstBad& bad) {
  TORCH_INTERNAL_ASSERT(op.sK == g.C && gp.sC == 1 && xp.sC == 1);  // (dense channels_last_3d grad_input)
  if (!windows_cover_self(g, w)) {
    at::parallel_for(0, g.N, 1, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) cpu::zero_fill(out + n * op.sN, g.S * g.C);
    });
  }
  const int64_t window_taps = w.kernel[0] * w.kernel[1] * w.kernel[2];
  // Each index as its offset from the window's first tap (rel, in J: int32
  // where self's positions fit, so a tap's compare and the term's select
  // are as wide as the vector lanes allow), -1 where it is before the first
  // tap or beyond J: a tap's offset is never -1. The taps inside self are
  // distinct positions, so an index names at most one: it is a tap of its
  // window iff one tap's compare took it (hit).
  const auto run = [&](auto j) {
    using J = decltype(j);
    using Vec = at::vec::Vectorized<float>;
    using IVec = at::vec::Vectorized<int32_t>;
    // float32 compute with int32 offsets: K channels at a time in vectors,
    // the hits in a register from tap to tap
    constexpr bool kVectors = std::is_same_v<at::opmath_type<T>, float> && std::is_same_v<J, int32_t>;
    constexpr int64_t K = kVectors ? Vec::size() : 1;
    const int64_t padded = (g.C + K - 1) / K * K;  // (lanes past C: offset -1, no tap)
    // Non-temporal stores where every store is a whole cache line (float32
    // in 64-byte vectors, whole vectors of channels) and the operands
    // outgrow the cache (cpu::stream_stores): the lines are written once.
    const int64_t bytes = g.N * (g.S + g.oS) * g.C * static_cast<int64_t>(sizeof(T)) + g.N * g.oS * g.C * sizeof(I);
    const bool stream = std::is_same_v<T, float> && K * sizeof(T) == 64 && g.C % K == 0 &&
                        reinterpret_cast<uintptr_t>(out) % 64 == 0 && cpu::stream_stores(bytes);
    at::parallel_for(0, g.N * g.oD * g.oH, cpu::grain_for(g.oW * g.C * window_taps), [&](int64_t b, int64_t e) {
      std::vector<T> terms(padded);
      std::vector<J> rel(padded, J(-1)), seen(kVectors ? 0 : g.C);
      for_each_channels_last_window(b, e, g, w, [&](int64_t n, int64_t o, int64_t first, const auto& taps) {
        const T* gs = go + n * gp.sN + o * gp.sK;
        const I* is = ix + n * xp.sN + o * xp.sK;
        T* dst = out + n * op.sN;
        for (int64_t c = 0; c < g.C; ++c) {
          terms[c] = first_term(gs[c]);
          const int64_t r = static_cast<int64_t>(is[c]) - first;
          rel[c] = r >= 0 && r <= std::numeric_limits<J>::max() ? static_cast<J>(r) : J(-1);
        }
        const auto missed = [&](int64_t c) { bad.note((n * g.C + c) * g.oS + o); };
        if constexpr (kVectors) {
          for (int64_t c0 = 0; c0 < g.C; c0 += K) {
            const int nc = static_cast<int>(std::min(K, g.C - c0));
            const IVec at_ = IVec::loadu(rel.data() + c0);
            const Vec term = cpu::widen(terms.data() + c0);
            IVec hit(0);
            taps([&](int64_t pos) {
              const IVec mine = at_ == IVec(static_cast<int32_t>(pos - first));
              hit = hit | mine;
              // (the term's bits or +0: exact in store_narrow, for every T)
              const Vec v = term & at::vec::cast<float>(mine);
              if constexpr (std::is_same_v<T, float>) {
                if (stream) return cpu::store_vector(v, dst + pos * op.sK + c0, true);
              }
              cpu::store_narrow(dst + pos * op.sK + c0, v, nc);
            });
            const uint32_t none = static_cast<uint32_t>(at::vec::cast<float>(hit).zero_mask()) & ((1u << nc) - 1u);
            if (C10_UNLIKELY(none != 0)) {
              for (int c = 0; c < nc; ++c) {
                if ((none >> c) & 1u) missed(c0 + c);
              }
            }
          }
        } else {
          std::fill(seen.begin(), seen.end(), J(0));
          taps([&](int64_t pos) {
            T* __restrict d = dst + pos * op.sK;
            const T* __restrict term = terms.data();
            const J* __restrict at = rel.data();
            J* __restrict hit = seen.data();
            const J r = static_cast<J>(pos - first);
            for (int64_t c = 0; c < g.C; ++c) {
              const bool mine = at[c] == r;
              d[c] = keep_if(mine, term[c]);
              hit[c] |= static_cast<J>(mine);
            }
          });
          for (int64_t c = 0; c < g.C; ++c) {
            if (C10_UNLIKELY(seen[c] == 0)) missed(c);
          }
        }
      });
      if (stream) cpu::stream_fence();
    });
  };
  return positions_fit<int32_t>(g) ? run(int32_t{}) : run(int64_t{});
}

}  // namespace
}  // namespace torch_aclnn::max_pool
