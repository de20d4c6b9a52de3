// CPU kernels of the MaxPool3d family (docs/spec.md §9).
//
// max_pool3d_with_indices: per pooled position, the maximum of its window's
// taps and its flat (D, H, W) position, by the contract's element rule
// (window_max: aten's, NaN included), which the CUDA kernel runs too; the
// value written is that element itself (so a NaN keeps its payload on every
// device). float16/bfloat16 compare in float32 (exact). The rule is applied
// to many windows at once, branch-free (fold_tap): NCDHW planes row by row
// (one tap of every window of a pooled row, vectorised over the row: in
// at::vec vectors where W's stride is 1 or 2, fold_tap_vectors, and a row of
// at most one vector of windows with all its taps in registers, max_lanes),
// or, small planes of narrow rows, K planes at once, transposed so that the
// planes are a vector's lanes (forward_plane_lanes); channels_last_3d over
// the channels, a vector of them per window (max_window: its taps' running
// maximum); other strided planes per window.
//
// max_pool3d_with_indices_backward: grad_input = zeros(self's shape);
// grad_input[n][c][indices[n][c][o]] += grad_output[n][c][o] for every pooled
// position o, the terms of a position added in increasing o, so the result
// does not depend on the thread count and a position covered by several
// windows (overlapping windows: stride < kernel_size) gets its terms in the
// same order as the CUDA kernel's gather: the same bits on both. float32 and
// float64 accumulate in grad_input itself; float16 and bfloat16 in float32,
// rounded once at the end. NCDHW: each (n, c) plane is one task, a scatter
// into the zeroed plane (scatter_plane); planes of wide rows where no
// position is in two windows are written in one pass instead (write_plane):
// each window's taps get its term or 0, which is the same result without the
// zero-fill.
// channels_last_3d: disjoint windows in one write pass over the channels
// (write_channels_last), else tasks are (n, block of channels), a window's
// channels scattered together (scatter_channels_last).
//
// A tensor of shape (N, [C,] D, H, W) is seen as N x C planes
// (common/planes.h); grad_output and indices whose D, H, W axes do not
// flatten are copied once. Every index is checked against the window of its
// own output position before it is used (row 12; TapCheck in the scatters):
// a bad one is never written through, and the first in logical order is
// reported whatever the thread count.
#include "contracts/max_pool.h"
#include "common/planes.h"
#include "cpu/cpu_utils.h"
#include "cpu/lanes.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cuda/detail/IntegerDivider.cuh>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace torch_aclnn::max_pool {
namespace {

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

// One plane: acc (S dense elements) += grad_output's terms in
// increasing o. Returns the first bad o, or kNone.
template <typename A, typename T, typename I>
int64_t scatter_plane(A* acc, const T* go, int64_t gK, const I* ix, int64_t xK, const Geometry& g,
                      const TapCheck& check) {
  const auto scatter = [&](auto has) {
    int64_t o = 0;
    for (int64_t od = 0; od < g.oD; ++od) {
      for (int64_t oh = 0; oh < g.oH; ++oh) {
        const TapCheck::Row row = check.row(od, oh);
        for (int64_t ow = 0; ow < g.oW; ++ow, ++o) {
          const int64_t v = static_cast<int64_t>(ix[o * xK]);
          if (C10_UNLIKELY(!has(check.at(row, ow), v))) return o;
          A& d = acc[v];
          d = static_cast<A>(static_cast<at::opmath_type<A>>(d) + static_cast<at::opmath_type<A>>(go[o * gK]));
        }
      }
    }
    return kNone;
  };
  // (the table's test chosen once per plane, not per index)
  if (check.tabled()) return scatter([&](const TapCheck::Taps& t, int64_t v) { return check.in_table(t, v); });
  return scatter([&](const TapCheck::Taps& t, int64_t v) { return check.has(t, v); });
}

// Channels per block of the channels_last_3d kernels: a cache line's worth.
template <typename T>
constexpr int64_t kChannelBlock = std::max<int64_t>(1, 64 / sizeof(T));

// Whether the planes of t are channels_last_3d (channels adjacent).
inline bool channels_adjacent(const Planes& t, const Geometry& g) { return g.C > 1 && t.sC == 1; }

// Whether the windows cover every position of self (no gap, no hole): on
// every axis, stride == kernel_size, no dilation between taps, and the last
// window reaches the end. With disjoint windows, the write pass below then
// writes every element of grad_input.
inline bool windows_cover_self(const Geometry& g, const Window& w) {
  const int64_t size[3] = {g.D, g.H, g.W}, out[3] = {g.oD, g.oH, g.oW};
  for (int a = 0; a < 3; ++a) {
    const int64_t k = w.kernel[a];
    if (w.stride[a] != k || (k > 1 && w.dilation[a] != 1) || (out[a] - 1) * k - w.padding[a] + k < size[a]) {
      return false;
    }
  }
  return true;
}

// A position's sum after its first term, as the scatter adds it into a zero:
// 0 + t (-0 gives +0, on every device). The write passes write it.
template <typename T>
inline T first_term(T t) {
  using A = at::opmath_type<T>;
  return static_cast<T>(A(0) + static_cast<A>(t));
}

// One pooled row (od, oh) of a plane, for the row-wise kernels: o, the flat
// pooled position of its first window; the windows' start on D and H, and
// their taps inside self there (tap_range): [lo0, hi0) and [lo1, hi1).
struct PooledRow {
  int64_t o, z0, y0, lo0, hi0, lo1, hi1;

  // Pooled row (od, oh).
  static PooledRow at(int64_t od, int64_t oh, const Geometry& g, const Window& w) {
    PooledRow r{(od * g.oH + oh) * g.oW, od * w.stride[0] - w.padding[0], oh * w.stride[1] - w.padding[1],
                0, 0, 0, 0};
    tap_range<int64_t>(r.z0, g.D, w.kernel[0], w.dilation[0], r.lo0, r.hi0);
    tap_range<int64_t>(r.y0, g.H, w.kernel[1], w.dilation[1], r.lo1, r.hi1);
    return r;
  }

