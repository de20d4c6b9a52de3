// NCDHW backward when no window of any axis holds more than one output and
// rows are short: zero blocks of rows, then write the elements that receive
// an output.
// (csrc/cpu/upsample.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/upsample/windows.h"

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

namespace torch_aclnn::upsample {
namespace {  // included by cpu/upsample.cpp only

// NCDHW backward when every window of every axis holds at most one output
// (use_sparse_rows): each grad_input element is +0.0 + its one grad_output
// element (the single addition of the generic fold, which also turns -0.0
// into +0.0) or +0.0. Blocks of rows (64 KiB) are zeroed at once (zero_fill),
// then, while in L2, only the rows that receive outputs are visited, and in
// them only the elements that do are written.
template <typename scalar_t>
void sparse_rows(const scalar_t* g, scalar_t* o, const Axes& a, const Windows& wd, const Windows& wh,
                 const Windows& ww, int64_t planes) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  std::vector<int64_t> ks, ws;  // the elements k of a row that receive an output, and its w
  for (int64_t k = 0; k < iW; ++k) {
    if (ww.hi[k] > ww.lo[k]) {
      ks.push_back(k);
      ws.push_back(ww.lo[k]);
    }
  }
  const int64_t owned = static_cast<int64_t>(ks.size());
  // Rows per block: 64 KiB, zeroed and then written while in L2.
  const int64_t block = std::max<int64_t>(1, (64 << 10) / (iW * static_cast<int64_t>(sizeof(scalar_t))));
  at::parallel_for(0, planes * iD * iH, grain_for(iW), [&](int64_t b, int64_t e) {
    const int64_t *dlo = wd.lo.data(), *dhi = wd.hi.data(), *hlo = wh.lo.data(), *hhi = wh.hi.data();
    const int64_t *k_of = ks.data(), *w_of = ws.data();
    int64_t zeroed = b;  // rows [b, zeroed) are cleared
    for (int64_t r = b; r < e;) {
      if (r >= zeroed) {
        const int64_t to = std::min(e, r + block);
        zero_fill(o + r * iW, (to - r) * iW);
        zeroed = to;
      }
      const int64_t slice = r / iH, i = slice % iD, end = std::min(zeroed, (slice + 1) * iH);
      if (dlo[i] < dhi[i]) {
        const scalar_t* volume = g + ((slice / iD) * oD + dlo[i]) * oH * oW;
        for (int64_t j = r - slice * iH; r < end; ++r, ++j) {
          if (hlo[j] == hhi[j]) continue;
          const scalar_t* row = volume + hlo[j] * oW;
          scalar_t* dst = o + r * iW;
          for (int64_t t = 0; t < owned; ++t) {
            dst[k_of[t]] = static_cast<scalar_t>(acc_t(0) + static_cast<acc_t>(row[w_of[t]]));
          }
        }
      }
      r = end;
    }
  });
}

}  // namespace
}  // namespace torch_aclnn::upsample
