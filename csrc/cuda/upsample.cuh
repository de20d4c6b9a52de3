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
#include <array>
#include <cstdint>
#include <type_traits>

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

// An axis as a uniform fold: L when every input index k owns exactly the
// outputs [L*k, L*k + L) (out == L*in: integer upsampling by L along that
// axis), 0 otherwise. Checked against the forward's own mapping, dst by dst, so user
// scales that move a window are never taken for a fold.
template <Mode mode>
inline int64_t uniform_fold(const Axes& a, int axis) {
  const int64_t in = a.in[axis], out = a.out[axis];
  // Very long rows are left to the general path (the check is O(out) on the host).
  if (in <= 0 || out % in != 0 || out > (int64_t(1) << 16)) return 0;
  const int64_t L = out / in;
  for (int64_t dst = 0; dst < out; ++dst) {
    if (source_index<mode>(a.s[axis], dst, in) != dst / L) return 0;
  }
  return L;
}

// uniform_fold of each axis (D, H, W): computed once per launch, on the host.
template <Mode mode>
inline std::array<int64_t, 3> uniform_folds(const Axes& a) {
  return {uniform_fold<mode>(a, 0), uniform_fold<mode>(a, 1), uniform_fold<mode>(a, 2)};
}

// Elements per 16-byte pack.
template <typename scalar_t>
constexpr int64_t kPack = 16 / static_cast<int64_t>(sizeof(scalar_t));

// The packed backward (see backward_pack below) applies to an NCDHW grad_input
// whose W windows are a uniform fold by L in {1, 2, 4} (w_fold: W's
// uniform_fold) when every pack of
// grad_input and every run of L packs of grad_output it reads is a whole,
// 16-byte aligned pack: grad_input's rows and grad_output's W axis dense,
// iW a multiple of the pack, grad_output's other strides (of axes longer
// than 1) multiples of it, both data pointers 16-byte aligned. Returns L, or
// 0 for the general one-element-per-thread kernel.
template <typename scalar_t>
inline int64_t packed_fold(int64_t w_fold, const at::Tensor& grad_output, const at::Tensor& grad_input,
                           bool channels_last) {
  constexpr int64_t V = kPack<scalar_t>;
  if (channels_last) return 0;
  if (!grad_input.is_contiguous() || grad_input.size(4) % V != 0) return 0;
  if (grad_output.size(4) > 1 && grad_output.stride(4) != 1) return 0;
  for (int d = 0; d < 4; ++d) {
    if (grad_output.size(d) > 1 && grad_output.stride(d) % V != 0) return 0;
  }
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  if (!aligned(grad_output.const_data_ptr()) || !aligned(grad_input.const_data_ptr())) return 0;
  return w_fold == 1 || w_fold == 2 || w_fold == 4 ? w_fold : 0;
}

// Calls f(std::integral_constant<int, L>{}) for L in {1, 2, 4}.
template <typename F>
inline void with_fold(int64_t L, F&& f) {
  switch (L) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    default: TORCH_INTERNAL_ASSERT(false, "no packed kernel for a fold by ", L);
  }
}