  // The flat position of input row (tap i on D, tap j on H).
  int64_t input_row(int64_t i, int64_t j, const Geometry& g, const Window& w) const {
    return ((z0 + i * w.dilation[0]) * g.H + y0 + j * w.dilation[1]) * g.W;
  }
};

// fn(row) for a plane's pooled rows in increasing order; stops at the first
// that returns a pooled position other than kNone, and returns it.
template <typename Fn>
int64_t for_each_pooled_row(const Geometry& g, const Window& w, Fn fn) {
  for (int64_t od = 0; od < g.oD; ++od) {
    for (int64_t oh = 0; oh < g.oH; ++oh) {
      const int64_t bad = fn(PooledRow::at(od, oh, g, w));
      if (C10_UNLIKELY(bad != kNone)) return bad;
    }
  }
  return kNone;
}

// The windows of the channels_last_3d kernels: tasks are pooled rows (n, od,
// oh); fn(n, o, first, taps) for each pooled position o of tasks [b, e),
// where taps(tap) calls tap(pos) for the window's taps inside self in
// increasing (d, h, w) (window_max's order), the first at position first.
template <typename Fn>
void for_each_channels_last_window(int64_t b, int64_t e, const Geometry& g, const Window& w, Fn fn) {
  for (int64_t t = b; t < e; ++t) {
    const int64_t n = t / (g.oD * g.oH);
    // (the row's fields in locals: the taps below are called once per vector of channels)
    const PooledRow r = PooledRow::at((t / g.oH) % g.oD, t % g.oH, g, w);
    const int64_t o0 = r.o, lo0 = r.lo0, hi0 = r.hi0, lo1 = r.lo1, hi1 = r.hi1;
    for (int64_t ow = 0; ow < g.oW; ++ow) {
      int64_t lo2, hi2;
      const int64_t x0 = ow * w.stride[2] - w.padding[2], d2 = w.dilation[2];
      tap_range<int64_t>(x0, g.W, w.kernel[2], d2, lo2, hi2);
      const auto taps = [&](auto&& tap) {
        for (int64_t i = lo0; i < hi0; ++i) {
          for (int64_t j = lo1; j < hi1; ++j) {
            const int64_t row = r.input_row(i, j, g, w) + x0;
            for (int64_t l = lo2; l < hi2; ++l) tap(row + l * d2);
          }
        }
      };
      fn(n, o0 + ow, r.input_row(lo0, lo1, g, w) + x0 + lo2 * d2, taps);
    }
  }
}

// v where keep, else +0 (all bits clear, in every floating type): a mask,
// not a branch.
template <typename T>
inline T keep_if(bool keep, T v) {
  static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8));
  using U = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
  U bits;
  std::memcpy(&bits, &v, sizeof(T));
  bits &= static_cast<U>(U(0) - static_cast<U>(keep));
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// Whether every flat position of self fits J (the vectorised forward's
// position type: int32_t where it does, so positions and float32 values
// share a vector's lanes), with room for the lanes of a partial vector past
// the last (fold_tap_vectors computes their positions too).
template <typename J>
inline bool positions_fit(const Geometry& g) {
  return g.S <= std::numeric_limits<J>::max() - 64;
}

// The taps of n windows of one row of disjoint windows: window i's taps are
// dst[i * s + l * d] (flat position pos0 + i * s + l * d), l in [0, k); each
// gets the window's term where the window's index names it, else 0.
// hits[i] += how many of its taps the index names (0 or 1). K > 0: k = s = K,
// d = 1 and adjacent indices (xK = 1): the loop vectorises.
template <int K, typename T, typename I>
inline void write_windows(T* __restrict dst, int64_t n, int64_t pos0, int64_t k, int64_t s, int64_t d,
                          const T* __restrict terms, const I* __restrict ix, int64_t xK, int32_t* __restrict hits) {
  const int64_t kk = K ? K : k, ss = K ? K : s, dd = K ? 1 : d, xk = K ? 1 : xK;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = static_cast<int64_t>(ix[i * xk]);
    const T term = terms[i];
    int32_t named = 0;
    for (int64_t l = 0; l < kk; ++l) {
      const int64_t at = i * ss + l * dd;
      const bool mine = v == pos0 + at;
      dst[at] = keep_if(mine, term);
      named += mine;
    }
    hits[i] += named;
  }
}

// Disjoint windows (no position in two), grad_input's D, H, W axes dense:
// one plane in a single write pass instead of zero-fill and scatter. Row by
// row as in the forward, every tap inside self of every window is written
// once (write_windows). An index that is a tap of its own window names
// exactly one; any other names none (row 12). Returns the first pooled
// position whose index named none, or kNone. Positions in no window are
// the caller's (zero-filled first).
// hits, terms: oW elements of scratch.
template <typename T, typename I>
int64_t write_plane(T* out, const T* go, int64_t gK, const I* ix, int64_t xK, const Geometry& g, const Window& w,
                    int32_t* hits, T* terms) {
  const auto& k = w.kernel;
  const auto& s = w.stride;
  const auto& p = w.padding;
  const auto& d = w.dilation;
  // The pooled positions [a, b) whose windows lie inside the row on W (the
  // rest, at most a few at each end, are clamped one by one).
  const int64_t a = std::min(g.oW, (p[2] + s[2] - 1) / s[2]);
  const int64_t reach = g.W - 1 + p[2] - (k[2] - 1) * d[2];
  const int64_t b = std::max(a, reach < 0 ? 0 : std::min(g.oW, reach / s[2] + 1));
  const bool dense = xK == 1, packed = s[2] == k[2] && (d[2] == 1 || k[2] == 1);
  return for_each_pooled_row(g, w, [&](const PooledRow& r) {
    const int64_t o = r.o;
    std::fill(hits, hits + g.oW, 0);
    for (int64_t ow = 0; ow < g.oW; ++ow) terms[ow] = first_term(go[(o + ow) * gK]);
    const I* xr = ix + o * xK;
    for (int64_t i = r.lo0; i < r.hi0; ++i) {
      for (int64_t j = r.lo1; j < r.hi1; ++j) {
        const int64_t row = r.input_row(i, j, g, w);
        const auto clamped = [&](int64_t ow) {
          int64_t lo2, hi2;
          const int64_t x = ow * s[2] - p[2];
          tap_range<int64_t>(x, g.W, k[2], d[2], lo2, hi2);
          const int64_t first = row + x + lo2 * d[2];
          write_windows<0>(out + first, 1, first, hi2 - lo2, s[2], d[2], terms + ow, xr + ow * xK, xK, hits + ow);
        };
        for (int64_t ow = 0; ow < a; ++ow) clamped(ow);
        const int64_t first = row + a * s[2] - p[2], n = b - a;
        const auto inside = [&](auto K) {
          write_windows<decltype(K)::value>(out + first, n, first, k[2], s[2], d[2], terms + a, xr + a * xK, xK,
                                            hits + a);
        };
        if (dense && packed && k[2] == 2) {
          inside(std::integral_constant<int, 2>{});
        } else if (dense && packed && k[2] == 3) {
          inside(std::integral_constant<int, 3>{});
        } else if (dense && packed && k[2] == 1) {
          inside(std::integral_constant<int, 1>{});
        } else {
          inside(std::integral_constant<int, 0>{});
        }
        for (int64_t ow = b; ow < g.oW; ++ow) clamped(ow);
      }
    }
    int32_t miss = 0;
    for (int64_t ow = 0; ow < g.oW; ++ow) miss |= hits[ow] ^ 1;
    if (C10_UNLIKELY(miss != 0)) {
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        if (hits[ow] != 1) return o + ow;
      }
    }
    return kNone;
  });
}

