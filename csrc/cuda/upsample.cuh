// The per-element code of the upsample-nearest CUDA kernels and the host-side
// set-up of their launches (csrc/cuda/upsample.cu launches them). The
// element functions are C10_HOST_DEVICE and use no CUDA built-ins, so the
// host can run the very same code: tests/test_cuda_host_emulation.py does,
// element by element, and compares with the CPU kernels (no GPU needed).
#pragma once

#include "contracts/upsample.h"
#include "cuda/index.cuh"

#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>

#include <algorithm>
#include <cstdint>

namespace torch_aclnn::upsample::kernels {

using torch_aclnn::cuda::Unravel5;

// Per spatial axis (D, H, W): input length, output length, float32 scale.
// Strides (in elements) of the tensor a kernel reads, N, C, D, H, W.
template <typename index_t>
struct Strides5 {
  index_t s[5];
};

// ---------------------------------------------------------------------------
// Host-side set-up of a launch.

template <typename index_t>
Strides5<index_t> strides_of(const at::Tensor& t) {
  Strides5<index_t> r;
  for (int d = 0; d < 5; ++d) r.s[d] = static_cast<index_t>(t.stride(d));
  return r;
}

// The result's sizes in walk (memory) order: N, C, D, H, W or N, D, H, W, C.
template <typename index_t>
Unravel5<index_t> walk_of(const at::Tensor& t, bool channels_last) {
  int64_t sizes[5];
  if (channels_last) {
    const int64_t v[5] = {t.size(0), t.size(2), t.size(3), t.size(4), t.size(1)};
    std::copy(v, v + 5, sizes);
  } else {
    for (int d = 0; d < 5; ++d) sizes[d] = t.size(d);
  }
  return Unravel5<index_t>(sizes);
}

// ---------------------------------------------------------------------------
// Device code.

// A flat index of the result in walk order -> n, c, d, h, w. The result is
// dense in its memory format and walked in memory order: N, C, D, H, W
// (contiguous) or N, D, H, W, C (channels_last_3d).
template <bool channels_last, typename index_t>
C10_HOST_DEVICE inline void logical(const Unravel5<index_t>& unravel, index_t p, index_t& n, index_t& c,
                                    index_t& d, index_t& h, index_t& w) {
  index_t idx[5];
  unravel(p, idx);
  n = idx[0];
  if constexpr (channels_last) {
    d = idx[1], h = idx[2], w = idx[3], c = idx[4];
  } else {
    c = idx[1], d = idx[2], h = idx[3], w = idx[4];
  }
}

// Forward: out[p] = self[n, c, src_d(d), src_h(h), src_w(w)].
template <Mode mode, bool channels_last, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void forward_element(index_t p, const scalar_t* __restrict__ in, scalar_t* __restrict__ out,
                                            const Unravel5<index_t>& unravel, const Strides5<index_t>& st,
                                            const Axes& a) {
  index_t n, c, d, h, w;
  logical<channels_last>(unravel, p, n, c, d, h, w);
  const auto sd = static_cast<index_t>(source_index<mode>(a.s[0], static_cast<int64_t>(d), a.in[0]));
  const auto sh = static_cast<index_t>(source_index<mode>(a.s[1], static_cast<int64_t>(h), a.in[1]));
  const auto sw = static_cast<index_t>(source_index<mode>(a.s[2], static_cast<int64_t>(w), a.in[2]));
  out[p] = in[n * st.s[0] + c * st.s[1] + sd * st.s[2] + sh * st.s[3] + sw * st.s[4]];
}

// Smallest dst in [0, out] with src(dst) >= v (out when there is none).
template <Mode mode>
C10_HOST_DEVICE inline int64_t first_at_least(float s, int64_t in, int64_t out, int64_t v) {
  int64_t lo = 0, hi = out;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (source_index<mode>(s, mid, in) >= v) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Window tables: for every input index i of an axis, the output range
// [lo[i], hi[i]) of the dst with src(dst) == i. src is non-decreasing
// (float32 multiplication by a positive scale, the rounding to float32,
// floor and min(., in - 1) all are), so that set is exactly
// [first_at_least(i), first_at_least(i + 1)) -- empty when no output maps
// to i -- the exact preimage of the forward's mapping.
//
// Layout: [lo_D | hi_D | lo_H | hi_H | lo_W | hi_W], each part as long as its
// input axis; 2 * (iD + iH + iW) entries, entry t < iD + iH + iW computes the
// pair of input index t (counted over D, then H, then W).
C10_HOST_DEVICE inline int64_t window_entries(const Axes& a) { return a.in[0] + a.in[1] + a.in[2]; }

template <Mode mode>
C10_HOST_DEVICE inline void window_entry(int64_t t, int64_t* __restrict__ win, const Axes& a) {
  int axis = 0;
  int64_t base = 0;
  while (axis < 2 && t >= a.in[axis]) {
    t -= a.in[axis];
    base += 2 * a.in[axis];
    ++axis;
  }
  win[base + t] = first_at_least<mode>(a.s[axis], a.in[axis], a.out[axis], t);
  win[base + a.in[axis] + t] = first_at_least<mode>(a.s[axis], a.in[axis], a.out[axis], t + 1);
}

// Backward: grad_input[p] = the sum of grad_output over the element's window,
// in (d, h, w) order, from +0.0, in opmath, rounded once.
template <bool channels_last, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void backward_element(index_t p, const scalar_t* __restrict__ go, scalar_t* __restrict__ gi,
                                             const Unravel5<index_t>& unravel, const Strides5<index_t>& st,
                                             const int64_t* __restrict__ win, index_t iD, index_t iH, index_t iW) {
  using acc_t = at::opmath_type<scalar_t>;
  index_t n, c, i, j, k;
  logical<channels_last>(unravel, p, n, c, i, j, k);
  const int64_t* lo_h = win + 2 * iD;
  const int64_t* lo_w = lo_h + 2 * iH;
  // hi of an axis follows its lo part, as long as the axis: lo[i + in].
  const auto d0 = static_cast<index_t>(win[i]), d1 = static_cast<index_t>(win[i + iD]);
  const auto h0 = static_cast<index_t>(lo_h[j]), h1 = static_cast<index_t>(lo_h[j + iH]);
  const auto w0 = static_cast<index_t>(lo_w[k]), w1 = static_cast<index_t>(lo_w[k + iW]);
  const scalar_t* base = go + n * st.s[0] + c * st.s[1];
  acc_t acc = acc_t(0);
  for (index_t d = d0; d < d1; ++d) {
    for (index_t h = h0; h < h1; ++h) {
      const scalar_t* row = base + d * st.s[2] + h * st.s[3];
      for (index_t w = w0; w < w1; ++w) acc += static_cast<acc_t>(row[w * st.s[4]]);
    }
  }
  gi[p] = static_cast<scalar_t>(acc);
}

}  // namespace torch_aclnn::upsample::kernels
