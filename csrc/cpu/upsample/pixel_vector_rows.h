// channels_last_3d backward when a pixel's channels are one opmath vector.
// (csrc/cpu/upsample.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/lanes.h"
#include "cpu/upsample/windows.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace torch_aclnn::upsample {
namespace {  // included by cpu/upsample.cpp only

// channels_last_3d backward when a pixel's channels are exactly one opmath
// vector (C == K: 16 float32/half/bfloat16 channels with AVX-512): the
// grad_output rows of a grad_input row's (d, h) window are read one after
// another (d-major), each as one sequential stream, and folded into an
// accumulator row, pixel k adding the row's pixels w of its W window. Every
// element so sums its window in (d, h, w) order from +0.0, as the per-pixel
// register loop of pixel_windows does, which reads the window's rows side
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
              const auto [x0, x1] = cpu::load_pair(row + w * C);
              v = v + x0;
              v = v + x1;
            }
            if (w < w1) v = v + cpu::widen(row + w * C);
            v.store(acc + k * C);
          }
        }
      }
      if (stream) {  // pixel pairs (whole lines: the row starts on a 64-byte boundary), then an odd last pixel
        int64_t k = 0;
        for (; k + 2 * C <= iW * C; k += 2 * C) {
          cpu::store_pair(out_row + k, aVec::loadu(acc + k), aVec::loadu(acc + k + C), true);
        }
        at::vec::convert(acc + k, out_row + k, iW * C - k);
      } else if constexpr (!kAccInPlace) {
        at::vec::convert(acc, out_row, iW * C);
      }
    }
    if (stream) cpu::stream_fence();
  });
}

}  // namespace
}  // namespace torch_aclnn::upsample
