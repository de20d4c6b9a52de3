// NCDHW backward rows when W is up-scaled by exactly 2 (RowFold::uniform == 2).
// (csrc/cpu/upsample.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/upsample/row_fold.h"
#include "cpu/lanes.h"

namespace torch_aclnn::upsample {
namespace {  // included by cpu/upsample.cpp only

// One grad_input row when W is up-scaled by exactly 2 (every W window is
// {2k, 2k+1}): each block of 2K elements (K float lanes) sums its windows in
// two vector registers, the rows in (d, h) order and within a row w = 2k then
// 2k + 1 (a deinterleave of the loaded row), so the same additions in the
// same order as the generic fold; half/bfloat16 are widened in registers and
// rounded once. The last iW % 2K elements, in the same order, K at a time
// with partial loads and stores (a narrow row is all tail).
template <typename scalar_t>
void fold_by_2(scalar_t* __restrict dst, const Window2<scalar_t>& win, int64_t iW, bool stream) {
  using acc_t = at::opmath_type<scalar_t>;
  using aVec = at::vec::Vectorized<acc_t>;
  constexpr int64_t K = aVec::size();
  int64_t k = 0;
  for (; k + 2 * K <= iW; k += 2 * K) {
    aVec a0(acc_t(0)), a1(acc_t(0));
    for (int64_t d = win.d0; d < win.d1; ++d) {
      for (int64_t h = win.h0; h < win.h1; ++h) {
        const scalar_t* row = win.row(d, h) + 2 * k;  // 4K elements
        const auto [even0, odd0] = cpu::load_even_odd(row);
        const auto [even1, odd1] = cpu::load_even_odd(row + 2 * K);
        a0 = a0 + even0;
        a0 = a0 + odd0;
        a1 = a1 + even1;
        a1 = a1 + odd1;
      }
    }
    cpu::store_pair(dst + k, a0, a1, stream);
  }
  for (; k < iW; k += K) {  // the last < 2K: K at a time, partial loads and stores
    const int64_t n = std::min(K, iW - k);
    aVec a(acc_t(0));
    for (int64_t d = win.d0; d < win.d1; ++d) {
      for (int64_t h = win.h0; h < win.h1; ++h) {
        const auto [x0, x1] = cpu::load_pair(win.row(d, h) + 2 * k, 2 * n);
        const auto [even, odd] = at::vec::deinterleave2(x0, x1);
        a = a + even;
        a = a + odd;
      }
    }
    cpu::store_pair(dst + k, a, a, n);
  }
}

}  // namespace
}  // namespace torch_aclnn::upsample
