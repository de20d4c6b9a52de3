// CPU kernels of the upsample-trilinear family (docs/spec.md §10).
//
// The taps and weights of every axis come from the contract's one rule
// (contracts/upsample_trilinear.h: taps), tabulated once per call:
// for the forward per output position, for the backward per input index as
// the list of (output position, weight) in increasing position, tap 0 before
// tap 1 (the order the CUDA kernel visits them in: window).
//
// Forward, NCDHW: one output row (n, c, d, h) at a time. The D and H taps
// are combined first along the input row, vectorised over W:
//   T[k] = ld0 * (lh0 * x[d0,h0,k] + lh1 * x[d0,h1,k]) + ld1 * (lh0 * x[d1,h0,k] + lh1 * x[d1,h1,k])
// then out[w] = lw0 * T[w0] + lw1 * T[w1]. channels_last_3d: the same terms
// per output pixel, vectorised over C. Both give the same bits.
//
// Backward: a gather, no atomics. One grad_input row (n, c, i, j) at a time
// (NCDHW): for every grad_output position w of the row, vectorised over w,
//   R[w] = sum_{(d, ld) -> i} ld * sum_{(h, lh) -> j} lh * g[d, h, w]
// and then grad_input[k] = sum_{(w, lw) -> k} lw * R[w], vectorised over k
// (WFold: a gather of R per tap; W halved, an interleave); channels_last_3d
// per grad_input pixel, vectorised over C, with the same sums nested the
// same way. Every sum starts from +0.0 and adds its terms in the fixed order
// above, in opmath (float32 for half/bfloat16), rounded once: the same bits
// for any thread count, either layout, and the CUDA kernel. The work is split
// over grad_input's rows (pixels), each written by one thread.
#include "common/entry.h"
#include "common/out.h"
#include "contracts/upsample_trilinear.h"
#include "cpu/cpu_utils.h"
#include "cpu/lanes.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace torch_aclnn::upsample_trilinear {
namespace {

using c10::MemoryFormat;
using cpu::advance;
using cpu::grain_for;
using cpu::unravel;

// The taps of one axis, per output position (forward) and per input index
// (backward: start[k] .. start[k + 1] into pos / weight).
template <typename acc_t>
struct Axis {
  std::vector<Taps<acc_t>> taps;
  std::vector<int64_t> start, pos;
  std::vector<acc_t> weight;
  int64_t longest = 0;  // the most entries of one input index
};

template <typename acc_t>
Axis<acc_t> make_axis(const Geometry& g, int axis, bool backward) {
  Axis<acc_t> a;
  const int64_t in = g.in[axis], out = g.out[axis];
  const acc_t r = ratio<acc_t>(g, axis);
  a.taps.resize(out);
  for (int64_t x = 0; x < out; ++x) {
    a.taps[x] = taps<acc_t>(r, g.align_corners, x, in);
    TORCH_INTERNAL_ASSERT(a.taps[x].i0 >= 0 && a.taps[x].i1 < in);
  }
  if (!backward) return a;
  a.start.assign(in + 1, 0);
  for (const auto& t : a.taps) {
    ++a.start[t.i0 + 1];
    ++a.start[t.i1 + 1];
  }
  for (int64_t k = 0; k < in; ++k) {
    a.longest = std::max(a.longest, a.start[k + 1]);
    a.start[k + 1] += a.start[k];
  }
  a.pos.resize(2 * out);
  a.weight.resize(2 * out);
  std::vector<int64_t> fill(a.start.begin(), a.start.end() - 1);
  for (int64_t x = 0; x < out; ++x) {  // increasing x, tap 0 before tap 1
    const auto& t = a.taps[x];
    a.pos[fill[t.i0]] = x;
    a.weight[fill[t.i0]++] = t.l0;
    a.pos[fill[t.i1]] = x;
    a.weight[fill[t.i1]++] = t.l1;
  }
  return a;
}

// The W fold of the NCDHW backward, grad_input[k] = sum_{(w, lw) -> k} lw * R[w],
// as `slots` (the most taps of one k) vector passes over grad_input's row,
// padded to whole blocks of 2K: pass s adds, in every lane k that has an
// s-th tap, weight * R[pos] (a gather from R) to the lane's sum, the other
// lanes kept as they are (a blend). So each k sums its taps in the generic
// order from +0.0, the same operations on the same values, with no scalar
// loop and no per-element table walk.
// W halved (iW == 2 oW, every k one tap, on k / 2; down-scaling by 2 without
// align_corners): k = 2m and 2m + 1 are +0.0 + weight * R[m], formed for K
// consecutive m at once from one load of R and interleaved, no gather.
// A grad_output row too long for the gather's lane indices (2^31 float32
// elements) keeps the scalar fold (`scalar`).
template <typename acc_t>
struct WFold {
  using index_t = at::vec::int_same_size_t<acc_t>;
  bool scalar = false;
  int64_t slots = 0, width = 0;   // width: iW rounded up to 2K lanes
  std::vector<index_t> pos;       // [slots][width]; 0 where k has no such tap
  std::vector<acc_t> weight, has;  // has: all bits set where k has the tap
  bool halved = false;
  std::vector<acc_t> even, odd;    // halved: the weights of k = 2m and 2m + 1
};

template <typename acc_t>
WFold<acc_t> make_w_fold(const Axis<acc_t>& a, int64_t in, int64_t out) {
  constexpr int64_t K2 = 2 * at::vec::Vectorized<acc_t>::size();
  WFold<acc_t> f;
  f.scalar = out > std::numeric_limits<typename WFold<acc_t>::index_t>::max();
  if (f.scalar) return f;
  f.slots = a.longest;
  f.width = (in + K2 - 1) / K2 * K2;
  f.pos.assign(f.slots * f.width, 0);
  f.weight.assign(f.slots * f.width, acc_t(0));
  f.has.assign(f.slots * f.width, acc_t(0));
  acc_t all_ones;
  std::memset(&all_ones, 0xFF, sizeof(acc_t));
  for (int64_t k = 0; k < in; ++k) {
    for (int64_t m = a.start[k], s = 0; m < a.start[k + 1]; ++m, ++s) {
      f.pos[s * f.width + k] = static_cast<typename WFold<acc_t>::index_t>(a.pos[m]);
      f.weight[s * f.width + k] = a.weight[m];
      f.has[s * f.width + k] = all_ones;
    }
  }
  f.halved = in == 2 * out && a.longest == 1;
  for (int64_t k = 0; k < in && f.halved; ++k) {
    f.halved = a.start[k + 1] - a.start[k] == 1 && a.pos[a.start[k]] == k / 2;
  }
  if (f.halved) {
    f.even.resize(out);
    f.odd.resize(out);
    for (int64_t m = 0; m < out; ++m) {
      f.even[m] = a.weight[a.start[2 * m]];
      f.odd[m] = a.weight[a.start[2 * m + 1]];
    }
  }
  return f;
}

// K lanes k .. k + K - 1 of the W fold of R.
template <typename acc_t>
C10_ALWAYS_INLINE at::vec::Vectorized<acc_t> w_fold(const WFold<acc_t>& f, const acc_t* R, int64_t k) {
  using aVec = at::vec::Vectorized<acc_t>;
  using iVec = at::vec::Vectorized<typename WFold<acc_t>::index_t>;
  aVec acc(acc_t(0));
  for (int64_t s = 0, off = k; s < f.slots; ++s, off += f.width) {
    const aVec x = at::vec::gather<sizeof(acc_t)>(R, iVec::loadu(f.pos.data() + off));
    acc = aVec::blendv(acc, acc + aVec::loadu(f.weight.data() + off) * x, aVec::loadu(f.has.data() + off));
  }
  return acc;
}

// K opmath lanes of scalar_t (half/bfloat16 widened) and back, rounded once.
template <typename scalar_t>
C10_ALWAYS_INLINE auto load_k(const scalar_t* p) {
  return cpu::widen(p);
}
template <typename scalar_t, typename aVec>
C10_ALWAYS_INLINE void store_k(scalar_t* p, const aVec& v) {
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    at::vec::convert_from_float<scalar_t>(v, v).store(p, aVec::size());
  } else {
    v.store(p);
  }
}