// channels_last_3d, channels adjacent in grad_input, grad_output and
// indices: tasks are (n, block of channels), as few blocks as give every
// thread a task (each a whole number of cache lines). A task adds the terms
// in increasing o, a window's channels together: so every position gets
// its terms in increasing o, as in the NCDHW scatter. Each D-plane of the
// block is zero-filled just before the first pooled row (od) whose windows
// reach it, so the terms land in cache. float16/bfloat16 with overlapping
// windows add in float32, in a ring of the D-planes the windows of one
// pooled row can reach (a power of two of them, per thread), each plane
// rounded into grad_input once no later window reaches it. A bad index
// (TapCheck) is skipped and noted.
template <typename T, typename I>
void scatter_channels_last(T* out, Planes op, const T* go, Planes gp, const I* ix, Planes xp, const Geometry& g,
                           const Window& w, FirstBad& bad) {
  using A = at::opmath_type<T>;
  const bool direct = adds_in_place<T>(w);
  const TapCheck check(g, w);
  const Split& split = check.split();
  const int64_t line = kChannelBlock<T>, lines = (g.C + line - 1) / line;
  const int64_t parts = std::min(lines, std::max<int64_t>(1, (at::get_num_threads() + g.N - 1) / g.N));
  const int64_t cb = (lines + parts - 1) / parts * line, blocks = (g.C + cb - 1) / cb;
  const int64_t HW = g.H * g.W, s0 = w.stride[0], p0 = w.padding[0], last_tap0 = (w.kernel[0] - 1) * w.dilation[0];
  // The ring's planes: while a pooled row's terms are added, the planes from
  // the first its windows reach (or the first not yet rounded, where the
  // stride skips planes) to the last are live: at most max(last_tap0 + 1, s0).
  const auto pow2 = [](int64_t n) { return int64_t(1) << (64 - __builtin_clzll(static_cast<uint64_t>(n - 1) | 1)); };
  const int64_t ring = direct ? 0 : std::min(pow2(std::max(last_tap0 + 1, s0)), pow2(g.D));
  at::parallel_for(0, g.N * blocks, 1, [&](int64_t b, int64_t e) {
    std::vector<A> sums(ring * HW * cb);
    int64_t ring_shift[TapCheck::kAxisBits];
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / blocks, c0 = (t % blocks) * cb, nc = std::min(g.C, c0 + cb) - c0;
      T* dst = out + n * op.sN + c0;
      // Where the terms add: grad_input (plane z at in_dst(z), position v at
      // v * op.sK), or the ring (plane z at slot z % ring, position v at
      // ring_at(v)).
      const auto in_dst = [&](int64_t z) { return dst + z * HW * op.sK; };
      const auto in_ring = [&](int64_t z) { return sums.data() + (z & (ring - 1)) * HW * nc; };
      const auto ring_at = [&](int64_t v) {
        const int64_t z = split.plane(v);
        return ((z & (ring - 1)) * HW + v - z * HW) * nc;
      };
      // ring_at(v) - v * nc for v in the plane of tap i along D of pooled
      // row od's windows (ring_row(od)).
      const auto ring_row = [&](int64_t od) {
        for (int64_t i = 0; !direct && i < w.kernel[0]; ++i) {
          const int64_t z = od * s0 - p0 + i * w.dilation[0];
          ring_shift[i] = ((z & (ring - 1)) - z) * HW * nc;
        }
      };
      const auto zero = [&](auto plane, int64_t sK, int64_t z0, int64_t z1) {  // planes [z0, z1)
        for (int64_t z = z0; z < z1; ++z) {
          auto* p = plane(z);
          if (sK == nc) {
            cpu::zero_fill(p, HW * nc);
          } else {
            for (int64_t k = 0; k < HW; ++k) cpu::zero_fill(p + k * sK, nc);
          }
        }
      };
      const auto round = [&](int64_t z0, int64_t z1) {  // planes [z0, z1) of the ring to grad_input
        for (int64_t z = z0; z < z1; ++z) {
          if (op.sK == nc) {
            cpu::narrow_row(in_ring(z), in_dst(z), HW * nc);
          } else {
            for (int64_t k = 0; k < HW; ++k) cpu::narrow_row(in_ring(z) + k * nc, in_dst(z) + k * op.sK, nc);
          }
        }
      };
      // at(v, bits): position v's offset from plane(0), given its tap's bits
      // (kTabled: TapCheck::tap_bits, else 1)
      const auto scatter = [&](auto plane, int64_t sK, auto tabled, auto at) {
        constexpr bool kTabled = decltype(tabled)::value;
        auto* sum = plane(0);
        int64_t first = kNone, o = 0, zeroed = 0, rounded = 0;
        for (int64_t od = 0; od < g.oD; ++od) {
          const int64_t reach = std::clamp<int64_t>(od * s0 - p0 + last_tap0 + 1, zeroed, g.D);
          zero(plane, sK, zeroed, reach);
          zeroed = reach;
          if constexpr (kTabled) ring_row(od);  // (ring_shift: kernel[0] <= kAxisBits where the table applies)
          for (int64_t oh = 0; oh < g.oH; ++oh) {
            const TapCheck::Row row = check.row(od, oh);
            for (int64_t ow = 0; ow < g.oW; ++ow, ++o) {
              const TapCheck::Taps taps = check.at(row, ow);
              const I* is = ix + n * xp.sN + o * xp.sK + c0;
              const T* gs = go + n * gp.sN + o * gp.sK + c0;
              for (int64_t c = 0; c < nc; ++c) {
                const int64_t v = static_cast<int64_t>(is[c]);
                const uint32_t bits = kTabled ? check.tap_bits(taps, v) : static_cast<uint32_t>(check.has(taps, v));
                if (C10_UNLIKELY(bits == 0)) {
                  first = std::min(first, (n * g.C + c0 + c) * g.oS + o);
                  continue;
                }
                auto& d = sum[at(v, bits) + c];
                d = static_cast<std::decay_t<decltype(d)>>(static_cast<A>(d) + static_cast<A>(gs[c]));
              }
            }
          }
          if (!direct) {  // the planes before the next pooled row's windows are final
            const int64_t final_planes = std::clamp<int64_t>((od + 1) * s0 - p0, rounded, zeroed);
            round(rounded, final_planes);
            rounded = final_planes;
          }
        }
        if (!direct) round(rounded, zeroed);
        zero(in_dst, op.sK, zeroed, g.D);  // planes in no window
        if (C10_UNLIKELY(first != kNone)) bad.note(first);
      };
      const auto run = [&](auto tabled) {
        if (direct) {
          scatter(in_dst, op.sK, tabled, [&](int64_t v, uint32_t) { return v * op.sK; });
        } else if constexpr (decltype(tabled)::value) {
          // (v's plane from its tap's number along D: ring_at without a division)
          scatter(in_ring, nc, tabled,
                  [&](int64_t v, uint32_t bits) { return v * nc + ring_shift[TapCheck::plane_tap(bits)]; });
        } else {
          scatter(in_ring, nc, tabled, [&](int64_t v, uint32_t) { return ring_at(v); });
        }
      };
      if (check.tabled()) {
        run(std::true_type{});
      } else {
        run(std::false_type{});
      }
    }
  });
}

