// The per-element code of the MaxPool3d CUDA kernels and the host-side
// set-up of their launches (csrc/cuda/max_pool.cu launches them). The
// element functions are C10_HOST_DEVICE; their only CUDA built-in, the
// backward check flag's atomic min (cuda/planes.cuh: note_bad), has a
// sequential host form (a minimum does not depend on the order it is taken
// in), so tests/test_cuda_host_*.py run the very same code on the
// host and compares with the CPU kernels bit for bit.
//
// Forward (max_element): one thread per pooled element in the result's
// memory order runs the contract's window_max, the CPU kernel's element
// rule, in the same compute type: the same values and indices.
// Backward: the row-12 check (check_element) and the gather
// (gather_element).
//
// Geometry (as the CPU kernel, csrc/cpu/max_pool.cpp): a tensor of shape
// (N, [C,] D, H, W) is N x C planes (C = 1 for 4-D; common/planes.h,
// cuda/planes.cuh), element (n, c, k) at n*sN + c*sC + k*sK; self's planes
// have S = D*H*W elements, the pooled tensors' (result, indices,
// grad_output) oS = oD*oH*oW.
#pragma once

#include "common/planes.h"
#include "contracts/max_pool.h"
#include "cuda/index.cuh"
#include "cuda/planes.cuh"

#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace torch_aclnn::max_pool::kernels {

// Planes, their walks and the position flag (cuda/planes.cuh), Divider and
// Pack (cuda/index.cuh).
using namespace torch_aclnn::cuda;

// ---------------------------------------------------------------------------
// Host-side set-up (the CPU kernel's rules).

// Whether 32-bit index math also covers the window arithmetic: kernel,
// stride and dilation below 2^31 and, per axis, size + 2*padding too. The
// gather's quantities then stay in [0, 2^31) (x + padding; o*stride and,
// where formed, (kernel-1)*dilation, both <= x + padding: the fast
// dividers' dividends), the check's in (-2^31, 2^31) (a window's start
// o*stride - padding lies in [-padding, size): the pooled size keeps the
// last window starting inside the input or its left padding).
inline bool window_fits_32bit(const Geometry& g, const Window& w) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  const int64_t in[3] = {g.D, g.H, g.W};
  for (int i = 0; i < 3; ++i) {
    if (w.kernel[i] > kMax || w.stride[i] > kMax || w.dilation[i] > kMax || w.padding[i] > (kMax - in[i]) / 2) {
      return false;
    }
  }
  return true;
}

// Whether 32-bit signed math covers the forward's window arithmetic
// (window_max): window_fits_32bit, and per axis (pooled-1)*stride +
// (kernel-1)*dilation below 2^31. That bounds every window start
// o*stride - padding and the tap range window_max clamps to the input
// (-start + dilation - 1, size - 1 - start); a conservative bound (it forces
// the 64-bit kernel for some huge strides or dilations that would fit).
inline bool forward_fits_32bit(const Geometry& g, const Window& w) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (!window_fits_32bit(g, w)) return false;
  const int64_t pooled[3] = {g.oD, g.oH, g.oW};
  for (int i = 0; i < 3; ++i) {
    // Each factor is below 2^31 here, so neither product overflows.
    if ((pooled[i] - 1) * w.stride[i] + (w.kernel[i] - 1) * w.dilation[i] > kMax) return false;
  }
  return true;
}

// One axis of the pooling (D, H or W): its pooled size and window.
template <typename index_t>
struct Axis {
  using signed_t = std::make_signed_t<index_t>;
  index_t pooled, kernel, stride, padding, dilation;
  Divider<index_t> by_stride, by_dilation;

  Axis() = default;
  Axis(int64_t pooled_, int64_t kernel_, int64_t stride_, int64_t padding_, int64_t dilation_)
      : pooled(static_cast<index_t>(pooled_)),
        kernel(static_cast<index_t>(kernel_)),
        stride(static_cast<index_t>(stride_)),
        padding(static_cast<index_t>(padding_)),
        dilation(static_cast<index_t>(dilation_)),
        by_stride(static_cast<index_t>(stride_)),
        by_dilation(static_cast<index_t>(dilation_)) {}

