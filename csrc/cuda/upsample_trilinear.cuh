// The per-element code of the upsample-trilinear CUDA kernels and the host
// side set-up of their launches (csrc/cuda/upsample_trilinear.cu launches
// them). The element functions are C10_HOST_DEVICE and use no CUDA built-ins
// but the rounded multiply and add of the contract (contracts/
// upsample_trilinear.h: mul, add), so the host runs the very same code:
// tests/test_cuda_host_*.py do, element by element, and compares
// with the CPU kernels bitwise (no GPU needed).
#pragma once

#include "contracts/upsample_trilinear.h"
#include "cuda/index.cuh"
#include "cuda/upsample.cuh"

#include <ATen/OpMathType.h>
#include <c10/macros/Macros.h>

#include <cstdint>

namespace torch_aclnn::upsample_trilinear::kernels {

using torch_aclnn::cuda::Unravel5;
using torch_aclnn::upsample::kernels::Strides5;
using torch_aclnn::upsample::kernels::strides_of;
using torch_aclnn::upsample::kernels::walk_of;

// Position p of a tensor walked in memory order (walk_of): n, c, d, h, w.
template <bool channels_last, typename index_t>
C10_HOST_DEVICE inline void coords(index_t p, const Unravel5<index_t>& walk, index_t (&x)[5]) {
  index_t idx[5];
  walk(p, idx);
  if constexpr (channels_last) {
    x[0] = idx[0], x[1] = idx[4], x[2] = idx[1], x[3] = idx[2], x[4] = idx[3];
  } else {
    for (int i = 0; i < 5; ++i) x[i] = idx[i];
  }
}

// ---------------------------------------------------------------------------
// Forward: one output element (the CPU kernel's terms, grouped the same way).

template <bool channels_last, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void forward_element(index_t p, const scalar_t* __restrict__ in, scalar_t* __restrict__ out,
                                            const Unravel5<index_t>& walk, const Strides5<index_t>& st,
                                            const Geometry& g) {
  using acc_t = at::opmath_type<scalar_t>;
  index_t x[5];
  coords<channels_last>(p, walk, x);
  const auto td = taps<acc_t>(ratio<acc_t>(g, 0), g.align_corners, x[2], g.in[0]);
  const auto th = taps<acc_t>(ratio<acc_t>(g, 1), g.align_corners, x[3], g.in[1]);
  const auto tw = taps<acc_t>(ratio<acc_t>(g, 2), g.align_corners, x[4], g.in[2]);
  const scalar_t* base = in + x[0] * st.s[0] + x[1] * st.s[1];
  const auto v = [&](int64_t d, int64_t h, int64_t w) {
    return static_cast<acc_t>(base[d * st.s[2] + h * st.s[3] + w * st.s[4]]);
  };
  const auto T = [&](int64_t w) {
    const acc_t t0 = add(mul(th.l0, v(td.i0, th.i0, w)), mul(th.l1, v(td.i0, th.i1, w)));
    const acc_t t1 = add(mul(th.l0, v(td.i1, th.i0, w)), mul(th.l1, v(td.i1, th.i1, w)));
    return add(mul(td.l0, t0), mul(td.l1, t1));
  };
  out[p] = static_cast<scalar_t>(add(mul(tw.l0, T(tw.i0)), mul(tw.l1, T(tw.i1))));
}

// ---------------------------------------------------------------------------
// Backward: the window table, then one grad_input element.

// The windows [lo, hi) of every input index of the three axes, in one table:
// D's at [0, 2 iD), H's after, W's last (lo, hi pairs). Entry e of the table
// (0 <= e < iD + iH + iW), computed by one thread.
template <typename acc_t>
C10_HOST_DEVICE inline void window_entry(int64_t e, int64_t* table, const Geometry& g) {
  int axis = 0;
  int64_t k = e;
  while (k >= g.in[axis]) k -= g.in[axis++];
  int64_t lo, hi;
  window<acc_t>(ratio<acc_t>(g, axis), g.align_corners, k, g.in[axis], g.out[axis], lo, hi);
  table[2 * e] = lo;
  table[2 * e + 1] = hi;
}

C10_HOST_DEVICE inline int64_t window_entries(const Geometry& g) { return g.in[0] + g.in[1] + g.in[2]; }

// sum over the taps (x, tap) of one axis that land on k, in increasing x and
// tap 0 before tap 1: f(x, weight).
template <typename acc_t, typename F>
C10_HOST_DEVICE C10_ALWAYS_INLINE void each_tap(acc_t r, bool align_corners, int64_t k, int64_t in, int64_t lo,
                                                int64_t hi, F&& f) {
  for (int64_t x = lo; x < hi; ++x) {
    const auto t = taps<acc_t>(r, align_corners, x, in);
    if (t.i0 == k) f(x, t.l0);
    if (t.i1 == k) f(x, t.l1);
  }
}

template <bool channels_last, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void backward_element(index_t p, const scalar_t* __restrict__ go, scalar_t* __restrict__ gi,
                                             const Unravel5<index_t>& walk, const Strides5<index_t>& st,
                                             const int64_t* __restrict__ table, const Geometry& g) {
  using acc_t = at::opmath_type<scalar_t>;
  index_t x[5];
  coords<channels_last>(p, walk, x);
  const int64_t i = x[2], j = x[3], k = x[4];
  const int64_t* wd = table + 2 * i;
  const int64_t* wh = table + 2 * (g.in[0] + j);
  const int64_t* ww = table + 2 * (g.in[0] + g.in[1] + k);
  const acc_t rd = ratio<acc_t>(g, 0), rh = ratio<acc_t>(g, 1), rw = ratio<acc_t>(g, 2);
  const scalar_t* base = go + x[0] * st.s[0] + x[1] * st.s[1];
  acc_t acc_w = acc_t(0);
  each_tap(rw, g.align_corners, k, g.in[2], ww[0], ww[1], [&](int64_t w, acc_t lw) {
    acc_t acc_d = acc_t(0);
    each_tap(rd, g.align_corners, i, g.in[0], wd[0], wd[1], [&](int64_t d, acc_t ld) {
      acc_t acc_h = acc_t(0);
      each_tap(rh, g.align_corners, j, g.in[1], wh[0], wh[1], [&](int64_t h, acc_t lh) {
        acc_h = add(acc_h, mul(lh, static_cast<acc_t>(base[d * st.s[2] + h * st.s[3] + w * st.s[4]])));
      });
      acc_d = add(acc_d, mul(ld, acc_h));
    });
    acc_w = add(acc_w, mul(lw, acc_d));
  });
  gi[p] = static_cast<scalar_t>(acc_w);
}

}  // namespace torch_aclnn::upsample_trilinear::kernels