// channels_last_3d with disjoint windows: write_plane's single write pass,
// over the channels. Tasks are pooled rows (n, od, oh); every tap inside self
// of every window gets, channel by channel, the window's term where the
// channel's index names the tap, else 0. Each index that names no tap of its
// own window is noted (row 12). Positions in no window are zero-filled first.
template <typename T, typename I>
void write_channels_last(T* out, Planes op, const T* go, Planes gp, const I* ix, Planes xp, const Geometry& g,
                         const Window& w, FirstBad& bad) {
  TORCH_INTERNAL_ASSERT(op.sK == g.C && gp.sC == 1 && xp.sC == 1);  // (dense channels_last_3d grad_input)
  if (!windows_cover_self(g, w)) {
    at::parallel_for(0, g.N, 1, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n) cpu::zero_fill(out + n * op.sN, g.S * g.C);
    });
  }
  const int64_t window_taps = w.kernel[0] * w.kernel[1] * w.kernel[2];
  // Each index as its offset from the window's first tap (rel, in J: int32
  // where self's positions fit, so a tap's compare and the term's select
  // are as wide as the vector lanes allow), -1 where it is before the first
  // tap or beyond J: a tap's offset is never -1. The taps inside self are
  // distinct positions, so an index names at most one: it is a tap of its
  // window iff one tap's compare took it (hit).
  const auto run = [&](auto j) {
    using J = decltype(j);
    using Vec = at::vec::Vectorized<float>;
    using IVec = at::vec::Vectorized<int32_t>;
    // float32 compute with int32 offsets: K channels at a time in vectors,
    // the hits in a register from tap to tap
    constexpr bool kVectors = std::is_same_v<at::opmath_type<T>, float> && std::is_same_v<J, int32_t>;
    constexpr int64_t K = kVectors ? Vec::size() : 1;
    const int64_t padded = (g.C + K - 1) / K * K;  // (lanes past C: offset -1, no tap)
    // Non-temporal stores where every store is a whole cache line (float32
    // in 64-byte vectors, whole vectors of channels) and the operands
    // outgrow the cache (cpu::stream_stores): the lines are written once.
    const int64_t bytes = g.N * (g.S + g.oS) * g.C * static_cast<int64_t>(sizeof(T)) + g.N * g.oS * g.C * sizeof(I);
    const bool stream = std::is_same_v<T, float> && K * sizeof(T) == 64 && g.C % K == 0 &&
                        reinterpret_cast<uintptr_t>(out) % 64 == 0 && cpu::stream_stores(bytes);
    at::parallel_for(0, g.N * g.oD * g.oH, cpu::grain_for(g.oW * g.C * window_taps), [&](int64_t b, int64_t e) {
      std::vector<T> terms(padded);
      std::vector<J> rel(padded, J(-1)), seen(kVectors ? 0 : g.C);
      for_each_channels_last_window(b, e, g, w, [&](int64_t n, int64_t o, int64_t first, const auto& taps) {
        const T* gs = go + n * gp.sN + o * gp.sK;
        const I* is = ix + n * xp.sN + o * xp.sK;
        T* dst = out + n * op.sN;
        for (int64_t c = 0; c < g.C; ++c) {
          terms[c] = first_term(gs[c]);
          const int64_t r = static_cast<int64_t>(is[c]) - first;
          rel[c] = r >= 0 && r <= std::numeric_limits<J>::max() ? static_cast<J>(r) : J(-1);
        }
        const auto missed = [&](int64_t c) { bad.note((n * g.C + c) * g.oS + o); };
        if constexpr (kVectors) {
          for (int64_t c0 = 0; c0 < g.C; c0 += K) {
            const int nc = static_cast<int>(std::min(K, g.C - c0));
            const IVec at_ = IVec::loadu(rel.data() + c0);
            const Vec term = cpu::widen(terms.data() + c0);
            IVec hit(0);
            taps([&](int64_t pos) {
              const IVec mine = at_ == IVec(static_cast<int32_t>(pos - first));
              hit = hit | mine;
              // (the term's bits or +0: exact in store_narrow, for every T)
              const Vec v = term & at::vec::cast<float>(mine);
              if constexpr (std::is_same_v<T, float>) {
                if (stream) return cpu::store_vector(v, dst + pos * op.sK + c0, true);
              }
              cpu::store_narrow(dst + pos * op.sK + c0, v, nc);
            });
            const uint32_t none = static_cast<uint32_t>(at::vec::cast<float>(hit).zero_mask()) & ((1u << nc) - 1u);
            if (C10_UNLIKELY(none != 0)) {
              for (int c = 0; c < nc; ++c) {
                if ((none >> c) & 1u) missed(c0 + c);
              }
            }
          }
        } else {
          std::fill(seen.begin(), seen.end(), J(0));
          taps([&](int64_t pos) {
            T* __restrict d = dst + pos * op.sK;
            const T* __restrict term = terms.data();
            const J* __restrict at = rel.data();
            J* __restrict hit = seen.data();
            const J r = static_cast<J>(pos - first);
            for (int64_t c = 0; c < g.C; ++c) {
              const bool mine = at[c] == r;
              d[c] = keep_if(mine, term[c]);
              hit[c] |= static_cast<J>(mine);
            }
          });
          for (int64_t c = 0; c < g.C; ++c) {
            if (C10_UNLIKELY(seen[c] == 0)) missed(c);
          }
        }
      });
      if (stream) cpu::stream_fence();
    });
  };
  return positions_fit<int32_t>(g) ? run(int32_t{}) : run(int64_t{});
}

