// channels_last_3d backward, any number of channels.
// (csrc/cpu/upsample.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/lanes.h"
#include "cpu/upsample/windows.h"

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>

#include <type_traits>
#include <vector>

namespace torch_aclnn::upsample {
namespace {  // included by cpu/upsample.cpp only

// channels_last_3d backward, generic: one row of pixels (n, i, j, :, :) at a
// time, C contiguous. The grad_output rows of the row's (d, h) window are
// listed once (d-major); each pixel k sums, per channel, those rows' pixels w
// of its W window, in (d, h, w) order.
template <typename scalar_t>
void pixel_windows(const scalar_t* g, scalar_t* o, const Axes& a, const Windows& wd, const Windows& wh,
                   const Windows& ww, int64_t N, int64_t C, int64_t grain) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr bool kAccInPlace = std::is_same_v<acc_t, scalar_t>;
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  const int64_t sizes[3] = {N, iD, iH};
  const int64_t rows = N * iD * iH;
  using sVec = at::vec::Vectorized<scalar_t>;
  using aVec = at::vec::Vectorized<acc_t>;
  constexpr bool kReduced = !kAccInPlace;
  constexpr int64_t L = sVec::size(), K = aVec::size();  // channels per load; float lanes
  static_assert(!kReduced || L == 2 * K);
  at::parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
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
              const auto [x0, x1] = cpu::load_pair(px + c);
              v0 = v0 + x0;
              v1 = v1 + x1;
            });
            cpu::store_pair(dst + c, v0, v1);
          } else {
            each_pixel([&](const scalar_t* px) { v0 = v0 + aVec::loadu(px + c); });
            v0.store(dst + c);
          }
        }
        if constexpr (kReduced) {
          if (c + K <= C) {  // half a vector of channels (masked load and store)
            aVec v0(acc_t(0));
            each_pixel([&](const scalar_t* px) { v0 = v0 + cpu::widen(px + c); });
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

}  // namespace
}  // namespace torch_aclnn::upsample
