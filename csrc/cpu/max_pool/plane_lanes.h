// The forward of small NCDHW planes of narrow rows, K planes at once as a
// vector's lanes.
// (cpu/max_pool.cpp includes it and picks the path: pick_forward_path.)
#pragma once

#include "cpu/max_pool/window_fold.h"

namespace torch_aclnn::max_pool {
namespace {  // included by cpu/max_pool.cpp only

// Whether forward_plane_lanes beats the row-wise forward_plane: planes
// small enough for K planes' transposed copy in L2 (256 KiB), rows of fewer
// windows than a vector has lanes, and fewer vector folds per window. The
// row-wise path (W stride 1 or 2) folds a row's a0 windows that start in
// the padding tap by tap (about a fold a tap) and the rest in one vector;
// the lanes path folds K planes' window at once, and its transposes and
// plane-by-plane stores cost about 2 folds a window (as timed on 2x2x2 and
// 3x3x3 windows of 8^3 to 24^3 planes).
inline bool lanes_of_planes(const Geometry& g, const Window& w) {
  constexpr int64_t K = at::vec::Vectorized<float>::size();
  if (g.oW >= K || g.S > (int64_t(1) << 16) / K) return false;
  if (w.stride[2] > 2) return true;  // (the row-wise path is not vectorised there)
  const double taps = static_cast<double>(w.kernel[0] * w.kernel[1] * w.kernel[2]);
  const int64_t a0 = left_padding_windows(g, w);
  const double rows = (a0 < g.oW ? taps / static_cast<double>(g.oW - a0) : 0.0) +
                      static_cast<double>(a0) * taps / static_cast<double>(g.oW);
  return rows > taps / K + 2.0;
}

// dst[j * K + q] = src[q * ld + j] in float32 (widened), for m <= K planes q
// and n positions j: K planes as the lanes of each position.
template <typename T>
void planes_to_lanes(const T* src, int64_t ld, int64_t m, int64_t n, float* rows, float* dst) {
  constexpr int64_t K = at::vec::Vectorized<float>::size();
  const float* f = nullptr;
  int64_t fld = ld;
  if constexpr (std::is_same_v<T, float>) {
    f = src;
  } else {  // (widened row by row into rows first: m x n floats)
    for (int64_t q = 0; q < m; ++q) cpu::widen_row(src + q * ld, rows + q * n, n);
    f = rows, fld = n;
  }
#if defined(CPU_CAPABILITY_AVX512)
  at::vec::transpose_mxn<float>(f, fld, dst, K, static_cast<int>(m), static_cast<int>(n));
#else
  int64_t j = 0;
#if defined(CPU_CAPABILITY_AVX2)
  static_assert(K == 8);
  if (m == K) {
    for (; j + K <= n; j += K) at::vec::transpose_mxn<float, 8, 8>(f + j, fld, dst + j * K, K);
  }
#endif
  for (int64_t q = 0; q < m; ++q) {
    for (int64_t i = j; i < n; ++i) dst[i * K + q] = f[q * fld + i];
  }
#endif
}

// The NCDHW forward of small planes (lanes_of_planes), K planes at a time,
// K the float32 vector's lanes: the planes' positions transposed into
// lanes (planes_to_lanes), then each window's taps folded as the
// channels_last_3d forward folds its channels, and stored plane by plane.
template <typename T>
void forward_plane_lanes(T* out, int64_t* ix, Planes op, const T* x, Planes xp, const Geometry& g, const Window& w) {
  using Vec = at::vec::Vectorized<float>;
  using IVec = at::vec::Vectorized<int32_t>;
  constexpr int64_t K = Vec::size();
  static_assert(IVec::size() == K);
  // Blocks of K planes of one n, or of the N x C planes as one run where
  // they are evenly strided (a dense self).
  const bool run = xp.sN == g.C * xp.sC;
  const int64_t per_n = (g.C + K - 1) / K, planes = g.N * g.C;
  const int64_t blocks = run ? (planes + K - 1) / K : g.N * per_n;
  // Tasks: a block's pooled D rows in parts where the blocks alone are fewer
  // than the threads; a task transposes the input D planes its windows reach.
  const int64_t parts = std::min(g.oD, std::max<int64_t>(1, (at::get_num_threads() + blocks - 1) / blocks));
  const int64_t taps = w.kernel[0] * w.kernel[1] * w.kernel[2], HW = g.H * g.W;
  const int64_t reach = (w.kernel[0] - 1) * w.dilation[0] + 1;
  at::parallel_for(0, blocks * parts, cpu::grain_for(8 * K * g.oS / parts * taps), [&](int64_t b, int64_t e) {
    std::vector<float> lanes(g.S * K), rows(std::is_same_v<T, float> ? 0 : K * g.S);
    alignas(64) int32_t where[K];
    alignas(64) float best[K];
    for (int64_t t = b; t < e; ++t) {
      const int64_t block = t / parts, part = t % parts;
      const int64_t p0 = run ? block * K : block / per_n * g.C + block % per_n * K;  // (flat plane n * C + c)
      const int64_t m = run ? std::min(K, planes - p0) : std::min(K, g.C - block % per_n * K);
      const int64_t od0 = part * g.oD / parts, od1 = (part + 1) * g.oD / parts;
      const int64_t z0 = std::max<int64_t>(0, od0 * w.stride[0] - w.padding[0]);
      const int64_t z1 = std::min(g.D, (od1 - 1) * w.stride[0] - w.padding[0] + reach);
      const T* src = x + p0 / g.C * xp.sN + p0 % g.C * xp.sC;
      planes_to_lanes(src + z0 * HW, xp.sC, m, (z1 - z0) * HW, rows.data(), lanes.data() + z0 * HW * K);
      const auto fold = [&](int64_t, int64_t o, int64_t first, const auto& taps_of) {
        Vec best_v;
        IVec where_v;
        max_window(taps_of, first, [&](int64_t pos) { return Vec::loadu(lanes.data() + pos * K); }, best_v, where_v);
        best_v.store(best);
        where_v.store(where);
        for (int64_t q = 0; q < m; ++q) {
          const int64_t p = p0 + q, at = p / g.C * op.sN + p % g.C * op.sC + o * op.sK;
          if constexpr (std::is_same_v<T, float>) {
            out[at] = best[q];  // (the element's own bits: max_window only selects)
          } else {
            out[at] = src[q * xp.sC + where[q]];
          }
          ix[at] = where[q];
        }
      };
      for_each_channels_last_window(od0 * g.oH, od1 * g.oH, g, w, fold);  // (n = 0: the rows of one plane)
    }
  });
}

}  // namespace
}  // namespace torch_aclnn::max_pool