// Whether the NCDHW backward writes its planes in one pass (write_plane):
// for disjoint windows in rows of 32 or more. The write pass pays per pooled
// row and per element written, zero-fill and scatter per element zeroed and
// per term: on narrow rows the scatter is the faster.
inline bool writes_planes(const Geometry& g, const Window& w) { return g.oW >= 32 && disjoint_windows(w); }

template <typename T, typename I>
void backward_kernel(T* out, Planes op, const T* go, Planes gp, const I* ix, Planes xp, const Geometry& g,
                     const Window& w, FirstBad& bad) {
  using A = at::opmath_type<T>;
  // (grad_input is dense: channels_last_3d with C > 1 is the channels_last_3d kernels')
  TORCH_INTERNAL_ASSERT(op.sK == 1);
  if (writes_planes(g, w)) {
    // Disjoint windows: one write pass per plane (write_plane).
    const bool covered = windows_cover_self(g, w);
    at::parallel_for(0, g.N * g.C, cpu::grain_for(g.S + g.oS), [&](int64_t b, int64_t e) {
      std::vector<int32_t> hits(g.oW);
      std::vector<T> terms(g.oW);
      for (int64_t t = b; t < e; ++t) {
        const int64_t n = t / g.C, c = t % g.C;
        T* dst = out + n * op.sN + c * op.sC;
        if (!covered) cpu::zero_fill(dst, g.S);
        const int64_t first = write_plane(dst, go + n * gp.sN + c * gp.sC, gp.sK, ix + n * xp.sN + c * xp.sC,
                                          xp.sK, g, w, hits.data(), terms.data());
        if (C10_UNLIKELY(first != kNone)) {
          bad.note(t * g.oS + first);
          return;  // the call raises: the rest of the result is not needed
        }
      }
    });
    return;
  }
  const bool direct = adds_in_place<T>(w);
  const TapCheck check(g, w);
  at::parallel_for(0, g.N * g.C, cpu::grain_for(g.S + g.oS), [&](int64_t b, int64_t e) {
    std::vector<A> row(direct ? 0 : g.S);
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / g.C, c = t % g.C;
      T* dst = out + n * op.sN + c * op.sC;
      const T* gs = go + n * gp.sN + c * gp.sC;
      const I* is = ix + n * xp.sN + c * xp.sC;
      int64_t first = kNone;
      if (direct) {
        cpu::zero_fill(dst, g.S);
        first = scatter_plane<T>(dst, gs, gp.sK, is, xp.sK, g, check);
      } else {
        std::fill(row.begin(), row.end(), A(0));
        first = scatter_plane<A>(row.data(), gs, gp.sK, is, xp.sK, g, check);
        cpu::narrow_row(row.data(), dst, g.S);
      }
      if (C10_UNLIKELY(first != kNone)) {
        bad.note(t * g.oS + first);
        return;  // the call raises: the rest of the result is not needed
      }
    }
  });
}

// The forward's element rule (window_max's, contracts/max_pool.h) for n
// windows at once, one tap of each: tap i of window i reads src[i * stride]
// at flat position base + i * step. best starts at -inf and where at each
// window's first tap inside self, so "the first tap, then any larger or NaN
// one" is two selects per element, no branch: the loop vectorises (over the
// pooled positions of a row, or over the channels).
template <int kStride, typename T, typename A, typename J>
inline void fold_tap(const T* __restrict src, int64_t stride, int64_t n, J base, J step, A* __restrict best,
                     J* __restrict where) {
  const int64_t st = kStride ? kStride : stride;
  for (int64_t i = 0; i < n; ++i) {
    const A v = static_cast<A>(src[i * st]);
    const bool take = v > best[i] || v != v;
    best[i] = take ? v : best[i];
    where[i] = take ? static_cast<J>(base + static_cast<J>(i) * step) : where[i];
  }
}

// The windows of a pooled row that start in W's left padding (ceil(p / s)),
// at most the row's oW.
inline int64_t left_padding_windows(const Geometry& g, const Window& w) {
  return std::min(g.oW, (w.padding[2] + w.stride[2] - 1) / w.stride[2]);
}