// n <= 2K sums (two opmath vectors) stored as scalar_t, each rounded to the
// bits of static_cast<scalar_t>(sum): the vector rounding of half/bfloat16
// is that rounding but for the encoding of a NaN, so a block holding a NaN
// stores its NaN lanes again one by one.
template <typename scalar_t, typename aVec>
C10_ALWAYS_INLINE void store_sums(scalar_t* dst, const aVec& lo, const aVec& hi, int64_t n) {
  constexpr int64_t K = aVec::size();
  if (n == 2 * K) cpu::store_pair(dst, lo, hi);
  else cpu::store_pair(dst, lo, hi, n);
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    if (((lo != lo) | (hi != hi)).zero_mask() != (1 << K) - 1) {
      alignas(64) float sums[2 * K];
      lo.store(sums);
      hi.store(sums + K);
      for (int64_t i = 0; i < n; ++i) {
        if (sums[i] != sums[i]) dst[i] = static_cast<scalar_t>(sums[i]);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Forward

template <typename scalar_t>
void forward_kernel(const at::Tensor& x, at::Tensor& out, const Geometry& g, MemoryFormat fmt) {
  using acc_t = at::opmath_type<scalar_t>;
  using aVec = at::vec::Vectorized<acc_t>;
  constexpr int64_t K = aVec::size();
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t iD = g.in[0], iH = g.in[1], iW = g.in[2];
  const int64_t oD = g.out[0], oH = g.out[1], oW = g.out[2];
  const Axis<acc_t> ad = make_axis<acc_t>(g, 0, false), ah = make_axis<acc_t>(g, 1, false),
                    aw = make_axis<acc_t>(g, 2, false);
  const scalar_t* in = x.const_data_ptr<scalar_t>();
  scalar_t* o = out.mutable_data_ptr<scalar_t>();

  if (fmt == MemoryFormat::Contiguous) {
    const int64_t sizes[3] = {N * C, oD, oH};
    at::parallel_for(0, N * C * oD * oH, grain_for(oW + 4 * iW), [&](int64_t b, int64_t e) {
      std::vector<acc_t> T(iW);
      int64_t idx[3];
      unravel<3>(b, sizes, idx);
      for (int64_t r = b; r < e; ++r, advance<3>(sizes, idx)) {
        const auto& td = ad.taps[idx[1]];
        const auto& th = ah.taps[idx[2]];
        const scalar_t* plane = in + idx[0] * iD * iH * iW;
        const scalar_t* p00 = plane + (td.i0 * iH + th.i0) * iW;
        const scalar_t* p01 = plane + (td.i0 * iH + th.i1) * iW;
        const scalar_t* p10 = plane + (td.i1 * iH + th.i0) * iW;
        const scalar_t* p11 = plane + (td.i1 * iH + th.i1) * iW;
        int64_t k = 0;
        const aVec ld0(td.l0), ld1(td.l1), lh0(th.l0), lh1(th.l1);
        for (; k + K <= iW; k += K) {
          const aVec t0 = lh0 * load_k(p00 + k) + lh1 * load_k(p01 + k);
          const aVec t1 = lh0 * load_k(p10 + k) + lh1 * load_k(p11 + k);
          (ld0 * t0 + ld1 * t1).store(T.data() + k);
        }
        for (; k < iW; ++k) {
          const acc_t t0 = th.l0 * acc_t(p00[k]) + th.l1 * acc_t(p01[k]);
          const acc_t t1 = th.l0 * acc_t(p10[k]) + th.l1 * acc_t(p11[k]);
          T[k] = td.l0 * t0 + td.l1 * t1;
        }
        scalar_t* dst = o + r * oW;
        for (int64_t w = 0; w < oW; ++w) {
          const auto& tw = aw.taps[w];
          dst[w] = static_cast<scalar_t>(tw.l0 * T[tw.i0] + tw.l1 * T[tw.i1]);
        }
      }
    });
    return;
  }
  // channels_last_3d: x and out dense in it.
  const int64_t sizes[4] = {N, oD, oH, oW};
  at::parallel_for(0, N * oD * oH * oW, grain_for(8 * C), [&](int64_t b, int64_t e) {
    int64_t idx[4];
    unravel<4>(b, sizes, idx);
    for (int64_t p = b; p < e; ++p, advance<4>(sizes, idx)) {
      const auto& td = ad.taps[idx[1]];
      const auto& th = ah.taps[idx[2]];
      const auto& tw = aw.taps[idx[3]];
      const scalar_t* base = in + idx[0] * iD * iH * iW * C;
      const auto px = [&](int64_t d, int64_t h, int64_t w) { return base + ((d * iH + h) * iW + w) * C; };
      const scalar_t* q[8] = {px(td.i0, th.i0, tw.i0), px(td.i0, th.i1, tw.i0), px(td.i1, th.i0, tw.i0),
                              px(td.i1, th.i1, tw.i0), px(td.i0, th.i0, tw.i1), px(td.i0, th.i1, tw.i1),
                              px(td.i1, th.i0, tw.i1), px(td.i1, th.i1, tw.i1)};
      scalar_t* dst = o + p * C;
      int64_t c = 0;
      const aVec ld0(td.l0), ld1(td.l1), lh0(th.l0), lh1(th.l1), lw0(tw.l0), lw1(tw.l1);
      for (; c + K <= C; c += K) {
        const aVec T0 = ld0 * (lh0 * load_k(q[0] + c) + lh1 * load_k(q[1] + c)) +
                        ld1 * (lh0 * load_k(q[2] + c) + lh1 * load_k(q[3] + c));
        const aVec T1 = ld0 * (lh0 * load_k(q[4] + c) + lh1 * load_k(q[5] + c)) +
                        ld1 * (lh0 * load_k(q[6] + c) + lh1 * load_k(q[7] + c));
        store_k(dst + c, lw0 * T0 + lw1 * T1);
      }
      for (; c < C; ++c) {
        const auto v = [&](int m) { return static_cast<acc_t>(q[m][c]); };
        const acc_t T0 = td.l0 * (th.l0 * v(0) + th.l1 * v(1)) + td.l1 * (th.l0 * v(2) + th.l1 * v(3));
        const acc_t T1 = td.l0 * (th.l0 * v(4) + th.l1 * v(5)) + td.l1 * (th.l0 * v(6) + th.l1 * v(7));
        dst[c] = static_cast<scalar_t>(tw.l0 * T0 + tw.l1 * T1);
      }
    }
  });
}

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self, c10::SymIntArrayRef output_size,
                  bool align_corners, Scale sd, Scale sh, Scale sw) {
  if (out.numel() == 0) return;
  const Scale scales[3] = {sd, sh, sw};
  const Geometry g = make_geometry(self.sizes(), C10_AS_INTARRAYREF_SLOW(output_size), align_corners, scales);
  const MemoryFormat fmt = p.result.format;
  const at::Tensor x = self.contiguous(fmt);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "upsample_trilinear3d_cpu",
                                  [&] { forward_kernel<scalar_t>(x, out, g, fmt); });
}

// ---------------------------------------------------------------------------
// Backward

template <typename scalar_t>
void backward_kernel(const at::Tensor& go, at::Tensor& gi, const Geometry& g, MemoryFormat fmt) {
  using acc_t = at::opmath_type<scalar_t>;
  using aVec = at::vec::Vectorized<acc_t>;
  constexpr int64_t K = aVec::size();
  const int64_t N = gi.size(0), C = gi.size(1);
  const int64_t iD = g.in[0], iH = g.in[1], iW = g.in[2];
  const int64_t oD = g.out[0], oH = g.out[1], oW = g.out[2];
  const Axis<acc_t> ad = make_axis<acc_t>(g, 0, true), ah = make_axis<acc_t>(g, 1, true),
                    aw = make_axis<acc_t>(g, 2, true);
  const scalar_t* gp = go.const_data_ptr<scalar_t>();
  scalar_t* o = gi.mutable_data_ptr<scalar_t>();
  const aVec zero(acc_t(0));

  if (fmt == MemoryFormat::Contiguous) {
    const int64_t sizes[3] = {N * C, iD, iH};
    const int64_t cost = (ad.longest * ah.longest + 1) * oW + aw.longest * iW;
    const WFold<acc_t> wf = make_w_fold(aw, iW, oW);
    at::parallel_for(0, N * C * iD * iH, grain_for(cost), [&](int64_t b, int64_t e) {
      std::vector<acc_t> R(oW);
      std::vector<const scalar_t*> rows;  // the grad_output rows of (i, j), d-major
      std::vector<acc_t> lh;              // their H weights
      int64_t idx[3];
      unravel<3>(b, sizes, idx);
      for (int64_t r = b; r < e; ++r, advance<3>(sizes, idx)) {
        const int64_t nc = idx[0], i = idx[1], j = idx[2];
        scalar_t* dst = o + r * iW;
        const int64_t d0 = ad.start[i], d1 = ad.start[i + 1], h0 = ah.start[j], h1 = ah.start[j + 1];
        if (d0 == d1 || h0 == h1) {  // no output position reaches this row
          cpu::zero_fill(dst, iW);
          continue;
        }
        const int64_t nh = h1 - h0;
        rows.clear();
        for (int64_t a = d0; a < d1; ++a) {
          for (int64_t b2 = h0; b2 < h1; ++b2) rows.push_back(gp + ((nc * oD + ad.pos[a]) * oH + ah.pos[b2]) * oW);
        }
        const acc_t* wh = ah.weight.data() + h0;
        const acc_t* wd = ad.weight.data() + d0;
        const int64_t nd = d1 - d0;
        int64_t w = 0;
        for (; w + K <= oW; w += K) {
          aVec acc_d = zero;
          for (int64_t a = 0; a < nd; ++a) {
            aVec acc_h = zero;
            const scalar_t* const* rr = rows.data() + a * nh;
            for (int64_t b2 = 0; b2 < nh; ++b2) acc_h = acc_h + aVec(wh[b2]) * load_k(rr[b2] + w);
            acc_d = acc_d + aVec(wd[a]) * acc_h;
          }
          acc_d.store(R.data() + w);
        }
        for (; w < oW; ++w) {
          acc_t acc_d = 0;
          for (int64_t a = 0; a < nd; ++a) {
            acc_t acc_h = 0;
            const scalar_t* const* rr = rows.data() + a * nh;
            for (int64_t b2 = 0; b2 < nh; ++b2) acc_h = acc_h + wh[b2] * static_cast<acc_t>(rr[b2][w]);
            acc_d = acc_d + wd[a] * acc_h;
          }
          R[w] = acc_d;
        }
        if (wf.scalar) {
          for (int64_t k = 0; k < iW; ++k) {
            acc_t acc = 0;
            for (int64_t m = aw.start[k]; m < aw.start[k + 1]; ++m) acc = acc + aw.weight[m] * R[aw.pos[m]];
            dst[k] = static_cast<scalar_t>(acc);
          }
          continue;
        }
        int64_t k = 0;
        if (wf.halved) {
          for (; k + 2 * K <= iW; k += 2 * K) {
            const aVec x = aVec::loadu(R.data() + k / 2);
            const auto [lo, hi] = at::vec::interleave2(zero + aVec::loadu(wf.even.data() + k / 2) * x,
                                                       zero + aVec::loadu(wf.odd.data() + k / 2) * x);
            store_sums(dst + k, lo, hi, 2 * K);
          }
        }
        for (; k < iW; k += 2 * K) {
          const aVec lo = w_fold(wf, R.data(), k), hi = w_fold(wf, R.data(), k + K);
          store_sums(dst + k, lo, hi, std::min(2 * K, iW - k));
        }
      }
    });
    return;
  }
  // channels_last_3d: go and gi dense in it; one grad_input pixel at a time.
  const int64_t sizes[4] = {N, iD, iH, iW};
  at::parallel_for(0, N * iD * iH * iW, grain_for(C * ad.longest * ah.longest * aw.longest + C),
                   [&](int64_t b, int64_t e) {
    int64_t idx[4];
    unravel<4>(b, sizes, idx);
    for (int64_t p = b; p < e; ++p, advance<4>(sizes, idx)) {
      const int64_t n = idx[0], i = idx[1], j = idx[2], k = idx[3];
      scalar_t* dst = o + p * C;
      const scalar_t* base = gp + n * oD * oH * oW * C;
      const auto px = [&](int64_t d, int64_t h, int64_t w) { return base + ((d * oH + h) * oW + w) * C; };
      const auto sum = [&](auto zero_v, auto term) {
        auto acc_w = zero_v;
        for (int64_t mw = aw.start[k]; mw < aw.start[k + 1]; ++mw) {
          auto acc_d = zero_v;
          for (int64_t md = ad.start[i]; md < ad.start[i + 1]; ++md) {
            auto acc_h = zero_v;
            for (int64_t mh = ah.start[j]; mh < ah.start[j + 1]; ++mh) {
              acc_h = acc_h + decltype(zero_v)(ah.weight[mh]) * term(px(ad.pos[md], ah.pos[mh], aw.pos[mw]));
            }
            acc_d = acc_d + decltype(zero_v)(ad.weight[md]) * acc_h;
          }
          acc_w = acc_w + decltype(zero_v)(aw.weight[mw]) * acc_d;
        }
        return acc_w;
      };
      int64_t c = 0;
      for (; c + K <= C; c += K) store_k(dst + c, sum(zero, [&](const scalar_t* q) { return load_k(q + c); }));
      for (; c < C; ++c) {
        dst[c] = static_cast<scalar_t>(sum(acc_t(0), [&](const scalar_t* q) { return static_cast<acc_t>(q[c]); }));
      }
    }
  });
}

// grad_input: dense in the result's layout or the other 5-D one.
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output,
                   c10::SymIntArrayRef output_size, c10::SymIntArrayRef input_size, bool align_corners, Scale sd,
                   Scale sh, Scale sw) {
  if (grad_input.numel() == 0) return;
  const Scale scales[3] = {sd, sh, sw};
  const MemoryFormat fmt = dense_format_5d(grad_input, p.result.format);
  const at::Tensor go = grad_output.contiguous(fmt);
  const Geometry g = make_geometry(C10_AS_INTARRAYREF_SLOW(input_size), C10_AS_INTARRAYREF_SLOW(output_size),
                                   align_corners, scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "upsample_trilinear3d_backward_cpu",
                                  [&] { backward_kernel<scalar_t>(go, grad_input, g, fmt); });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  using B = cpu::Backend;
  entry::impl<B, check_forward, forward_into>(m, kForward);
  entry::impl<B, check_backward, backward_into>(m, kBackward);
}

}  // namespace torch_aclnn::upsample_trilinear