  // The pooled positions [lo, end) whose windows can cover input position x:
  // x = o*stride - padding + t*dilation with t in [0, kernel) needs
  //   ceil((x + padding - (kernel-1)*dilation) / stride) <= o <= floor((x + padding) / stride),
  // within [0, pooled). `reach` = x + padding (>= 0, so unsigned math is
  // exact; (kernel-1)*dilation is only formed when it is <= reach).
  C10_HOST_DEVICE inline void candidates(index_t x, index_t& reach, index_t& lo, index_t& end) const {
    reach = x + padding;
    lo = 0;
    if (kernel - 1 <= by_dilation.div(reach)) {
      const auto q = by_stride.divmod(reach - (kernel - 1) * dilation);
      lo = q.div + (q.mod != 0 ? 1 : 0);
    }
    const index_t last = by_stride.div(reach);
    end = last < pooled ? last + 1 : pooled;
  }

  // For o in [lo, end) of candidates(x): whether x is a tap of o's window,
  // in_window(x, o, ...) of the contract. There t*dilation = reach -
  // o*stride is in [0, (kernel-1)*dilation], so only its alignment is left
  // (tests/test_cuda_host_*.py check the two agree).
  C10_HOST_DEVICE inline bool covers(index_t reach, index_t o) const {
    return by_dilation.mod(reach - o * stride) == 0;
  }

  // Row 12 on this axis for any x and o: the contract's in_window, in
  // signed arithmetic (a window may start before 0).
  C10_HOST_DEVICE inline bool tap(index_t x, index_t o) const {
    return in_window<signed_t>(static_cast<signed_t>(x), static_cast<signed_t>(o), static_cast<signed_t>(kernel),
                               static_cast<signed_t>(stride), static_cast<signed_t>(padding),
                               static_cast<signed_t>(dilation));
  }
};

// Flat position k of a plane of H x W rows -> (d, h, w).
template <typename index_t>
struct Unflatten {
  Divider<index_t> W, H;

  Unflatten() = default;
  Unflatten(int64_t H_, int64_t W_) : W(static_cast<index_t>(W_)), H(static_cast<index_t>(H_)) {}

  C10_HOST_DEVICE inline void operator()(index_t k, index_t& d, index_t& h, index_t& w) const {
    const auto q = W.divmod(k);
    w = q.mod;
    const auto r = H.divmod(q.div);
    h = r.mod;
    d = r.div;
  }
};

// The pooling's geometry as the kernels use it.
template <typename index_t>
struct Pool {
  Axis<index_t> axis[3];  // D, H, W
  Unflatten<index_t> in, pooled;  // self's planes (S elements), the pooled ones (oS)
  int64_t C, S, oS;

  Pool() = default;
  Pool(const Geometry& g, const Window& w) : in(g.H, g.W), pooled(g.oH, g.oW), C(g.C), S(g.S), oS(g.oS) {
    const int64_t sizes[3] = {g.oD, g.oH, g.oW};
    for (int i = 0; i < 3; ++i) {
      axis[i] = Axis<index_t>(sizes[i], w.kernel[i], w.stride[i], w.padding[i], w.dilation[i]);
    }
  }

  // Row 12: flat input position v is a position of the window of pooled
  // position o (range check, then in_window on every axis).
  C10_HOST_DEVICE inline bool tap(int64_t v, index_t o) const {
    if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(S)) return false;
    index_t z, y, x, od, oh, ow;
    in(static_cast<index_t>(v), z, y, x);
    pooled(o, od, oh, ow);
    return axis[0].tap(z, od) && axis[1].tap(y, oh) && axis[2].tap(x, ow);
  }
};

// ---------------------------------------------------------------------------
// Check (row 12), one thread per pooled element (n, c, o) in the indices'
// memory order: an index that is not a position of its own window lowers
// the flag to its logical position (n*C + c)*oS + o, the position the CPU
// kernel reports (the smallest, whatever the order the threads ran in).

template <bool channels_last, typename I, typename index_t>
C10_HOST_DEVICE inline void check_element(index_t p, const I* __restrict__ ix, const Planes<index_t>& xp,
                                          const Walk<index_t>& walk, const Pool<index_t>& pool, int64_t* flag) {
  index_t n, c, o;
  walk.template split<channels_last>(p, n, c, o);
  const int64_t v = static_cast<int64_t>(ix[n * xp.sN + c * xp.sC + o * xp.sK]);
  if (C10_UNLIKELY(!pool.tap(v, o))) {
    note_bad(flag, (static_cast<int64_t>(n) * pool.C + static_cast<int64_t>(c)) * pool.oS + static_cast<int64_t>(o));
  }
}