// The contract's window_max for pooled position (od, oh, ow) of a plane
// whose flat position pos at() reads in A.
template <typename A, typename At>
inline void plane_window_max(At at, int64_t od, int64_t oh, int64_t ow, const Geometry& g, const Window& w, A& value,
                             int64_t& index) {
  const int64_t k[3] = {w.kernel[0], w.kernel[1], w.kernel[2]}, s[3] = {w.stride[0], w.stride[1], w.stride[2]},
                p[3] = {w.padding[0], w.padding[1], w.padding[2]},
                d[3] = {w.dilation[0], w.dilation[1], w.dilation[2]};
  window_max<A, int64_t>(at, od, oh, ow, g.D, g.H, g.W, k, s, p, d, value, index);
}

// Tap i (i < m <= K) of K windows kStride apart from x, as lane i of a
// float32 vector (float16/bfloat16 widened); lanes past m are 0. With
// `whole`, the caller knows that 2K elements from x lie in the row (stride 2
// then loads them whole and keeps the even lanes: cpu::load_even_odd); else
// nothing past tap m - 1 is read.
template <int kStride, typename T>
inline at::vec::Vectorized<float> load_taps(const T* __restrict x, int64_t m, bool whole) {
  constexpr int64_t K = at::vec::Vectorized<float>::size();
  if (kStride == 1 && m == K) return cpu::widen(x);
  if (kStride == 2 && m == K && whole) return std::get<0>(cpu::load_even_odd(x));
  const auto [x0, x1] = cpu::load_pair(x, kStride * m - (kStride - 1));
  return kStride == 1 ? x0 : std::get<0>(at::vec::deinterleave2(x0, x1));
}

// window_max's step (fold_tap's) on a vector of windows: take v where it is
// greater or NaN (and, given `live`, in its lanes only), with its position.
inline void fold_lanes(const at::vec::Vectorized<float>& v, const at::vec::Vectorized<int32_t>& at,
                       at::vec::Vectorized<float>& best, at::vec::Vectorized<int32_t>& where,
                       const at::vec::Vectorized<float>* live = nullptr) {
#if defined(CPU_CAPABILITY_AVX512)
  // (in mask registers: at::vec's compares make vectors of the masks, and blendv masks again)
  __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  if (live != nullptr) take &= _mm512_movepi32_mask(_mm512_castps_si512(*live));
  best = _mm512_mask_mov_ps(best, take, v);
  where = _mm512_mask_mov_epi32(where, take, at);
#else
  auto take = (v > best) | (v != v);
  if (live != nullptr) take = take & *live;
  best = at::vec::Vectorized<float>::blendv(best, v, take);
  where = at::vec::Vectorized<int32_t>::blendv(where, at, at::vec::cast<int32_t>(take));
#endif
}

// window_max's step on a vector of windows whose values hold no NaN: the
// running maximum, and v's position where it is greater. The maximum's
// chain from tap to tap is one instruction (a small row's taps all fold
// into one vector, so that chain sets the pace), not window_max's compare
// and selects. A NaN is not ordered by it: NanLanes marks the lanes that
// saw one, whose windows the caller folds by window_max's own rule. On a
// tie (-0 against +0 too) best keeps its own bits (maxps returns its second
// operand where the two compare equal), so a lane without NaN holds the
// element at its position, bit for bit.
inline void max_lanes(const at::vec::Vectorized<float>& v, const at::vec::Vectorized<int32_t>& at,
                      at::vec::Vectorized<float>& best, at::vec::Vectorized<int32_t>& where) {
#if defined(CPU_CAPABILITY_AVX512)
  where = _mm512_mask_mov_epi32(where, _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ), at);
  best = _mm512_max_ps(v, best);
#else
  where = at::vec::Vectorized<int32_t>::blendv(where, at, at::vec::cast<int32_t>(v > best));
  best = at::vec::clamp_min(best, v);  // (best < v ? v : best; AVX2: maxps(v, best))
#endif
}

// The lanes that held a NaN in any of the vectors added (bit i: lane i).
class NanLanes {
 public:
  void add(const at::vec::Vectorized<float>& v) {
#if defined(CPU_CAPABILITY_AVX512)
    seen_ |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
#else
    seen_ = seen_ | v.isnan();
#endif
  }

  uint32_t bits() const {
#if defined(CPU_CAPABILITY_AVX512)
    return seen_;
#else
    constexpr int K = at::vec::Vectorized<float>::size();
    return ~static_cast<uint32_t>(seen_.zero_mask()) & ((1u << K) - 1u);  // (zero_mask's K bits)
#endif
  }

 private:
#if defined(CPU_CAPABILITY_AVX512)
  __mmask16 seen_ = 0;
#else
  at::vec::Vectorized<float> seen_{0.0f};
#endif
};

// window_max over one window for K lanes at once (channels, or planes
// transposed into lanes), tap pos's lanes read by load(pos): from -inf at
// the window's first tap, the taps folded by their running maximum
// (max_lanes: one instruction a tap on the chain from tap to tap, where
// window_max's own step, fold_lanes, has a compare, an or and a select);
// where a lane saw a NaN, the window is folded again by fold_lanes.
template <typename Taps, typename Load>
inline void max_window(const Taps& taps_of, int64_t first, Load load, at::vec::Vectorized<float>& best,
                       at::vec::Vectorized<int32_t>& where) {
  using IVec = at::vec::Vectorized<int32_t>;
  const auto start = [&] {
    best = at::vec::Vectorized<float>(-std::numeric_limits<float>::infinity());
    where = IVec(static_cast<int32_t>(first));
  };
  start();
  NanLanes nan;
  taps_of([&](int64_t pos) {
    const auto v = load(pos);
    nan.add(v);
    max_lanes(v, IVec(static_cast<int32_t>(pos)), best, where);
  });
  if (C10_LIKELY(nan.bits() == 0)) return;
  start();
  taps_of([&](int64_t pos) { fold_lanes(load(pos), IVec(static_cast<int32_t>(pos)), best, where); });
}

// The lanes below m, as a blendv mask.
inline at::vec::Vectorized<float> lanes_below(int64_t m) {
  using IVec = at::vec::Vectorized<int32_t>;
  return at::vec::cast<float>(IVec::arange(0, 1) < IVec(static_cast<int32_t>(m)));
}

