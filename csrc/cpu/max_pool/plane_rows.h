// The forward of a dense NCDHW plane, pooled row by pooled row.
// (cpu/max_pool.cpp includes it and picks the path: pick_forward_path.)
#pragma once

#include "cpu/max_pool/window_fold.h"

namespace torch_aclnn::max_pool {
namespace {  // included by cpu/max_pool.cpp only

// One plane of a dense-axes (sK == 1) NCDHW self, row by row: for each
// pooled row (od, oh), the window taps in increasing (d, h, w), each tap for
// every pooled position of the row that has it inside self (so every
// window still sees its taps in window_max's order). J: the position type
// (int32_t where S fits).
template <int kStride, typename T, typename J>
void forward_plane(const T* xs, T* os, int64_t* is, int64_t oK, const Geometry& g, const Window& w,
                   at::opmath_type<T>* best, J* where) {
  using A = at::opmath_type<T>;
  const auto& k = w.kernel;
  const auto& s = w.stride;
  const auto& p = w.padding;
  const auto& d = w.dilation;
  const int64_t st = kStride ? kStride : s[2];  // (a constant divisor where the template fixes it)
  if constexpr (kStride != 0 && std::is_same_v<A, float> && std::is_same_v<J, int32_t>) {
    using Vec = at::vec::Vectorized<float>;
    using IVec = at::vec::Vectorized<int32_t>;
    constexpr int64_t K = Vec::size();
    const int64_t a0 = left_padding_windows(g, w);
    if (g.oW <= K + a0 && g.oW > a0) {
      // Rows of at most one vector of windows past those (a small model's):
      // a pooled row's taps folded in registers, stored once; the first a0
      // windows one by one (window_max).
      const int64_t nv = g.oW - a0;  // (lane q: window a0 + q)
      const IVec step = IVec::arange(0, kStride);
      const auto at = [&](int64_t pos) { return static_cast<float>(xs[pos]); };
      for_each_pooled_row(g, w, [&](const PooledRow& r) {
        const int64_t x0 = a0 * st - p[2];  // (>= 0: every tap of the vector's windows is at or right of it)
        const Vec none(-std::numeric_limits<float>::infinity());
        Vec best_v = none;
        NanLanes nan;
        IVec where_v = IVec(static_cast<int32_t>(r.input_row(r.lo0, r.lo1, g, w) + x0)) + step;  // (first taps)
        for (int64_t i = r.lo0; i < r.hi0; ++i) {
          for (int64_t j = r.lo1; j < r.hi1; ++j) {
            const int64_t row = r.input_row(i, j, g, w);
            for (int64_t l = 0; l < k[2] && x0 + l * d[2] < g.W; ++l) {
              const int64_t x = x0 + l * d[2];                              // (lane 0's tap l)
              const int64_t n = std::min(nv, (g.W - 1 - x) / st + 1);      // windows with tap l in the row
              const Vec v = load_taps<kStride>(xs + row + x, n, x + kStride * K <= g.W);
              nan.add(v);  // (the lanes past n: +0)
              max_lanes(n == nv ? v : Vec::blendv(none, v, lanes_below(n)), IVec(static_cast<int32_t>(row + x)) + step,
                        best_v, where_v);
            }
          }
        }
        where_v.store(where + a0);
        const int64_t od = r.o / (g.oH * g.oW), oh = r.o / g.oW % g.oH;
        const uint32_t nan_lanes = nan.bits();
        for (int64_t ow = 0; ow < g.oW; ++ow) {
          if (ow < a0 || ((nan_lanes >> (ow - a0)) & 1u)) {  // (a window that starts in the padding, or saw a NaN)
            int64_t index;
            plane_window_max(at, od, oh, ow, g, w, best[ow], index);
            where[ow] = static_cast<J>(index);
          }
        }
        store_result<T, A, J, true>(os + r.o * oK, is + r.o * oK, oK, g.oW, best, where, xs, 1, 0);
        return kNone;
      });
      return;
    }
  }
  for_each_pooled_row(g, w, [&](const PooledRow& r) {
    const int64_t first_row = r.input_row(r.lo0, r.lo1, g, w);
    for (int64_t ow = 0; ow < g.oW; ++ow) {
      int64_t lo2, hi2;
      const int64_t x0 = ow * st - p[2];
      tap_range<int64_t>(x0, g.W, k[2], d[2], lo2, hi2);
      best[ow] = -std::numeric_limits<A>::infinity();
      where[ow] = static_cast<J>(first_row + x0 + lo2 * d[2]);
    }
    for (int64_t i = r.lo0; i < r.hi0; ++i) {
      for (int64_t j = r.lo1; j < r.hi1; ++j) {
        const int64_t row = r.input_row(i, j, g, w);
        for (int64_t l = 0; l < k[2]; ++l) {
          // the pooled positions whose tap l lies inside the row: x = ow * s - p + l * d in [0, W)
          const int64_t shift = l * d[2] - p[2];
          const int64_t a = shift >= 0 ? 0 : (-shift + st - 1) / st;
          const int64_t last = g.W - 1 - shift;
          const int64_t b = last < 0 ? 0 : std::min(g.oW, last / st + 1);
          if (a >= b) continue;
          const int64_t pos = row + a * st + shift;
          if constexpr (kStride != 0 && std::is_same_v<at::opmath_type<T>, float> && std::is_same_v<J, int32_t>) {
            fold_tap_vectors<kStride>(xs + pos, b - a, static_cast<J>(pos), best + a, where + a);
          } else {
            fold_tap<kStride>(xs + pos, st, b - a, static_cast<J>(pos), static_cast<J>(st), best + a, where + a);
          }
        }
      }
    }
    store_result(os + r.o * oK, is + r.o * oK, oK, g.oW, best, where, xs, 1, 0);
    return kNone;
  });
}

}  // namespace
}  // namespace torch_aclnn::max_pool