// ---------------------------------------------------------------------------
// Gather, one thread per grad_input element (n, c, k), k = (d, h, w), in
// grad_input's memory order: the pooled positions o whose windows cover
// (d, h, w), in increasing (od, oh, ow) order (= increasing flat o, the
// order the CPU kernel's scatter adds them in), contribute grad_output[n][c][o]
// when indices[n][c][o] == k. The sum starts at 0 in the opmath type
// (float32 for float16/bfloat16) and is rounded once: the same additions,
// in the same order, as the CPU kernel, hence the same bits. A bad index
// is never read through: it only fails to match (and the check raises).

template <bool channels_last, typename T, typename I, typename index_t>
C10_HOST_DEVICE inline void gather_element(index_t p, const T* __restrict__ go, const Planes<index_t>& gp,
                                           const I* __restrict__ ix, const Planes<index_t>& xp, T* __restrict__ out,
                                           const Planes<index_t>& op, const Walk<index_t>& walk,
                                           const Pool<index_t>& pool) {
  using A = at::opmath_type<T>;
  index_t n, c, k;
  walk.template split<channels_last>(p, n, c, k);
  index_t d, h, w;
  pool.in(k, d, h, w);
  const Axis<index_t>& ad = pool.axis[0];
  const Axis<index_t>& ah = pool.axis[1];
  const Axis<index_t>& aw = pool.axis[2];
  index_t rd, d0, d1, rh, h0, h1, rw, w0, w1;
  ad.candidates(d, rd, d0, d1);
  ah.candidates(h, rh, h0, h1);
  aw.candidates(w, rw, w0, w1);
  const T* __restrict__ g = go + (n * gp.sN + c * gp.sC);
  const I* __restrict__ x = ix + (n * xp.sN + c * xp.sC);
  const int64_t target = static_cast<int64_t>(k);
  A acc = A(0);
  for (index_t od = d0; od < d1; ++od) {
    if (!ad.covers(rd, od)) continue;
    for (index_t oh = h0; oh < h1; ++oh) {
      if (!ah.covers(rh, oh)) continue;
      const index_t row = (od * ah.pooled + oh) * aw.pooled;
      for (index_t ow = w0; ow < w1; ++ow) {
        if (!aw.covers(rw, ow)) continue;
        const index_t o = row + ow;
        if (static_cast<int64_t>(x[o * xp.sK]) == target) acc += static_cast<A>(g[o * gp.sK]);
      }
    }
  }
  out[n * op.sN + c * op.sC + k * op.sK] = static_cast<T>(acc);
}

// ---------------------------------------------------------------------------
// Forward, one thread per pooled element (n, c, o), o = (od, oh, ow), in the
// result's memory order: the contract's window_max (the CPU kernel's element
// rule: NaN, -inf and ties alike) over self's plane (n, c) in the opmath type
// (float32 for float16/bfloat16: exact); the winning element itself (its
// bits, as the CPU kernel writes it) with its flat (D, H, W) index, to the same offset
// of result and indices (dense, same strides). window_max's arithmetic is
// signed (a window may start in the padding) in the index width
// (forward_fits_32bit); each output is written once: deterministic.

// Tap `pos` (a flat (D, H, W) position of self's plane) in the compute
// type A.
template <typename A, typename T, typename index_t>
struct PlaneTaps {
  const T* __restrict__ x;  // the plane's first element
  index_t sK;
  C10_HOST_DEVICE inline A operator()(std::make_signed_t<index_t> pos) const {
    return static_cast<A>(x[static_cast<index_t>(pos) * sK]);
  }
};

// The pooling as the forward uses it: flat o -> (od, oh, ow), and
// window_max's signed sizes and window.
template <typename index_t>
struct Windows {
  using signed_t = std::make_signed_t<index_t>;
  Unflatten<index_t> pooled;
  signed_t D, H, W;
  signed_t kernel[3], stride[3], padding[3], dilation[3];