// fold_tap in at::vec vectors of windows, for float32 compare and int32
// positions (J), the taps kStride apart (the windows' stride). best and
// where are read and written whole (K elements of room past the row's last
// window: a whole store reloaded whole by the next tap forwards, a masked
// one does not); the lanes past the n-th window keep theirs.
template <int kStride, typename T>
inline void fold_tap_vectors(const T* __restrict src, int64_t n, int32_t base, float* __restrict best,
                             int32_t* __restrict where) {
  static_assert(kStride == 1 || kStride == 2);
  using Vec = at::vec::Vectorized<float>;
  using IVec = at::vec::Vectorized<int32_t>;
  constexpr int64_t K = Vec::size();
  static_assert(IVec::size() == K);
  const IVec step = IVec::arange(0, kStride);  // (lane i's position, from lane 0's: constants)
  for (int64_t i = 0; i < n; i += K) {
    const int64_t m = std::min(K, n - i);  // windows in this vector
    // (whole: the next vector's first tap follows this one's last odd element)
    const Vec v = load_taps<kStride>(src + kStride * i, m, i + K < n);
    Vec b = Vec::loadu(best + i);
    IVec a = IVec::loadu(where + i);
    const IVec at_ = IVec(base + static_cast<int32_t>(i) * kStride) + step;
    if (m == K) {
      fold_lanes(v, at_, b, a);
    } else {
      const Vec live = lanes_below(m);
      fold_lanes(v, at_, b, a, &live);
    }
    b.store(best + i);
    a.store(where + i);
  }
}

// Writes n results and their positions (stride ok): the winning element
// itself, so its bits (NaN payloads too): best holds it where the compute
// type is the element type (unless kFromSelf), else it is read again from
// self (position where[i] at src[where[i] * sK + i * sI]).
template <typename T, typename A, typename J, bool kFromSelf = false>
inline void store_result(T* out, int64_t* indices, int64_t ok, int64_t n, const A* best, const J* where,
                         const T* src, int64_t sK, int64_t sI) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<A, T> && !kFromSelf) {
      out[i * ok] = best[i];
    } else {
      out[i * ok] = src[where[i] * sK + i * sI];
    }
    indices[i * ok] = where[i];
  }
}

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

// K pooled results of the vector folds, lanes below nc (the rest not
// written): the values best holds, which are self's elements themselves
// (max_window only selects, never computes), and their positions where, as
// int64. float32 and bfloat16 values go back exactly (store_narrow); a
// float16 is read again from self at its position (self_at(where)), so that
// a NaN keeps its payload.
template <typename T, typename SelfAt>
inline void store_lanes(T* out, int64_t* ix, const at::vec::Vectorized<float>& best,
                        const at::vec::Vectorized<int32_t>& where, int nc, SelfAt self_at) {
  constexpr int K = at::vec::Vectorized<float>::size();
  alignas(64) int32_t at[K];
  where.store(at);  // (read by the float16 values and the non-AVX-512 positions)
#if defined(CPU_CAPABILITY_AVX512)
  const __mmask16 live = static_cast<__mmask16>((1u << nc) - 1);
  const __m512i w = where;
  _mm512_mask_storeu_epi64(ix, static_cast<__mmask8>(live), _mm512_cvtepi32_epi64(_mm512_castsi512_si256(w)));
  _mm512_mask_storeu_epi64(ix + 8, static_cast<__mmask8>(live >> 8),
                           _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(w, 1)));
#else
  for (int c = 0; c < nc; ++c) ix[c] = at[c];
#endif
  if constexpr (std::is_same_v<T, c10::Half>) {
    for (int c = 0; c < nc; ++c) out[c] = self_at(at[c], c);
  } else {
    cpu::store_narrow(out, best, nc);
  }
}

// The channels_last_3d forward in float32 compare with int32 positions: per
// pooled position and vector of channels (float16/bfloat16 widened), the
// window's taps folded in registers (max_window: window_max's result) and
// stored once (store_lanes).
template <typename T>
void forward_channels_last_vectors(T* out, int64_t* ix, Planes op, const T* x, Planes xp, const Geometry& g,
                                   const Window& w, int64_t grain) {
  using Vec = at::vec::Vectorized<float>;
  using IVec = at::vec::Vectorized<int32_t>;
  static_assert(Vec::size() == IVec::size());
  constexpr int64_t K = Vec::size();
  at::parallel_for(0, g.N * g.oD * g.oH, grain, [&](int64_t b, int64_t e) {
    for_each_channels_last_window(b, e, g, w, [&](int64_t n, int64_t o, int64_t first, const auto& taps) {
      const T* xn = x + n * xp.sN;
      T* os = out + n * op.sN + o * op.sK;
      int64_t* is = ix + n * op.sN + o * op.sK;
      for (int64_t c0 = 0; c0 < g.C; c0 += K) {
        const int nc = static_cast<int>(std::min(K, g.C - c0));
        Vec best;
        IVec at_;
        max_window(taps, first, [&](int64_t pos) {
          const T* xt = xn + pos * xp.sK + c0;
          return nc == K ? cpu::widen(xt) : std::get<0>(cpu::load_pair(xt, nc));
        }, best, at_);
        store_lanes(os + c0, is + c0, best, at_, nc, [&](int32_t pos, int c) { return xn[pos * xp.sK + c0 + c]; });
      }
    });
  });
}

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

