// The per-axis tables every backward path starts from: src(dst) and, for every
// input index, the window of outputs that map to it.
// (csrc/cpu/upsample.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "contracts/upsample.h"
#include "cpu/cpu_utils.h"

#include <algorithm>
#include <vector>

namespace torch_aclnn::upsample {
namespace {  // included by cpu/upsample.cpp only

// The cpu_utils helpers every path uses.
using cpu::advance;
using cpu::grain_for;
using cpu::unravel;
using cpu::zero_fill;

// src(dst) for every dst of one axis.
template <Mode mode>
std::vector<int64_t> source_table(const Axes& a, int axis) {
  std::vector<int64_t> t(a.out[axis]);
  for (int64_t dst = 0; dst < a.out[axis]; ++dst) {
    t[dst] = source_index<mode>(a.s[axis], dst, a.in[axis]);
    TORCH_INTERNAL_ASSERT(t[dst] >= 0 && t[dst] < a.in[axis]);
  }
  return t;
}

// For every input index i of one axis, the output window [lo[i], hi[i]) of
// the dst with src(dst) == i (src is non-decreasing, so it is one range;
// empty when no output maps to i).
struct Windows {
  std::vector<int64_t> lo, hi;
};

template <Mode mode>
Windows window_table(const Axes& a, int axis) {
  Windows w;
  w.lo.assign(a.in[axis], 0);
  w.hi.assign(a.in[axis], 0);
  std::vector<int64_t> src = source_table<mode>(a, axis);
  for (int64_t dst = 0; dst < a.out[axis]; ++dst) {
    const int64_t i = src[dst];
    TORCH_INTERNAL_ASSERT(dst == 0 || src[dst - 1] <= i, "source index is not monotonic");
    if (w.hi[i] == 0) w.lo[i] = dst;
    w.hi[i] = dst + 1;
  }
  return w;
}

// The most outputs any window of an axis holds.
int64_t max_window(const Windows& w) {
  int64_t m = 0;
  for (size_t k = 0; k < w.lo.size(); ++k) m = std::max(m, w.hi[k] - w.lo[k]);
  return m;
}

}  // namespace
}  // namespace torch_aclnn::upsample