  Windows() = default;
  Windows(const Geometry& g, const Window& w)
      : pooled(g.oH, g.oW),
        D(static_cast<signed_t>(g.D)),
        H(static_cast<signed_t>(g.H)),
        W(static_cast<signed_t>(g.W)) {
    for (int i = 0; i < 3; ++i) {
      kernel[i] = static_cast<signed_t>(w.kernel[i]);
      stride[i] = static_cast<signed_t>(w.stride[i]);
      padding[i] = static_cast<signed_t>(w.padding[i]);
      dilation[i] = static_cast<signed_t>(w.dilation[i]);
    }
  }
};

template <bool channels_last, typename T, typename index_t>
C10_HOST_DEVICE inline void max_element(index_t p, const T* __restrict__ x, const Planes<index_t>& sp,
                                        T* __restrict__ out, int64_t* __restrict__ ix, const Planes<index_t>& op,
                                        const Walk<index_t>& walk, const Windows<index_t>& win) {
  using A = at::opmath_type<T>;
  using signed_t = std::make_signed_t<index_t>;
  index_t n, c, o;
  walk.template split<channels_last>(p, n, c, o);
  index_t od, oh, ow;
  win.pooled(o, od, oh, ow);
  const PlaneTaps<A, T, index_t> taps{x + (n * sp.sN + c * sp.sC), sp.sK};
  A value;
  signed_t index;
  window_max<A, signed_t>(taps, static_cast<signed_t>(od), static_cast<signed_t>(oh), static_cast<signed_t>(ow),
                          win.D, win.H, win.W, win.kernel, win.stride, win.padding, win.dilation, value, index);
  const index_t dst = n * op.sN + c * op.sC + o * op.sK;
  out[dst] = taps.x[static_cast<index_t>(index) * taps.sK];  // the element itself: its bits, NaN payloads too
  ix[dst] = static_cast<int64_t>(index);
}

// ---------------------------------------------------------------------------
// The launch set-up (csrc/cuda/max_pool.cu and the host emulation).

struct Launch {
  at::Tensor grad_output, indices;  // D, H, W axes flatten
  Geometry g;
  bool narrow;     // 32-bit index math (tensors and window arithmetic)
  bool check_cl;   // the check walks the indices with c fastest
  bool gather_cl;  // the gather walks grad_input with c fastest
};

// grad_input: dense in the result's memory format or (out=) in the other
// 5-D one; the gather writes through its strides, so either is right and
// the walk only follows its memory order.
inline Launch launch_of(const at::Tensor& grad_input, const at::Tensor& grad_output, const at::Tensor& self,
                        const at::Tensor& indices, const Plan& p) {
  Launch l;
  const c10::MemoryFormat fmt = p.result.format;
  l.grad_output = planes::flattenable(grad_output, fmt);
  l.indices = planes::flattenable(indices, fmt);
  l.g = geometry(self, l.grad_output);
  l.narrow = cuda::fits_32bit({&l.grad_output, &l.indices, &grad_input}) && window_fits_32bit(l.g, p.params.window);
  l.check_cl = channels_fastest(l.indices, l.g);
  l.gather_cl = channels_fastest(grad_input, l.g);
  return l;
}

struct ForwardLaunch {
  at::Tensor self;  // D, H, W axes flatten
  Geometry g;
  bool narrow;  // 32-bit index math (tensors and window arithmetic)
  bool cl;      // walks the result with c fastest
};

// result, indices: dense in the result's memory format (same strides).
inline ForwardLaunch forward_launch_of(const at::Tensor& result, const at::Tensor& indices, const at::Tensor& self,
                                       const Plan2<Params>& p) {
  TORCH_INTERNAL_ASSERT(result.strides() == indices.strides(), "max_pool3d_with_indices: result and indices differ");
  ForwardLaunch l;
  l.self = planes::flattenable(self, p.result.format);
  l.g = geometry(l.self, result);
  l.narrow = cuda::fits_32bit({&l.self, &result, &indices}) && forward_fits_32bit(l.g, p.params.window);
  l.cl = channels_fastest(result, l.g);
  return l;
}

// Calls f(I{}) with I the indices' element type (int32 or int64).
template <typename F>
inline void with_indices_type(at::ScalarType t, F&& f) {
  if (t == at::kInt) {
    f(int32_t{});
  } else {
    f(int64_t{});
  }
}

}  // namespace torch_aclnn::max_pool::kernels
