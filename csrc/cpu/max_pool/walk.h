// How both directions walk the pooled positions: pooled rows of a plane,
// channels_last_3d windows, the position type that fits.
// (included by cpu/max_pool.cpp and the other cpu/max_pool/ headers.)
#pragma once

#include "cpu/max_pool/index_check.h"

namespace torch_aclnn::max_pool {
namespace {  // included by cpu/max_pool.cpp only

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

}  // namespace
}  // namespace torch_aclnn::max_pool
