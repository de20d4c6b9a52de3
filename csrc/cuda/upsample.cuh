// The per-element code of the upsample-nearest CUDA kernels and the host-side
// set-up of their launches (csrc/cuda/upsample.cu launches them). The
// element functions are C10_HOST_DEVICE and use no CUDA built-ins, so the
// host can run the very same code: tests/test_cuda_host_*.py do,
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
#include <limits>
#include <type_traits>

namespace torch_aclnn::upsample::kernels {

using torch_aclnn::cuda::aligned;
using torch_aclnn::cuda::as_pack;
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

// The longest axis whose output the host scans (uniform_fold,
// widest_w_window): the scan is O(out) per launch.
constexpr int64_t kScanMax = int64_t(1) << 16;

// An axis as a uniform fold: L when every input index k owns exactly the
// outputs [L*k, L*k + L) (out == L*in: integer upsampling by L along that
// axis), 0 otherwise. Checked against the forward's own mapping, dst by dst, so user
// scales that move a window are never taken for a fold.
template <Mode mode>
inline int64_t uniform_fold(const Axes& a, int axis) {
  const int64_t in = a.in[axis], out = a.out[axis];
  // Very long rows are left to the general path (the check is O(out) on the host).
  if (in <= 0 || out % in != 0 || out > kScanMax) return 0;
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

// The widest W window: the most outputs any input index of W owns (1 for a
// downsampling, L for a fold by L). Only whether it is at most 2 matters
// (taps_of), so a row of more than kScanMax outputs, not scanned, counts as
// wider.
template <Mode mode>
inline int64_t widest_w_window(const Axes& a, int64_t w_fold) {
  if (w_fold > 0) return w_fold;
  const int64_t in = a.in[2], out = a.out[2];
  if (out > kScanMax) return std::numeric_limits<int64_t>::max();
  int64_t widest = 0, run = 0, last = -1;
  for (int64_t dst = 0; dst < out; ++dst) {
    const int64_t src = source_index<mode>(a.s[2], dst, in);
    run = src == last ? run + 1 : 1;
    last = src;
    widest = std::max(widest, run);
  }
  return widest;
}

// Elements per 16-byte pack.
template <typename scalar_t>
constexpr int64_t kPack = 16 / static_cast<int64_t>(sizeof(scalar_t));

// Which backward kernel a launch takes (backward_path), one per kind of
// thread:
//   kElement   one grad_input element (backward_element): any layout, any
//              strides;
//   kFold      a 16-byte pack of an NCDHW row whose W windows are a uniform
//              fold by L in {1, 2, 4}, read as L 16-byte packs of grad_output
//              per row (backward_pack);
//   kRow       a 16-byte pack of an NCDHW row, any W windows, grad_output
//              read element by element through its strides (backward_row_pack);
//   kChannels  a 16-byte pack of channels of a channels_last_3d grad_input,
//              each tap of the shared window one 16-byte load of grad_output's
//              channels (backward_channel_pack).
// A thread of the packed kernels writes its pack with one 16-byte store and
// keeps V elements' loads independent of each other, so more bytes are in
// flight per thread than with one element (the one-element kernel's window
// loop has one load in flight at a time). `taps` is L for kFold; for kRow and
// kChannels the W taps a window loop is unrolled to (2: every W window has at
// most 2 elements, loads predicated on the window's end) or 0 (a plain loop).
// Every kernel adds an element's window in (d, h, w) order from +0.0 in
// opmath and rounds once, so all four give the same bits.
enum class Kernel { kElement, kFold, kRow, kChannels };

struct Path {
  Kernel kernel = Kernel::kElement;
  int64_t taps = 0;
};

// The W taps a kRow or kChannels window loop is unrolled to.
inline int64_t taps_of(int64_t widest) { return widest <= 2 ? 2 : 0; }

// The path of a backward launch (csrc/cuda/upsample.cu; the host emulation
// asks the same function). grad_input is dense in its layout (channels_last:
// channels_last_3d, else contiguous), as the launch makes it. A packed path
// needs every pack of grad_input whole and 16-byte aligned (its row or its
// channels a multiple of V long, the pointer aligned), and kFold and
// kChannels every 16-byte load of grad_output too (the packed axis dense,
// its other strides of axes longer than 1 multiples of V, the pointer
// aligned).
template <Mode mode, typename scalar_t>
inline Path backward_path(const Axes& a, const std::array<int64_t, 3>& folds, const at::Tensor& grad_output,
                          const at::Tensor& grad_input, bool channels_last) {
  constexpr int64_t V = kPack<scalar_t>;
  // grad_output's loads as 16-byte packs along `packed` (1: C, 4: W).
  const auto go_packs = [&](int packed) {
    if (grad_output.stride(packed) != 1 || !aligned(grad_output.const_data_ptr(), 16)) return false;
    for (int d = 0; d < 5; ++d) {
      if (d != packed && grad_output.size(d) > 1 && grad_output.stride(d) % V != 0) return false;
    }
    return true;
  };
  const int64_t packed_axis_size = grad_input.size(channels_last ? 1 : 4);
  if (packed_axis_size % V != 0 || !aligned(grad_input.const_data_ptr(), 16)) return {};
  if (channels_last) {
    if (!go_packs(1)) return {};
    return {Kernel::kChannels, taps_of(widest_w_window<mode>(a, folds[2]))};
  }
  const int64_t L = folds[2];
  if ((L == 1 || L == 2 || L == 4) && go_packs(4)) return {Kernel::kFold, L};
  return {Kernel::kRow, taps_of(widest_w_window<mode>(a, L))};
}

// Calls f(kernel, taps, channels_last), each a std::integral_constant, for
// the path: one instantiation per kernel a launch can take.
template <typename F>
inline void with_path(const Path& path, bool channels_last, F&& f) {
  using K = Kernel;
  constexpr std::false_type ncdhw{};
  constexpr std::true_type cl{};
  using T0 = std::integral_constant<int, 0>;
  using T1 = std::integral_constant<int, 1>;
  using T2 = std::integral_constant<int, 2>;
  using T4 = std::integral_constant<int, 4>;
  switch (path.kernel) {
    case K::kElement:
      if (channels_last) return f(std::integral_constant<K, K::kElement>{}, T0{}, cl);
      return f(std::integral_constant<K, K::kElement>{}, T0{}, ncdhw);
    case K::kFold: {
      constexpr std::integral_constant<K, K::kFold> fold{};
      if (path.taps == 1) return f(fold, T1{}, ncdhw);
      if (path.taps == 2) return f(fold, T2{}, ncdhw);
      if (path.taps == 4) return f(fold, T4{}, ncdhw);
      break;
    }
    case K::kRow: {
      constexpr std::integral_constant<K, K::kRow> row{};
      if (path.taps == 0) return f(row, T0{}, ncdhw);
      if (path.taps == 2) return f(row, T2{}, ncdhw);
      break;
    }
    case K::kChannels: {
      constexpr std::integral_constant<K, K::kChannels> channels{};
      if (path.taps == 0) return f(channels, T0{}, cl);
      if (path.taps == 2) return f(channels, T2{}, cl);
      break;
    }
  }
  TORCH_INTERNAL_ASSERT(false, "no backward kernel for this path (", static_cast<int>(path.kernel), ", ",
                        path.taps, " taps)");
}

// A path's threads: grad_input's elements or its packs.
template <typename scalar_t>
inline int64_t units_of(const at::Tensor& grad_input, const Path& path) {
  return path.kernel == Kernel::kElement ? grad_input.numel() : grad_input.numel() / kPack<scalar_t>;
}

// A path's walk over its threads, in grad_input's memory order: N, C, D, H,
// W or N, D, H, W, C, the packed axis (W, or C for kChannels) counted in packs.
template <typename scalar_t, typename index_t>
Unravel5<index_t> unit_walk_of(const at::Tensor& gi, const Path& path, bool channels_last) {
  const int64_t V = path.kernel == Kernel::kElement ? 1 : kPack<scalar_t>;
  if (channels_last) {
    const int64_t sizes[5] = {gi.size(0), gi.size(2), gi.size(3), gi.size(4), gi.size(1) / V};
    return Unravel5<index_t>(sizes);
  }
  const int64_t sizes[5] = {gi.size(0), gi.size(1), gi.size(2), gi.size(3), gi.size(4) / V};
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
// table yet. Kernel::kFold reads D and H from them (its W fold is its L),
// the other kernels all three; `needs_table` says whether one is missing.
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
inline bool needs_table(const Windows<index_t>& w, const Path& path) {
  return w.fold[0] == 0 || w.fold[1] == 0 || (path.kernel != Kernel::kFold && w.fold[2] == 0);
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
using Pack = torch_aclnn::cuda::Pack<scalar_t, static_cast<int>(kPack<scalar_t>)>;

// A pack's place: n, c, d, h and w in its walk (unit_walk_of: the packed
// axis, W or C, counted in packs) and its D and H windows.
template <bool channels_last, typename index_t>
struct PackAt {
  index_t n, c, i, j, k, d0, d1, h0, h1;

  C10_HOST_DEVICE PackAt(index_t q, const Unravel5<index_t>& unravel, const Windows<index_t>& win) {
    logical<channels_last>(unravel, q, n, c, i, j, k);
    win.of(0, i, d0, d1);
    win.of(1, j, h0, h1);
  }
};

// What every packed kernel does with pack q of grad_input (p: its place):
// V = kPack sums from +0.0 in opmath, each rounded once, stored with one
// 16-byte store. add_row(row, add) adds to them the W taps of each row of
// the pack's D and H windows, in (d, h) order (row: base + d * sD + h * sH),
// add(v, x) adding element x to sum v.
template <bool channels_last, typename scalar_t, typename index_t, typename AddRow>
C10_HOST_DEVICE inline void pack_sums(const PackAt<channels_last, index_t>& p, index_t q, scalar_t* __restrict__ gi,
                                      const scalar_t* base, const Strides5<index_t>& st, const AddRow& add_row) {
  using acc_t = at::opmath_type<scalar_t>;
  constexpr int V = static_cast<int>(kPack<scalar_t>);
  const index_t d0 = p.d0, d1 = p.d1, h0 = p.h0, h1 = p.h1;
  acc_t acc[V];
#pragma unroll
  for (int v = 0; v < V; ++v) acc[v] = acc_t(0);
  const auto add = [&acc](int v, scalar_t x) { acc[v] += static_cast<acc_t>(x); };
  for (index_t d = d0; d < d1; ++d) {
    for (index_t h = h0; h < h1; ++h) add_row(base + d * st.s[2] + h * st.s[3], add);
  }
  Pack<scalar_t> out;
#pragma unroll
  for (int v = 0; v < V; ++v) out.v[v] = static_cast<scalar_t>(acc[v]);
  *as_pack<Pack<scalar_t>>(gi + q * static_cast<index_t>(V)) = out;
}

// Backward, packed (Kernel::kFold: W a uniform fold by L, NCDHW): pack q
// of grad_input, V = kPack adjacent elements of a row, is the sum over the
// D and H windows of the L*V grad_output elements of the row below it, read
// as L 16-byte packs and written as one. Each element adds its window in
// (d, h, w) order from +0.0 in opmath and rounds once: the same additions in
// the same order as backward_element, so the results are bitwise equal.
//
// The D and H windows come from `win` (a fold or the table); W is the fold L.
template <int L, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void backward_pack(const PackAt<false, index_t>& p, index_t q, const scalar_t* __restrict__ go,
                                          scalar_t* __restrict__ gi, const Strides5<index_t>& st) {
  constexpr int V = static_cast<int>(kPack<scalar_t>);
  const scalar_t* base = go + p.n * st.s[0] + p.c * st.s[1] + p.k * static_cast<index_t>(L * V);
  pack_sums(p, q, gi, base, st, [&](const scalar_t* row, const auto& add) {
    const auto* packs = as_pack<const Pack<scalar_t>>(row);
    Pack<scalar_t> in[L];
#pragma unroll
    for (int f = 0; f < L; ++f) in[f] = packs[f];
#pragma unroll
    for (int v = 0; v < V; ++v) {
#pragma unroll
      for (int t = 0; t < L; ++t) add(v, in[(v * L + t) / V].v[(v * L + t) % V]);
    }
  });
}

// A W window [w0, w1) of at most Taps taps (Taps > 0, backward_path), as
// Taps loads predicated on the window's end. A thread first loads every tap
// of a row (no load waits for an add), then adds them in order (`added`).
template <int Taps, typename X>
struct TapLoads {
  X in[Taps];
  bool has[Taps];

  template <typename index_t, typename Load>
  C10_HOST_DEVICE inline void load(index_t w0, index_t w1, const Load& at) {
#pragma unroll
    for (int t = 0; t < Taps; ++t) {
      has[t] = w0 + static_cast<index_t>(t) < w1;
      in[t] = has[t] ? at(w0 + static_cast<index_t>(t)) : X{};
    }
  }

  template <typename Add>
  C10_HOST_DEVICE inline void added(const Add& add) const {
#pragma unroll
    for (int t = 0; t < Taps; ++t) {
      if (has[t]) add(in[t]);
    }
  }
};

// Backward, a pack of an NCDHW row (Kernel::kRow): pack q of grad_input, V =
// kPack adjacent elements of a row, each the sum over its own window; the D
// and H windows are the pack's, the W windows each element's (a fold or the
// table). grad_output is read element by element through its strides; with
// Taps > 0, a row's V * Taps loads come before its first add.
// Each element adds its window in (d, h, w) order from +0.0 in opmath and
// rounds once, as backward_element does.
template <int Taps, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void backward_row_pack(const PackAt<false, index_t>& p, index_t q,
                                              const scalar_t* __restrict__ go, scalar_t* __restrict__ gi,
                                              const Strides5<index_t>& st, const Windows<index_t>& win) {
  constexpr int V = static_cast<int>(kPack<scalar_t>);
  index_t w0[V], w1[V];
#pragma unroll
  for (int v = 0; v < V; ++v) win.of(2, p.k * static_cast<index_t>(V) + static_cast<index_t>(v), w0[v], w1[v]);
  pack_sums(p, q, gi, go + p.n * st.s[0] + p.c * st.s[1], st, [&](const scalar_t* row, const auto& add) {
    const auto at = [&](index_t w) { return row[w * st.s[4]]; };
    if constexpr (Taps == 0) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        for (index_t w = w0[v]; w < w1[v]; ++w) add(v, at(w));
      }
    } else {
      TapLoads<Taps, scalar_t> taps[V];
#pragma unroll
      for (int v = 0; v < V; ++v) taps[v].load(w0[v], w1[v], at);
#pragma unroll
      for (int v = 0; v < V; ++v) taps[v].added([&](scalar_t x) { add(v, x); });
    }
  });
}

// Backward, a pack of channels (Kernel::kChannels, channels_last_3d): pack q
// of grad_input, V = kPack adjacent channels of one (n, d, h, w), sums one
// window for all of them; each tap is one 16-byte load of grad_output's V
// channels there (with Taps > 0, a row's taps are all loaded before the
// first add). Each channel adds its window in (d, h, w) order from +0.0 in opmath
// and rounds once, as backward_element does.
template <int Taps, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void backward_channel_pack(const PackAt<true, index_t>& p, index_t q,
                                                  const scalar_t* __restrict__ go, scalar_t* __restrict__ gi,
                                                  const Strides5<index_t>& st, const Windows<index_t>& win) {
  constexpr int V = static_cast<int>(kPack<scalar_t>);
  index_t w0, w1;
  win.of(2, p.k, w0, w1);
  const scalar_t* base = go + p.n * st.s[0] + p.c * static_cast<index_t>(V);  // (channels dense: s[1] == 1)
  pack_sums(p, q, gi, base, st, [&](const scalar_t* row, const auto& add) {
    const auto add_pack = [&](const Pack<scalar_t>& in) {
#pragma unroll
      for (int v = 0; v < V; ++v) add(v, in.v[v]);
    };
    const auto at = [&](index_t w) { return *as_pack<const Pack<scalar_t>>(row + w * st.s[4]); };
    if constexpr (Taps == 0) {
      for (index_t w = w0; w < w1; ++w) add_pack(at(w));
    } else {
      TapLoads<Taps, Pack<scalar_t>> taps;
      taps.load(w0, w1, at);
      taps.added(add_pack);
    }
  });
}

// One thread's work on the path's kernel (with_path): unit q, an element or
// a pack of grad_input in its memory order (unit_walk_of).
template <Kernel kernel, int Taps, bool channels_last, typename scalar_t, typename index_t>
C10_HOST_DEVICE inline void backward_unit(index_t q, const scalar_t* __restrict__ go, scalar_t* __restrict__ gi,
                                          const Unravel5<index_t>& unravel, const Strides5<index_t>& st,
                                          const Windows<index_t>& win) {
  if constexpr (kernel == Kernel::kElement) {
    backward_element<channels_last>(q, go, gi, unravel, st, win);
  } else {
    const PackAt<channels_last, index_t> p(q, unravel, win);
    if constexpr (kernel == Kernel::kFold) {
      backward_pack<Taps>(p, q, go, gi, st);
    } else if constexpr (kernel == Kernel::kRow) {
      backward_row_pack<Taps>(p, q, go, gi, st, win);
    } else {
      backward_channel_pack<Taps>(p, q, go, gi, st, win);
    }
  }
}

}  // namespace torch_aclnn::upsample::kernels
