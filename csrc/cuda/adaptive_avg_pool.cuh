// What one thread of the CUDA AdaptiveAvgPool3d kernels computes for one
// element (csrc/cuda/adaptive_avg_pool.cu), C10_HOST_DEVICE so that
// tests/cuda_host/adaptive_avg_pool.h runs this very code on the host
// against the CPU kernels (csrc/cpu/adaptive_avg_pool.cpp), and the launch
// set-up both share.
//
// Element rules (docs/spec.md §13), in the opmath type A (float32 for
// float16/bfloat16), the CPU kernels' exactly:
//   pool_element    out[o] = (sum of the window in increasing (d, h, w),
//                   from +0) / kd / kh / kw
//   gather_element  grad_input[i] = sum, from +0, over the windows covering
//                   i in increasing (od, oh, ow), of grad_output[o] / kd /
//                   kh / kw
// Each thread writes its one element once: no atomics, no zero fill.
#pragma once

#include "contracts/adaptive_avg_pool.h"
#include "cuda/index.cuh"

#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>

#include <cstdint>

namespace torch_aclnn::adaptive_avg_pool::kernels {

// A 4-D (C, D, H, W) or 5-D (N, C, D, H, W) tensor's strides, per axis (N's
// 0 for 4-D).
template <typename index_t>
struct Strides {
  index_t n, c, d, h, w;
};

template <typename index_t>
Strides<index_t> strides_of(const at::Tensor& t) {
  const int64_t k = t.dim() - 5;  // -1 for 4-D
  const auto s = [&](int64_t axis) { return axis < 0 ? index_t(0) : static_cast<index_t>(t.stride(axis)); };
  return {s(k), s(k + 1), s(k + 2), s(k + 3), s(k + 4)};
}

// The sizes of a call: C planes per n, the input's (D, H, W) and the
// output's (oD, oH, oW).
template <typename index_t>
struct Sizes {
  index_t C, D, H, W, oD, oH, oW;
};

// Element p of a dense tensor of sizes (N, C, a, b, e) as coordinates, in
// its memory order: contiguous (e fastest) or channels_last_3d (C fastest).
template <bool channels_last, typename index_t>
C10_HOST_DEVICE inline void coords(index_t p, index_t C, index_t a, index_t b, index_t e, index_t& n, index_t& c,
                                   index_t& x, index_t& y, index_t& z) {
  // The index along an axis of `size`, the fastest of those left.
  const auto next = [&p](index_t size) {
    const index_t i = p % size;
    p /= size;
    return i;
  };
  if (channels_last) c = next(C);
  z = next(e);
  y = next(b);
  x = next(a);
  if (!channels_last) c = next(C);
  n = p;
}

// The forward's element p of out (dense, in its memory order).
template <bool channels_last, typename T, typename index_t>
C10_HOST_DEVICE inline void pool_element(index_t p, const T* __restrict__ x, Strides<index_t> xs, T* __restrict__ out,
                                         Sizes<index_t> s) {
  using A = at::opmath_type<T>;
  index_t n, c, od, oh, ow;
  coords<channels_last>(p, s.C, s.oD, s.oH, s.oW, n, c, od, oh, ow);
  const index_t d0 = window_start(od, s.D, s.oD), d1 = window_end(od, s.D, s.oD);
  const index_t h0 = window_start(oh, s.H, s.oH), h1 = window_end(oh, s.H, s.oH);
  const index_t w0 = window_start(ow, s.W, s.oW), w1 = window_end(ow, s.W, s.oW);
  const T* plane = x + n * xs.n + c * xs.c;
  A acc = A(0);
  for (index_t d = d0; d < d1; ++d) {
    for (index_t h = h0; h < h1; ++h) {
      const T* row = plane + d * xs.d + h * xs.h;
      for (index_t w = w0; w < w1; ++w) acc += static_cast<A>(row[w * xs.w]);
    }
  }
  out[p] = static_cast<T>(acc / A(d1 - d0) / A(h1 - h0) / A(w1 - w0));
}

// The backward's element p of grad_input (dense, in its memory order).
template <bool channels_last, typename T, typename index_t>
C10_HOST_DEVICE inline void gather_element(index_t p, const T* __restrict__ g, Strides<index_t> gs,
                                           T* __restrict__ grad_input, Sizes<index_t> s) {
  using A = at::opmath_type<T>;
  index_t n, c, d, h, w;
  coords<channels_last>(p, s.C, s.D, s.H, s.W, n, c, d, h, w);
  index_t dlo, dhi, hlo, hhi, wlo, whi;
  covering(d, s.D, s.oD, dlo, dhi);
  covering(h, s.H, s.oH, hlo, hhi);
  covering(w, s.W, s.oW, wlo, whi);
  const T* plane = g + n * gs.n + c * gs.c;
  A acc = A(0);
  for (index_t od = dlo; od < dhi; ++od) {
    const A kd = A(window_end(od, s.D, s.oD) - window_start(od, s.D, s.oD));
    for (index_t oh = hlo; oh < hhi; ++oh) {
      const A kh = A(window_end(oh, s.H, s.oH) - window_start(oh, s.H, s.oH));
      const T* row = plane + od * gs.d + oh * gs.h;
      for (index_t ow = wlo; ow < whi; ++ow) {
        const A kw = A(window_end(ow, s.W, s.oW) - window_start(ow, s.W, s.oW));
        acc += static_cast<A>(row[ow * gs.w]) / kd / kh / kw;
      }
    }
  }
  grad_input[p] = static_cast<T>(acc);
}

// Element p of what a kernel writes (dense, in its memory order) from what
// it reads (through its strides): the forward's (pool_element: self into
// the result) or the backward's (gather_element: grad_output into
// grad_input).
template <bool backward, bool channels_last, typename T, typename index_t>
C10_HOST_DEVICE inline void element(index_t p, const T* __restrict__ in, Strides<index_t> is, T* __restrict__ out,
                                    Sizes<index_t> s) {
  if constexpr (backward) {
    gather_element<channels_last>(p, in, is, out, s);
  } else {
    pool_element<channels_last>(p, in, is, out, s);
  }
}

// ---------------------------------------------------------------------------
// Launch set-up (host), shared by adaptive_avg_pool.cu and the emulation.

// Whether a result is written channels_last_3d (else contiguous): the CPU
// kernels' rule.
inline bool channels_last(const at::Tensor& result) {
  return result.dim() == 5 && !result.is_contiguous() &&
         result.is_contiguous(c10::MemoryFormat::ChannelsLast3d);
}

// The sizes of a call from the input (self) and the pooled tensor.
template <typename index_t>
Sizes<index_t> sizes_of(const at::Tensor& self, const at::Tensor& pooled) {
  const int64_t k = self.dim() - 3;
  return {static_cast<index_t>(self.size(k - 1)), static_cast<index_t>(self.size(k)),
          static_cast<index_t>(self.size(k + 1)),  static_cast<index_t>(self.size(k + 2)),
          static_cast<index_t>(pooled.size(k)),    static_cast<index_t>(pooled.size(k + 1)),
          static_cast<index_t>(pooled.size(k + 2))};
}

// Whether 32-bit index math covers the call: the tensors (cuda::fits_32bit)
// and every axis's in * out (the window arithmetic).
inline bool narrow(const at::Tensor& a, const at::Tensor& b, const at::Tensor& self, const at::Tensor& pooled) {
  if (!cuda::fits_32bit({&a, &b})) return false;
  const int64_t k = self.dim() - 3;
  for (int64_t i = 0; i < 3; ++i) {
    if ((self.size(k + i) + 1) * pooled.size(k + i) >= (int64_t(1) << 31)) return false;
  }
  return true;
}

}  // namespace torch_aclnn::adaptive_avg_pool::kernels