// The packed backward's walk: N, C, iD, iH, iW / pack.
template <typename scalar_t, typename index_t>
Unravel5<index_t> pack_walk_of(const at::Tensor& grad_input) {
  const int64_t sizes[5] = {grad_input.size(0), grad_input.size(1), grad_input.size(2), grad_input.size(3),
                            grad_input.size(4) / kPack<scalar_t>};
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

// Where the backward kernels take each axis's windows from: fold > 0, a
// uniform fold by that L (integer upsampling: input index i owns the outputs
// [L*i, L*i + L), checked on the host by uniform_fold), else the window
// table (which the launch then builds). With every axis a fold, no table is
// built at all: one launch, no allocation.
template <typename index_t>
struct Windows {
  const int64_t* table;    // null when every axis the kernel reads is a fold
  index_t in[3], fold[3];  // per axis (D, H, W): input length, fold or 0

  // The window [lo, hi) of input index i of `axis`. The table's parts are
  // [lo_D | hi_D | lo_H | hi_H | lo_W | hi_W], each as long as its axis.
  C10_HOST_DEVICE inline void of(int axis, index_t i, index_t& lo, index_t& hi) const {
    if (fold[axis] > 0) {
      lo = i * fold[axis];
      hi = lo + fold[axis];
      return;
    }
    const int64_t* part = table;
    for (int a = 0; a < axis; ++a) part += 2 * static_cast<int64_t>(in[a]);
#if defined(__CUDA_ARCH__)
    lo = static_cast<index_t>(__ldg(part + i));  // (read-only: the non-coherent cache path)
    hi = static_cast<index_t>(__ldg(part + i + in[axis]));
#else
    lo = static_cast<index_t>(part[i]);
    hi = static_cast<index_t>(part[i + in[axis]]);
#endif
  }
};

// The windows of a backward launch from its folds (uniform_folds), with no
// table yet. The packed kernel reads D and H from them (its W fold is its L),
// the one-element kernel all three; `needs_table` says whether one is missing.
template <typename index_t>
Windows<index_t> folds_of(const Axes& a, const std::array<int64_t, 3>& folds) {
  Windows<index_t> w{};
  for (int axis = 0; axis < 3; ++axis) {
    w.in[axis] = static_cast<index_t>(a.in[axis]);
    w.fold[axis] = static_cast<index_t>(folds[axis]);
  }
  return w;
}

template <typename index_t>
inline bool needs_table(const Windows<index_t>& w, bool packed) {
  return w.fold[0] == 0 || w.fold[1] == 0 || (!packed && w.fold[2] == 0);
}

// Backward: grad_input[p] = the sum of grad_output over the element's window,
// in (d, h, w) order, from +0.0, in opmath, rounded once.
template <bool channels_last, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void backward_element(index_t p, const scalar_t* __restrict__ go, scalar_t* __restrict__ gi,
                                             const Unravel5<index_t>& unravel, const Strides5<index_t>& st,
                                             const Windows<index_t>& win) {
  using acc_t = at::opmath_type<scalar_t>;
  index_t n, c, i, j, k;
  logical<channels_last>(unravel, p, n, c, i, j, k);
  index_t d0, d1, h0, h1, w0, w1;
  win.of(0, i, d0, d1);
  win.of(1, j, h0, h1);
  win.of(2, k, w0, w1);
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

template <typename scalar_t>
struct alignas(16) Pack {
  scalar_t v[kPack<scalar_t>];
};

// Backward, packed (W a uniform fold by L, NCDHW, see packed_fold): pack q
// of grad_input, V = kPack adjacent elements of a row, is the sum over the
// D and H windows of the L*V grad_output elements of the row below it, read
// as L 16-byte packs and written as one. Each element adds its window in
// (d, h, w) order from +0.0 in opmath and rounds once: the same additions in
// the same order as backward_element, so the results are bitwise equal.
//
// The D and H windows come from `win` (a fold or the table); W is the fold L.
template <int L, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void backward_pack(index_t q, const scalar_t* __restrict__ go, scalar_t* __restrict__ gi,
                                          const Unravel5<index_t>& unravel, const Strides5<index_t>& st,
                                          const Windows<index_t>& win) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr int V = static_cast<int>(kPack<scalar_t>);
  index_t n, c, i, j, kv;
  logical<false>(unravel, q, n, c, i, j, kv);
  index_t d0, d1, h0, h1;
  win.of(0, i, d0, d1);
  win.of(1, j, h0, h1);
  const scalar_t* base = go + n * st.s[0] + c * st.s[1] + kv * static_cast<index_t>(L * V);
  acc_t acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = acc_t(0);
  for (index_t d = d0; d < d1; ++d) {
    for (index_t h = h0; h < h1; ++h) {
      const auto* row = reinterpret_cast<const Pack<scalar_t>*>(base + d * st.s[2] + h * st.s[3]);
      Pack<scalar_t> in[L];
#pragma unroll
      for (int f = 0; f < L; ++f) in[f] = row[f];
#pragma unroll
      for (int v = 0; v < V; ++v) {
#pragma unroll
        for (int t = 0; t < L; ++t) acc[v] += static_cast<acc_t>(in[(v * L + t) / V].v[(v * L + t) % V]);
      }
    }
  }
  Pack<scalar_t> out;
#pragma unroll
  for (int v = 0; v < V; ++v) out.v[v] = static_cast<scalar_t>(acc[v]);
  reinterpret_cast<Pack<scalar_t>*>(gi)[q] = out;
}

}  // namespace torch_aclnn::upsample::kernels
