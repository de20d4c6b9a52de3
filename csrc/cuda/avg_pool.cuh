// The per-element code of the AvgPool3d kernels (docs/spec.md §12), shared by
// the CUDA kernels (csrc/cuda/avg_pool.cu) and the CPU kernels' edges
// (csrc/cpu/avg_pool.cpp), C10_HOST_DEVICE with no CUDA built-in, so
// tests/test_cuda_host_*.py run the very same code on the host and
// compares it with the CPU kernels bit for bit.
//
// A tensor of shape (N, [C,] D, H, W) is seen as N*C planes, dense in one of
// two layouts: contiguous (a plane's D*H*W elements adjacent) or
// channels_last_3d (the C planes of one n interleaved, c fastest). Element
// (plane q, flat position k) of a tensor of planes P = N*C lies at
// q*S + k (contiguous) or ((q / C) * S + k) * C + q % C (channels_last_3d).
//
// Forward (forward_element): the window's taps inside self in increasing
// (d, h, w), one running sum in the opmath type A (float32 for
// float16/bfloat16), then divided by the window's divisor (contract:
// axis_window). Backward (gather_element): for an input element, the pooled
// positions whose windows cover it in increasing (od, oh, ow), each term
// grad_output[o] / divisor(o) in A, one running sum from 0. The same
// operations in the same order as the CPU kernels: the same bits.
#pragma once

#include "contracts/avg_pool.h"

#include <ATen/OpMathType.h>
#include <c10/macros/Macros.h>

#include <cstdint>

namespace torch_aclnn::avg_pool::kernels {

// The geometry and window, as plain integers (kernel arguments).
struct Dims {
  int64_t C, D, H, W, oD, oH, oW;
  int64_t k[3], s[3], p[3];
  int64_t divisor;  // 0: none given
  bool count_include_pad;
  bool channels_last;
};

inline Dims dims_of(int64_t C, int64_t D, int64_t H, int64_t W, int64_t oD, int64_t oH, int64_t oW,
                    const Window& w, bool channels_last) {
  Dims g{C, D, H, W, oD, oH, oW, {}, {}, {}, w.divisor, w.count_include_pad, channels_last};
  for (int i = 0; i < 3; ++i) {
    g.k[i] = w.kernel[i];
    g.s[i] = w.stride[i];
    g.p[i] = w.padding[i];
  }
  return g;
}

// The offset of element (plane q, flat position k) of a tensor of S
// elements per plane.
C10_HOST_DEVICE inline int64_t offset(const Dims& g, int64_t q, int64_t k, int64_t S) {
  return g.channels_last ? ((q / g.C) * S + k) * g.C + q % g.C : q * S + k;
}

// The logical index ((plane q) * S + k) of the element at memory offset p
// of a dense tensor of S elements per plane: threads walk the result in its
// memory order (coalesced writes), each element computed by its logical
// position.
C10_HOST_DEVICE inline int64_t logical(const Dims& g, int64_t p, int64_t S) {
  if (!g.channels_last) return p;
  const int64_t c = p % g.C, r = p / g.C;
  return ((r / S) * g.C + c) * S + r % S;
}

// The divisor of pooled position (od, oh, ow) as the compute type (aten:
// an int64 product, converted).
template <typename A>
C10_HOST_DEVICE inline A divisor_of(const Dims& g, int64_t fd, int64_t fh, int64_t fw) {
  return static_cast<A>(g.divisor != 0 ? g.divisor : fd * fh * fw);
}

// The pooled element p (logical: (plane, od, oh, ow), ow fastest) of the
// forward, from self x (read as T, summed in A).
template <typename T, typename A>
C10_HOST_DEVICE inline A forward_element(const T* x, int64_t p, const Dims& g) {
  const int64_t ow = p % g.oW, oh = (p / g.oW) % g.oH, od = (p / (g.oW * g.oH)) % g.oD;
  const int64_t q = p / (g.oW * g.oH * g.oD);
  const int64_t S = g.D * g.H * g.W;
  int64_t lo[3], hi[3], f[3];
  axis_window<int64_t>(od, g.D, g.k[0], g.s[0], g.p[0], g.count_include_pad, lo[0], hi[0], f[0]);
  axis_window<int64_t>(oh, g.H, g.k[1], g.s[1], g.p[1], g.count_include_pad, lo[1], hi[1], f[1]);
  axis_window<int64_t>(ow, g.W, g.k[2], g.s[2], g.p[2], g.count_include_pad, lo[2], hi[2], f[2]);
  A sum = A(0);
  for (int64_t d = lo[0]; d < hi[0]; ++d) {
    for (int64_t h = lo[1]; h < hi[1]; ++h) {
      for (int64_t w = lo[2]; w < hi[2]; ++w) {
        sum += static_cast<A>(x[offset(g, q, (d * g.H + h) * g.W + w, S)]);
      }
    }
  }
  return sum / divisor_of<A>(g, f[0], f[1], f[2]);
}

// The input element p (logical: (plane, d, h, w), w fastest) of the
// backward, from grad_output go (read as T, summed in A).
template <typename T, typename A>
C10_HOST_DEVICE inline A gather_element(const T* go, int64_t p, const Dims& g) {
  const int64_t w = p % g.W, h = (p / g.W) % g.H, d = (p / (g.W * g.H)) % g.D;
  const int64_t q = p / (g.W * g.H * g.D);
  const int64_t oS = g.oD * g.oH * g.oW;
  int64_t first[3], last[3];
  covering<int64_t>(d, g.oD, g.k[0], g.s[0], g.p[0], first[0], last[0]);
  covering<int64_t>(h, g.oH, g.k[1], g.s[1], g.p[1], first[1], last[1]);
  covering<int64_t>(w, g.oW, g.k[2], g.s[2], g.p[2], first[2], last[2]);
  A sum = A(0);
  int64_t lo, hi, fd, fh, fw;
  for (int64_t od = first[0]; od <= last[0]; ++od) {
    axis_window<int64_t>(od, g.D, g.k[0], g.s[0], g.p[0], g.count_include_pad, lo, hi, fd);
    for (int64_t oh = first[1]; oh <= last[1]; ++oh) {
      axis_window<int64_t>(oh, g.H, g.k[1], g.s[1], g.p[1], g.count_include_pad, lo, hi, fh);
      for (int64_t ow = first[2]; ow <= last[2]; ++ow) {
        axis_window<int64_t>(ow, g.W, g.k[2], g.s[2], g.p[2], g.count_include_pad, lo, hi, fw);
        const A term = static_cast<A>(go[offset(g, q, (od * g.oH + oh) * g.oW + ow, oS)]) / divisor_of<A>(g, fd, fh, fw);
        sum += term;
      }
    }
  }
  return sum;
}

// Element p, in memory order, of what a kernel writes from what it reads
// (both dense in g's layout), rounded once to T: the forward's pooled
// element from self (forward_element) or the backward's input element from
// grad_output (gather_element), each computed by its logical position.
template <bool backward, typename T>
C10_HOST_DEVICE inline T element(const T* in, int64_t p, const Dims& g) {
  using A = at::opmath_type<T>;
  if constexpr (backward) {
    return static_cast<T>(gather_element<T, A>(in, logical(g, p, g.D * g.H * g.W), g));
  } else {
    return static_cast<T>(forward_element<T, A>(in, logical(g, p, g.oD * g.oH * g.oW), g));
  }
}

}  // namespace torch_aclnn::avg_pool::kernels
