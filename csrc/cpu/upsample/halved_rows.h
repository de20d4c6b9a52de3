// NCDHW backward when W is down-scaled by exactly 2: one grad_output row
// spread to every other element of a grad_input row (spread_by_2), and the
// whole-call path when no D or H window holds more than one output.
// (csrc/cpu/upsample.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/lanes.h"
#include "cpu/upsample/windows.h"

#include <ATen/Parallel.h>

namespace torch_aclnn::upsample {
namespace {  // included by cpu/upsample.cpp only

// One grad_input row whose (d, h) window is a single grad_output row, when W
// is down-scaled by exactly 2 (RowFold::halved): element 2m + phase is
// +0.0 + row[m] (the one addition of the generic path, which also turns
// -0.0 into +0.0), the others +0.0. Blocks of 2K outputs interleave a
// vector of the row with zeros; the rest is a scalar loop (partial vectors
// measured no faster on rows of 4 or 8).
template <typename scalar_t>
void spread_by_2(scalar_t* __restrict dst, const scalar_t* __restrict row, int64_t iW, int64_t phase) {
  using acc_t = at::opmath_type<scalar_t>;
  using aVec = at::vec::Vectorized<acc_t>;
  constexpr int64_t K = aVec::size();
  const aVec zero(acc_t(0));
  const auto spread = [&](const aVec& x) {
    return phase == 0 ? at::vec::interleave2(zero + x, zero) : at::vec::interleave2(zero, zero + x);
  };
  // The next single-row windows read the next rows of grad_output (iW / 2
  // elements each: halved means iW == 2 * oW): ask for them early (between
  // these rows lie zero rows, which hardware prefetch does not bridge well).
  constexpr int64_t kAhead = 4;
  const int64_t oW = iW / 2, line = 64 / sizeof(scalar_t);
  for (int64_t k = 0; k < oW; k += line) __builtin_prefetch(row + kAhead * oW + k);
  int64_t k = 0;
  for (; k + 4 * K <= iW; k += 4 * K) {  // 2K source elements
    const auto [x0, x1] = cpu::load_pair(row + k / 2);
    const auto [a0, b0] = spread(x0);
    const auto [a1, b1] = spread(x1);
    cpu::store_pair(dst + k, a0, b0);
    cpu::store_pair(dst + k + 2 * K, a1, b1);
  }
  for (; k < iW; ++k) {
    dst[k] = k % 2 == phase ? static_cast<scalar_t>(acc_t(0) + static_cast<acc_t>(row[k / 2])) : scalar_t(0);
  }
}

// NCDHW backward when W is down-scaled by exactly 2 (RowFold::halved) and
// no window of D or H holds more than one output: each grad_input row is
// either +0.0 everywhere (no output maps to its slice or row; consecutive such
// rows are cleared at once by zero_fill) or a single grad_output row spread
// to every other element (spread_by_2). The rows are walked slice by slice,
// the source row found from the two window tables alone (the generic row
// loop spent more on each row's bookkeeping than on its bytes, and memset
// more than the rows).
template <typename scalar_t>
void halved_rows(const scalar_t* g, scalar_t* o, const Axes& a, const Windows& wd, const Windows& wh, int64_t phase,
                 int64_t planes) {
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  at::parallel_for(0, planes * iD * iH, grain_for(iW), [&](int64_t b, int64_t e) {
    const int64_t *dlo = wd.lo.data(), *dhi = wd.hi.data(), *hlo = wh.lo.data(), *hhi = wh.hi.data();
    int64_t zeros_from = b;  // rows [zeros_from, r) are +0.0, not yet cleared
    for (int64_t r = b; r < e;) {
      const int64_t slice = r / iH, i = slice % iD, end = std::min(e, (slice + 1) * iH);
      if (dlo[i] == dhi[i]) {
        r = end;
        continue;
      }
      const scalar_t* volume = g + ((slice / iD) * oD + dlo[i]) * oH * oW;
      for (int64_t j = r - slice * iH; r < end; ++r, ++j) {
        if (hlo[j] == hhi[j]) continue;
        if (r > zeros_from) zero_fill(o + zeros_from * iW, (r - zeros_from) * iW);
        zeros_from = r + 1;
        spread_by_2(o + r * iW, volume + hlo[j] * oW, iW, phase);
      }
    }
    if (e > zeros_from) zero_fill(o + zeros_from * iW, (e - zeros_from) * iW);
  });
}

}  // namespace
}  // namespace torch_aclnn::upsample
