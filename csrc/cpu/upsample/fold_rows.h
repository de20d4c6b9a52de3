// NCDHW backward, row by row (the general NCDHW path, with its row kernels).
// (csrc/cpu/upsample.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/upsample/halved_rows.h"
#include "cpu/upsample/row_fold.h"
#include "cpu/lanes.h"

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/functional.h>

#include <algorithm>
#include <type_traits>
#include <vector>

namespace torch_aclnn::upsample {
namespace {  // included by cpu/upsample.cpp only

// The NCDHW row-by-row backward: one grad_input row (n, c, i, j, :) at a
// time, for each (d, h) of its window, fold grad_output row (d, h) into it
// along W. Rows no output maps to (down-scaling) are +0.0; a row whose
// window is one grad_output row, when W is halved, is spread_by_2; every
// other row goes to the row kernel the caller picked: make_fold() gives one
// per thread (with its scratch), called as fold_one(dst, win). The row
// kernels: fold_by_2 (fold_by_2.h), fold_window_blocks (window_blocks.h) or
// GenericFold below.
template <typename scalar_t, typename MakeFold>
void fold_rows(const scalar_t* g, scalar_t* o, const Axes& a, const Windows& wd, const Windows& wh,
               const RowFold& fold, int64_t planes, bool stream, MakeFold&& make_fold) {
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  const int64_t sizes[4] = {planes, iD, iH, 1};
  const int64_t rows = planes * iD * iH;
  const int64_t cost = std::max<int64_t>(iW, oD * oH * oW / std::max<int64_t>(1, iD * iH));
  at::parallel_for(0, rows, grain_for(cost), [&](int64_t b, int64_t e) {
    auto fold_one = make_fold();  // per thread: its scratch rows
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
      const Window2 win{g + nc * oD * oH * oW, wd.lo[i], wd.hi[i], wh.lo[j], wh.hi[j], oD, oH, oW};
      if (fold.halved && win.d1 - win.d0 == 1 && win.h1 - win.h0 == 1) {
        spread_by_2(dst, win.row(win.d0, win.h0), iW, fold.phase);
        continue;
      }
      fold_one(dst, win);
    }
    clear_zeros(e);
    if (stream) cpu::stream_fence();
  });
}

// The generic row kernel: the tap-by-tap fold (fold_row) into grad_input's
// row, or for half/bfloat16 into a float32 row, widening each source row
// once, rounded once at the end.
template <typename scalar_t>
struct GenericFold {
  using acc_t = at::opmath_type<scalar_t>;
  static constexpr bool kAccInPlace = std::is_same_v<acc_t, scalar_t>;
  const RowFold& fold;
  int64_t iW, oW;
  std::vector<acc_t> buffer, wide;
  GenericFold(const RowFold& f, int64_t in, int64_t out)
      : fold(f), iW(in), oW(out), buffer(kAccInPlace ? 0 : in), wide(kAccInPlace ? 0 : out) {}

  void operator()(scalar_t* dst, const Window2<scalar_t>& win) {
    acc_t* acc = kAccInPlace ? reinterpret_cast<acc_t*>(dst) : buffer.data();
    std::fill(acc, acc + iW, acc_t(0));
    for (int64_t d = win.d0; d < win.d1; ++d) {
      for (int64_t h = win.h0; h < win.h1; ++h) {
        const scalar_t* row = win.row(d, h);
        if constexpr (kAccInPlace) {
          fold_row(acc, row, fold, iW, oW);
        } else {
          cpu::widen_row(row, wide.data(), oW);
          fold_row(acc, wide.data(), fold, iW, oW);
        }
      }
    }
    if constexpr (!kAccInPlace) {
      at::vec::convert(acc, dst, iW);
    }
  }
};

}  // namespace
}  // namespace torch_aclnn::upsample
