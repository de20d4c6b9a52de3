// The backward's index check (row 12): a flat position split into (d, h, w),
// the table of a window's tap offsets (TapCheck), the error naming the first
// bad index, and where the backward adds its terms.
// (included by cpu/max_pool.cpp and the other cpu/max_pool/ headers.)
#pragma once

#include "contracts/max_pool.h"
#include "common/planes.h"
#include "cpu/cpu_utils.h"
#include "cpu/lanes.h"

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cuda/detail/IntegerDivider.cuh>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace torch_aclnn::max_pool {
namespace {  // included by cpu/max_pool.cpp only

using c10::MemoryFormat;
using cpu::FirstBad;
using cpu::kNone;
using planes::Planes;
using planes::planes_of;

// A flat (D, H, W) position v in [0, S) as (z, y, x): with multiply-shift
// dividers (at::cuda::detail::IntDivider, host code too) where S < 2^32,
// else with divisions. The backward splits every index it checks.
class Split {
 public:
  explicit Split(const Geometry& g)
      : narrow_(g.S <= std::numeric_limits<uint32_t>::max()),
        HW_(g.H * g.W),
        W_(g.W),
        hw_(narrow_ ? static_cast<uint32_t>(g.H * g.W) : 1u),
        w_(narrow_ ? static_cast<uint32_t>(g.W) : 1u) {}

  // v's D coordinate alone.
  int64_t plane(int64_t v) const { return narrow_ ? hw_.div(static_cast<uint32_t>(v)) : v / HW_; }

  void operator()(int64_t v, int64_t& z, int64_t& y, int64_t& x) const {
    if (narrow_) {
      const auto a = hw_.divmod(static_cast<uint32_t>(v));
      const auto b = w_.divmod(a.mod);
      z = a.div, y = b.div, x = b.mod;
    } else {
      z = v / HW_;
      const int64_t rest = v - z * HW_;
      y = rest / W_, x = rest - y * W_;
    }
  }

 private:
  bool narrow_;
  int64_t HW_, W_;
  at::cuda::detail::IntDivider<uint32_t> hw_, w_;
};

// Whether flat input position v is a tap of the window of pooled position
// (od, oh, ow) (row 12).
inline bool tap_of(int64_t v, int64_t od, int64_t oh, int64_t ow, const Geometry& g, const Window& w,
                   const Split& split) {
  if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(g.S)) return false;
  int64_t z, y, x;
  split(v, z, y, x);
  return in_window<int64_t>(z, od, w.kernel[0], w.stride[0], w.padding[0], w.dilation[0]) &&
         in_window<int64_t>(y, oh, w.kernel[1], w.stride[1], w.padding[1], w.dilation[1]) &&
         in_window<int64_t>(x, ow, w.kernel[2], w.stride[2], w.padding[2], w.dilation[2]);
}

// Row 12 for the scatters, index by index, as tap_of without splitting v.
// The window of pooled position (od, oh, ow) starts at (z0, y0, x0) =
// (od, oh, ow) * stride - padding, maybe in the padding, at flat position
// base = (z0 * H + y0) * W + x0, and its tap (i, j, l) lies at base +
// (i * dilation_D * H + j * dilation_H) * W + l * dilation_W. Where the
// kernel reaches less than W along W and less than H along H, no two taps
// share that offset, so a table of the span's offsets names the tap at each
// offset, as one bit per axis (bit i, bit kAxisBits + j and bit 2 *
// kAxisBits + l). v is a tap of the window iff v - base is in the table and
// each of those bits is one of the window's taps inside self (tap_range's,
// per axis: then v's flat (D, H, W) form is that tap's, inside self): one
// mask test, for a window in the padding as for one inside. Where the table
// does not apply (a kernel wider than self, a span of more than kMaxSpan
// entries or a kernel of more than kAxisBits taps on an axis), every window
// uses tap_of.
class TapCheck {
 public:
  static constexpr int64_t kMaxSpan = int64_t(1) << 20;
  static constexpr int kAxisBits = 10;

  // One window's part of the check: its base, and the table bits that are
  // not its taps inside self.
  struct Taps {
    int64_t od, oh, ow, base;
    uint32_t outside;
  };

  TapCheck(const Geometry& g, const Window& w) : g_(g), w_(w), split_(g) {
    const int64_t size[3] = {g.D, g.H, g.W}, pooled[3] = {g.oD, g.oH, g.oW}, unit[3] = {g.H * g.W, g.W, 1};
    int64_t span = 1;
    bool fits = true;  // (the kernel's taps in kAxisBits per axis, at distinct offsets)
    for (int a = 0; a < 3; ++a) {
      const int64_t reach = (w.kernel[a] - 1) * w.dilation[a];  // < size + 2 * padding (the contract)
      span = reach > (kMaxSpan - span) / unit[a] ? kMaxSpan + 1 : span + reach * unit[a];
      fits = fits && w.kernel[a] <= kAxisBits && (a == 0 || reach < size[a]);
      axis_[a].resize(pooled[a]);
      for (int64_t o = 0; o < pooled[a]; ++o) {
        int64_t lo, hi;
        const int64_t start = o * w.stride[a] - w.padding[a];
        tap_range<int64_t>(start, size[a], w.kernel[a], w.dilation[a], lo, hi);
        const uint32_t taps = fits && hi > lo ? ((1u << (hi - lo)) - 1u) << lo : 0u;
        axis_[a][o] = {start * unit[a], taps << (a * kAxisBits)};
      }
    }
    if (span > kMaxSpan || !fits) return;  // (table_ stays empty: tap_of)
    table_.assign(span, kNoTap);
    for (int64_t i = 0; i < w.kernel[0]; ++i) {
      for (int64_t j = 0; j < w.kernel[1]; ++j) {
        for (int64_t l = 0; l < w.kernel[2]; ++l) {
          table_[(i * w.dilation[0] * g.H + j * w.dilation[1]) * g.W + l * w.dilation[2]] =
              (1u << i) | (1u << (kAxisBits + j)) | (1u << (2 * kAxisBits + l));
        }
      }
    }
  }

  const Split& split() const { return split_; }

  // A pooled row's part of its windows' checks, and window ow's.
  struct Row {
    int64_t od, oh, offset;
    uint32_t taps;
  };

  Row row(int64_t od, int64_t oh) const {
    const Axis &d = axis_[0][od], &h = axis_[1][oh];
    return {od, oh, d.offset + h.offset, d.taps | h.taps};
  }

  Taps at(const Row& r, int64_t ow) const {
    const Axis& x = axis_[2][ow];
    return {r.od, r.oh, ow, r.offset + x.offset, ~(r.taps | x.taps)};
  }

  Taps at(int64_t od, int64_t oh, int64_t ow) const { return at(row(od, oh), ow); }

  // Whether flat input position v is a tap of the window t.
  bool has(const Taps& t, int64_t v) const {
    return C10_LIKELY(tabled()) ? in_table(t, v) : tap_of(v, t.od, t.oh, t.ow, g_, w_, split_);
  }

  // Whether the table applies, and has() where it does.
  bool tabled() const { return !table_.empty(); }

  bool in_table(const Taps& t, int64_t v) const {
    const uint64_t rel = static_cast<uint64_t>(v) - static_cast<uint64_t>(t.base);
    return rel < table_.size() && (table_[rel] & t.outside) == 0;
  }

  // Where the table applies: v's tap's bits where v is a tap of window t
  // (in_table), else 0. Its tap number along D is then the lowest bit's
  // (plane_tap(bits)).
  uint32_t tap_bits(const Taps& t, int64_t v) const {
    const uint64_t rel = static_cast<uint64_t>(v) - static_cast<uint64_t>(t.base);
    if (rel >= table_.size()) return 0;
    const uint32_t bits = table_[rel];
    return (bits & t.outside) == 0 ? bits : 0u;
  }

  static int plane_tap(uint32_t bits) { return __builtin_ctz(bits); }

 private:
  static constexpr uint32_t kNoTap = 1u << 31;  // (in every window's outside bits)

  struct Axis {
    int64_t offset;  // the window's start times the axis's flat unit
    uint32_t taps;   // its taps inside self (tap_range's [lo, hi)), as the table's bits on this axis
  };

  const Geometry& g_;
  const Window& w_;
  Split split_;
  std::vector<Axis> axis_[3];  // per axis, per pooled position
  std::vector<uint32_t> table_;
};

// Row 12: IndexError naming the value, its position and its window.
template <typename I>
void check_found(const FirstBad& bad, const Geometry& g, const Window& w, const I* ix, Planes xp) {
  const int64_t pos = bad.get();
  if (C10_LIKELY(pos == kNone)) return;
  const int64_t n = pos / (g.C * g.oS), c = (pos / g.oS) % g.C, o = pos % g.oS;
  fail_not_in_window(ix[n * xp.sN + c * xp.sC + o * xp.sK], n, c, o, g.five, g.S, g.oH, g.oW, w);
}

// Whether the backward adds its terms in grad_input itself, which is exact
// for float32 / float64, and for disjoint windows (0 + one term). Else they
// add in float32, rounded once.
template <typename T>
inline bool adds_in_place(const Window& w) {
  return std::is_same_v<at::opmath_type<T>, T> || disjoint_windows(w);
}

}  // namespace
}  // namespace torch_aclnn::max_pool
