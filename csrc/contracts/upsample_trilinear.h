// The contract of the upsample-trilinear family (docs/spec.md §10): argument
// rules (those of every upsample, contracts/upsample.h, with the scales
// chosen axis by axis), and the interpolation taps and weights that the
// forward and the backward share on every device. Every backend (CPU, CUDA,
// Meta, and the NPU glue through Meta) uses this header.
#pragma once

#include "contracts/upsample.h"

#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace torch_aclnn::upsample_trilinear {

using upsample::Plan;
using upsample::Scale;
using upsample::UsedScales;

constexpr const char* kForward = "upsample_trilinear3d";
constexpr const char* kBackward = "upsample_trilinear3d_backward";

// §10: with align_corners the scales are not used; otherwise each axis uses
// its own scale when given and > 0 (aclnn's trilinear documents, and aten).
inline UsedScales used_scales(bool align_corners, const Scale (&s)[3]) {
  UsedScales u;
  for (int i = 0; i < 3; ++i) u.axis[i] = !align_corners && s[i].has_value() && *s[i] > 0.;
  return u;
}

inline Plan check_forward(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align_corners, Scale sd,
                          Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  return upsample::check_forward_sizes(kForward, self, output_size, scales, used_scales(align_corners, scales));
}

inline Plan check_backward(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                           c10::SymIntArrayRef input_size, bool align_corners, Scale sd, Scale sh, Scale sw,
                           Out out = {}) {
  const Scale scales[3] = {sd, sh, sw};
  return upsample::check_backward_sizes(kBackward, grad_output, output_size, input_size, scales,
                                        used_scales(align_corners, scales), out);
}

// ---------------------------------------------------------------------------
// The taps and weights (§10), one rule for forward and backward, every device.
// On the device every multiply and add is rounded on its own (no fused
// multiply-add: nvcc would contract a * b + c), as the CPU builds are
// (-ffp-contract=off), so host and device give the same bits.

template <typename T>
C10_HOST_DEVICE C10_ALWAYS_INLINE T mul(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, double>) return __dmul_rn(a, b);
  else return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

template <typename T>
C10_HOST_DEVICE C10_ALWAYS_INLINE T add(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, double>) return __dadd_rn(a, b);
  else return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// acc += w * v, the two operations rounded on their own.
template <typename T>
C10_HOST_DEVICE C10_ALWAYS_INLINE T mul_add(T acc, T w, T v) {
  return add(acc, mul(w, v));
}

// The sizes of one call and the scales it uses (> 0 where used, 0 where the
// sizes decide): a plain struct the CUDA kernels take by value.
struct Geometry {
  int64_t in[3];
  int64_t out[3];
  double scale[3];
  bool align_corners;
};

inline Geometry make_geometry(at::IntArrayRef input_size, at::IntArrayRef output_size, bool align_corners,
                              const Scale (&scales)[3]) {
  Geometry g;
  const UsedScales used = used_scales(align_corners, scales);
  for (int i = 0; i < 3; ++i) {
    g.in[i] = input_size[2 + i];
    g.out[i] = output_size[i];
    g.scale[i] = used.axis[i] ? *scales[i] : 0.0;
  }
  g.align_corners = align_corners;
  return g;
}

// The ratio of an axis in acc_t (float32 for float32/half/bfloat16, float64
// for float64): (in-1)/(out-1) with align_corners, 1/scale (formed in double)
// when the scale is used, in/out otherwise.
template <typename acc_t>
C10_HOST_DEVICE inline acc_t ratio(const Geometry& g, int axis) {
  const int64_t in = g.in[axis], out = g.out[axis];
  if (g.align_corners) return out > 1 ? static_cast<acc_t>(in - 1) / static_cast<acc_t>(out - 1) : acc_t(0);
  if (g.scale[axis] > 0.) return static_cast<acc_t>(1.0 / g.scale[axis]);
  return static_cast<acc_t>(in) / static_cast<acc_t>(out);
}

// The two taps of output position x: (i0, l0) and (i1, l1). An axis whose
// ratio is exactly 1 (output size == input size, and no scale other than 1)
// maps x to itself: both taps on x, weights 1 and 0 (aten's identity; the
// formula's weights, and an inf or NaN beside x does not spread to it).
template <typename acc_t>
struct Taps {
  int64_t i0, i1;
  acc_t l0, l1;
};

template <typename acc_t>
C10_HOST_DEVICE inline Taps<acc_t> taps(acc_t r, bool align_corners, int64_t x, int64_t in) {
  if (r == acc_t(1)) {
    Taps<acc_t> t;
    t.i0 = t.i1 = x;
    t.l0 = acc_t(1);
    t.l1 = acc_t(0);
    return t;
  }
  acc_t src;
  if (align_corners) {
    src = mul(r, static_cast<acc_t>(x));
  } else {
    src = add(mul(r, add(static_cast<acc_t>(x), acc_t(0.5))), acc_t(-0.5));
    if (!(src > acc_t(0))) src = acc_t(0);
  }
  int64_t i0;
  if constexpr (std::is_same_v<acc_t, double>) i0 = static_cast<int64_t>(::floor(src));
  else i0 = static_cast<int64_t>(floorf(src));
  if (i0 > in - 1) i0 = in - 1;
  acc_t l1 = add(src, -static_cast<acc_t>(i0));
  if (l1 < acc_t(0)) l1 = acc_t(0);
  if (l1 > acc_t(1)) l1 = acc_t(1);
  Taps<acc_t> t;
  t.i0 = i0;
  t.i1 = i0 < in - 1 ? i0 + 1 : i0;
  t.l1 = l1;
  t.l0 = add(acc_t(1), -l1);
  return t;
}

// The output positions whose taps land on input index k form one range
// [lo, hi) (i0 and i1 never decrease with x): lo the first x with i1(x) >= k,
// hi the first x with i0(x) > k. The backward visits them in increasing x,
// tap 0 before tap 1.
template <typename acc_t>
C10_HOST_DEVICE inline void window(acc_t r, bool align_corners, int64_t k, int64_t in, int64_t out, int64_t& lo,
                                   int64_t& hi) {
  int64_t a = 0, b = out;  // first x in [0, out) with i1(x) >= k
  while (a < b) {
    const int64_t m = a + (b - a) / 2;
    if (taps<acc_t>(r, align_corners, m, in).i1 >= k) b = m;
    else a = m + 1;
  }
  lo = a;
  b = out;  // first x in [lo, out) with i0(x) > k
  while (a < b) {
    const int64_t m = a + (b - a) / 2;
    if (taps<acc_t>(r, align_corners, m, in).i0 > k) b = m;
    else a = m + 1;
  }
  hi = a;
}

}  // namespace torch_aclnn::upsample_trilinear