template <typename T, typename J>
void forward_kernel(T* out, int64_t* ix, Planes op, const T* x, Planes xp, const Geometry& g, const Window& w) {
  using A = at::opmath_type<T>;
  const int64_t window_taps = w.kernel[0] * w.kernel[1] * w.kernel[2];  // (per window, for the grains)
  if (channels_adjacent(op, g) && xp.sC == 1) {
    // channels_last_3d: tasks are pooled rows (n, od, oh); per pooled
    // position, the window's taps inside self in increasing (d, h, w), each
    // tap's channels together.
    const int64_t grain = cpu::grain_for(g.oW * g.C * window_taps);
    if constexpr (std::is_same_v<A, float> && std::is_same_v<J, int32_t>) {
      return forward_channels_last_vectors(out, ix, op, x, xp, g, w, grain);
    }
    at::parallel_for(0, g.N * g.oD * g.oH, grain, [&](int64_t b, int64_t e) {
      std::vector<A> best(g.C);
      std::vector<J> where(g.C);
      for_each_channels_last_window(b, e, g, w, [&](int64_t n, int64_t o, int64_t, const auto& taps) {
        const T* xn = x + n * xp.sN;
        bool first = true;
        taps([&](int64_t pos) {
          const T* xt = xn + pos * xp.sK;
          if (first) {  // window_max's first tap: taken whatever its value
            for (int64_t c = 0; c < g.C; ++c) best[c] = static_cast<A>(xt[c]);
            std::fill(where.begin(), where.end(), static_cast<J>(pos));
            first = false;
            return;
          }
          fold_tap<1>(xt, 1, g.C, static_cast<J>(pos), J(0), best.data(), where.data());
        });
        store_result(out + n * op.sN + o * op.sK, ix + n * op.sN + o * op.sK, 1, g.C, best.data(), where.data(),
                     xn, xp.sK, 1);
      });
    });
    return;
  }
  if constexpr (std::is_same_v<A, float> && std::is_same_v<J, int32_t>) {
    if (xp.sK == 1 && lanes_of_planes(g, w)) return forward_plane_lanes(out, ix, op, x, xp, g, w);
  }
  // (a tap counts as 8 elements of work: a tap folded costs more than an
  // element of an elementwise op, and a small model's planes then split over
  // the threads)
  at::parallel_for(0, g.N * g.C, cpu::grain_for(8 * g.oS * window_taps), [&](int64_t b, int64_t e) {
    // (K elements of room past the row's last window: fold_tap_vectors)
    std::vector<A> best(xp.sK == 1 ? g.oW + at::vec::Vectorized<float>::size() : 0);
    std::vector<J> where(best.size());
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / g.C, c = t % g.C;
      const T* xs = x + n * xp.sN + c * xp.sC;
      T* os = out + n * op.sN + c * op.sC;
      int64_t* is = ix + n * op.sN + c * op.sC;
      if (xp.sK == 1) {  // dense D, H, W axes: row by row, vectorised
        if (w.stride[2] == 1) {
          forward_plane<1, T, J>(xs, os, is, op.sK, g, w, best.data(), where.data());
        } else if (w.stride[2] == 2) {
          forward_plane<2, T, J>(xs, os, is, op.sK, g, w, best.data(), where.data());
        } else {
          forward_plane<0, T, J>(xs, os, is, op.sK, g, w, best.data(), where.data());
        }
        continue;
      }
      const int64_t sK = xp.sK;
      const auto at = [&](int64_t pos) { return static_cast<A>(xs[pos * sK]); };
      int64_t o = 0;
      for (int64_t od = 0; od < g.oD; ++od) {
        for (int64_t oh = 0; oh < g.oH; ++oh) {
          for (int64_t ow = 0; ow < g.oW; ++ow, ++o) {
            A value;
            int64_t index;
            plane_window_max(at, od, oh, ow, g, w, value, index);
            os[o * op.sK] = xs[index * sK];  // the element itself: its bits, NaN payloads too
            is[o * op.sK] = index;
          }
        }
      }
    }
  });
}

// result, indices: dense in the result's format.
void forward_into(at::Tensor& result, at::Tensor& indices, const Plan2<Params>& p, const at::Tensor& self_,
                  at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, bool) {
  const at::Tensor self = planes::flattenable(self_, p.result.format);
  const Geometry g = geometry(self, result);
  TORCH_INTERNAL_ASSERT(indices.strides() == result.strides());  // (both allocated in the result's spec)
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "max_pool3d_with_indices", [&] {
    const auto run = [&](auto position) {
      forward_kernel<scalar_t, decltype(position)>(result.mutable_data_ptr<scalar_t>(),
                                                   indices.mutable_data_ptr<int64_t>(), planes_of(result),
                                                   self.const_data_ptr<scalar_t>(), planes_of(self), g,
                                                   p.params.window);
    };
    if (positions_fit<int32_t>(g)) {
      run(int32_t{});
    } else {
      run(int64_t{});
    }
  });
}

// grad_input: dense in the result's format, or in the other 5-D one (out=).
// Where its channels are adjacent, grad_output and indices are read with
// adjacent channels too (copied once if not).
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output_, const at::Tensor& self,
                   const at::Tensor& indices_, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef,
                   bool) {
  const Window& w = p.params.window;
  const Geometry g = geometry(self, grad_output_);
  const Planes op = planes_of(grad_input);
  const bool channels_last = channels_adjacent(op, g);
  const auto operand = [&](const at::Tensor& t) {
    if (channels_last) {
      return planes::flat_stride(t) >= 0 && t.stride(1) == 1 ? t : t.contiguous(MemoryFormat::ChannelsLast3d);
    }
    return planes::flattenable(t, p.result.format);
  };
  const at::Tensor grad_output = operand(grad_output_);
  const at::Tensor indices = operand(indices_);
  FirstBad bad;
  AT_DISPATCH_INDEX_TYPES(indices.scalar_type(), "max_pool3d_with_indices_backward", [&] {
    const index_t* ix = indices.const_data_ptr<index_t>();
    const Planes xp = planes_of(indices);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "max_pool3d_backward", [&] {
      const auto kernel = !channels_last          ? backward_kernel<scalar_t, index_t>
                          : disjoint_windows(w) && op.sK == g.C ? write_channels_last<scalar_t, index_t>
                                                : scatter_channels_last<scalar_t, index_t>;
      kernel(grad_input.mutable_data_ptr<scalar_t>(), op, grad_output.const_data_ptr<scalar_t>(),
             planes_of(grad_output), ix, xp, g, w, bad);
    });
    check_found(bad, g, w, ix, xp);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  entry::impl<cpu::Backend, check_forward, forward_into>(m, "max_pool3d_with_indices");
  entry::impl<cpu::Backend, check_backward, backward_into>(m, "max_pool3d_with_indices_backward");
}

}  // namespace torch_aclnn::max_pool
