// CPU kernels of the AdaptiveAvgPool3d family (docs/spec.md §13):
// adaptive_avg_pool3d and adaptive_avg_pool3d_backward.
//
// Both sum in one fixed order per element, whatever the layout, the thread
// count or the instruction set: the forward over its window in increasing
// (d, h, w), the backward (a gather, no atomics) over the windows covering
// the element in increasing (od, oh, ow), each term grad_output / kd / kh /
// kw. float32/float64 compute in their type (aten CPU's bits),
// float16/bfloat16 in float32, rounded once when stored. A sum starts at +0
// and never becomes -0 (round to nearest), so adding +0 in place of a
// missing term changes nothing: the vector loops pad with zeros.
//
// Forward. A result in planes (contiguous): groups of kGroup planes at once,
// one running sum per plane (independent chains, where one window is one
// chain of dependent additions). A channels_last_3d result: one running
// sum per channel, whole vectors of channels.
//
// Backward. Pass 1 computes every term once, grad_output / kd / kh / kw in
// the opmath type, into a buffer laid out for pass 2: per plane (N*C, oS) or
// per position (N, oS, C). Pass 2, in planes: a row of W outputs adds, for
// each covering (od, oh) and each k < the most W windows covering one
// position, the row of terms expanded over W (term[lo_w + k], or 0 where w
// has fewer windows): whole vectors along W. channels_last_3d: per input
// position, the terms of its covering windows, whole vectors of channels.
#include "common/entry.h"
#include "contracts/adaptive_avg_pool.h"
#include "cpu/cpu_utils.h"
#include "cpu/lanes.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace torch_aclnn::adaptive_avg_pool {
namespace {

using at::vec::Vectorized;

// Per axis: each output's window [start, end) and each input's covering
// outputs [lo, hi).
struct Axis {
  int64_t in = 0, out = 0;
  std::vector<int64_t> start, end, lo, hi;
  int64_t most = 0;  // the most windows covering one input position

  Axis(int64_t in_, int64_t out_) : in(in_), out(out_), start(out_), end(out_), lo(in_), hi(in_) {
    for (int64_t i = 0; i < out; ++i) {
      start[i] = window_start<int64_t>(i, in, out);
      end[i] = window_end<int64_t>(i, in, out);
    }
    for (int64_t x = 0; x < in; ++x) {
      covering<int64_t>(x, in, out, lo[x], hi[x]);
      most = std::max(most, hi[x] - lo[x]);
    }
  }
};

// A tensor of rank 4 (C, D, H, W) or 5 (N, C, D, H, W) as N x C planes.
struct View {
  int64_t N, C, sN, sC, sD, sH, sW;
};

View view_of(const at::Tensor& t) {
  if (t.dim() == 5) return {t.size(0), t.size(1), t.stride(0), t.stride(1), t.stride(2), t.stride(3), t.stride(4)};
  return {1, t.size(0), 0, t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

// Whether a 5-D result is written channels_last_3d (else: contiguous).
bool channels_last(const at::Tensor& result) {
  return result.dim() == 5 && !result.is_contiguous() &&
         result.is_contiguous(c10::MemoryFormat::ChannelsLast3d);
}

// acc[0, n) += row[0, n) (row widened to the opmath type A).
template <typename scalar_t, typename A>
inline void add_row(A* __restrict acc, const scalar_t* __restrict row, int64_t n) {
  using aVec = Vectorized<A>;
  constexpr int64_t K = aVec::size();
  int64_t i = 0;
  for (; i + K <= n; i += K) (aVec::loadu(acc + i) + cpu::widen<scalar_t>(row + i)).store(acc + i);
  for (; i < n; ++i) acc[i] += static_cast<A>(row[i]);
}

// v[0, n) = v / a / b / c.
template <typename A>
inline void divide_row(A* v, int64_t n, A a, A b, A c) {
  using aVec = Vectorized<A>;
  constexpr int64_t K = aVec::size();
  const aVec va(a), vb(b), vc(c);
  int64_t i = 0;
  for (; i + K <= n; i += K) (aVec::loadu(v + i) / va / vb / vc).store(v + i);
  for (; i < n; ++i) v[i] = v[i] / a / b / c;
}

// ---------------------------------------------------------------------------
// Forward

constexpr int64_t kGroup = 8;

template <typename scalar_t>
void forward_planes(at::Tensor& out, const at::Tensor& self, const Axis& ad, const Axis& ah, const Axis& aw) {
  using A = at::opmath_type<scalar_t>;
  const View v = view_of(self);
  const int64_t P = v.N * v.C, oS = ad.out * ah.out * aw.out;
  const int64_t groups = (P + kGroup - 1) / kGroup;
  const scalar_t* x = self.const_data_ptr<scalar_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();
  const int64_t cost = std::max<int64_t>(1, kGroup * (ad.in * ah.in * aw.in) / std::max<int64_t>(1, ad.out));
  at::parallel_for(0, groups * ad.out, cpu::grain_for(cost), [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t g = u / ad.out, od = u % ad.out;
      const int64_t p0 = g * kGroup, n = std::min(kGroup, P - p0);
      int64_t base[kGroup];
      for (int64_t j = 0; j < n; ++j) base[j] = (p0 + j) / v.C * v.sN + (p0 + j) % v.C * v.sC;
      const int64_t d0 = ad.start[od], d1 = ad.end[od];
      for (int64_t oh = 0; oh < ah.out; ++oh) {
        const int64_t h0 = ah.start[oh], h1 = ah.end[oh];
        for (int64_t ow = 0; ow < aw.out; ++ow) {
          const int64_t w0 = aw.start[ow], w1 = aw.end[ow];
          A acc[kGroup] = {};
          for (int64_t d = d0; d < d1; ++d) {
            for (int64_t h = h0; h < h1; ++h) {
              for (int64_t w = w0; w < w1; ++w) {
                const int64_t pos = d * v.sD + h * v.sH + w * v.sW;
                if (n == kGroup) {
                  for (int64_t j = 0; j < kGroup; ++j) acc[j] += static_cast<A>(x[base[j] + pos]);
                } else {
                  for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<A>(x[base[j] + pos]);
                }
              }
            }
          }
          const A kd = A(d1 - d0), kh = A(h1 - h0), kw = A(aw.end[ow] - w0);
          const int64_t o = (od * ah.out + oh) * aw.out + ow;
          for (int64_t j = 0; j < n; ++j) y[(p0 + j) * oS + o] = static_cast<scalar_t>(acc[j] / kd / kh / kw);
        }
      }
    }
  });
}

template <typename scalar_t>
void forward_channels_last(at::Tensor& out, const at::Tensor& self, const Axis& ad, const Axis& ah,
                           const Axis& aw) {
  using A = at::opmath_type<scalar_t>;
  const View v = view_of(self);
  const int64_t C = v.C, oS = ad.out * ah.out * aw.out;
  const scalar_t* x = self.const_data_ptr<scalar_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();
  const int64_t window = std::max<int64_t>(1, (ad.in / ad.out + 1) * (ah.in / ah.out + 1) * (aw.in / aw.out + 1));
  at::parallel_for(0, v.N * oS, cpu::grain_for(C * window), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(C);
    std::vector<scalar_t> row(v.sC == 1 ? 0 : C);
    for (int64_t u = begin; u < end; ++u) {
      const int64_t n = u / oS, o = u % oS;
      const int64_t od = o / (ah.out * aw.out), oh = o / aw.out % ah.out, ow = o % aw.out;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t d = ad.start[od]; d < ad.end[od]; ++d) {
        for (int64_t h = ah.start[oh]; h < ah.end[oh]; ++h) {
          for (int64_t w = aw.start[ow]; w < aw.end[ow]; ++w) {
            const scalar_t* p = x + n * v.sN + d * v.sD + h * v.sH + w * v.sW;
            if (v.sC == 1) {
              add_row(acc.data(), p, C);
            } else {
              for (int64_t c = 0; c < C; ++c) row[c] = p[c * v.sC];
              add_row(acc.data(), row.data(), C);
            }
          }
        }
      }
      divide_row<A>(acc.data(), C, A(ad.end[od] - ad.start[od]), A(ah.end[oh] - ah.start[oh]),
                    A(aw.end[ow] - aw.start[ow]));
      cpu::narrow_row(acc.data(), y + u * C, C);
    }
  });
}

void forward_into(at::Tensor& out, const Plan&, const at::Tensor& self, c10::SymIntArrayRef) {
  const int64_t d = self.dim() - 3;
  const Axis ad(self.size(d), out.size(d)), ah(self.size(d + 1), out.size(d + 1)),
      aw(self.size(d + 2), out.size(d + 2));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "adaptive_avg_pool3d_cpu", [&] {
    if (channels_last(out)) {
      forward_channels_last<scalar_t>(out, self, ad, ah, aw);
    } else {
      forward_planes<scalar_t>(out, self, ad, ah, aw);
    }
  });
}

// ---------------------------------------------------------------------------
// Backward

// Pass 1: term[n][c][o] = grad_output / kd / kh / kw, at term + n*tN + c*tC
// + o*tO.
template <typename scalar_t, typename A>
void terms(A* term, int64_t tN, int64_t tC, int64_t tO, const at::Tensor& grad_output, const Axis& ad,
           const Axis& ah, const Axis& aw) {
  const View v = view_of(grad_output);
  const scalar_t* g = grad_output.const_data_ptr<scalar_t>();
  const int64_t plane = ah.out * aw.out;
  at::parallel_for(0, v.N * v.C * ad.out, cpu::grain_for(plane), [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t od = u % ad.out, c = u / ad.out % v.C, n = u / ad.out / v.C;
      const A kd = A(ad.end[od] - ad.start[od]);
      const scalar_t* src = g + n * v.sN + c * v.sC + od * v.sD;
      A* dst = term + n * tN + c * tC + od * plane * tO;
      for (int64_t oh = 0; oh < ah.out; ++oh) {
        const A kh = A(ah.end[oh] - ah.start[oh]);
        for (int64_t ow = 0; ow < aw.out; ++ow) {
          const A kw = A(aw.end[ow] - aw.start[ow]);
          dst[(oh * aw.out + ow) * tO] = static_cast<A>(src[oh * v.sH + ow * v.sW]) / kd / kh / kw;
        }
      }
    }
  });
}

// Pass 2 into a result in planes (contiguous), in units of a plane's run of
// D positions.
template <typename scalar_t, typename A>
void gather_planes(scalar_t* gi, const A* term, int64_t P, const Axis& ad, const Axis& ah, const Axis& aw) {
  using aVec = Vectorized<A>;
  constexpr int64_t K = aVec::size();
  const int64_t D = ad.in, H = ah.in, W = aw.in, oS = ad.out * ah.out * aw.out, KW = aw.most;
  const int64_t chunks = std::min<int64_t>(D, std::max<int64_t>(1, (4 * at::get_num_threads() + P - 1) / P));
  const int64_t span = (D + chunks - 1) / chunks;
  at::parallel_for(0, P * chunks, 1, [&](int64_t begin, int64_t end) {
    // expanded[(od - first) * oH + oh][k][w]: term[od][oh][lo_w + k], 0 past w's windows.
    std::vector<A> expanded, acc(W);
    for (int64_t u = begin; u < end; ++u) {
      const int64_t p = u / chunks, d_begin = u % chunks * span, d_end = std::min(D, d_begin + span);
      if (d_begin >= d_end) continue;
      const int64_t first = ad.lo[d_begin], last = ad.hi[d_end - 1];
      expanded.assign((last - first) * ah.out * KW * W, A(0));
      const A* t = term + p * oS;
      for (int64_t od = first; od < last; ++od) {
        for (int64_t oh = 0; oh < ah.out; ++oh) {
          const A* trow = t + (od * ah.out + oh) * aw.out;
          A* e = expanded.data() + ((od - first) * ah.out + oh) * KW * W;
          for (int64_t w = 0; w < W; ++w) {
            for (int64_t k = 0; k < aw.hi[w] - aw.lo[w]; ++k) e[k * W + w] = trow[aw.lo[w] + k];
          }
        }
      }
      for (int64_t d = d_begin; d < d_end; ++d) {
        for (int64_t h = 0; h < H; ++h) {
          std::fill(acc.begin(), acc.end(), A(0));
          for (int64_t od = ad.lo[d]; od < ad.hi[d]; ++od) {
            for (int64_t oh = ah.lo[h]; oh < ah.hi[h]; ++oh) {
              const A* e = expanded.data() + ((od - first) * ah.out + oh) * KW * W;
              for (int64_t k = 0; k < KW; ++k, e += W) {
                int64_t w = 0;
                for (; w + K <= W; w += K) (aVec::loadu(acc.data() + w) + aVec::loadu(e + w)).store(acc.data() + w);
                for (; w < W; ++w) acc[w] += e[w];
              }
            }
          }
          cpu::narrow_row(acc.data(), gi + ((p * D + d) * H + h) * W, W);
        }
      }
    }
  });
}

// Pass 2 into a channels_last_3d result, per input position.
template <typename scalar_t, typename A>
void gather_channels_last(scalar_t* gi, const A* term, int64_t N, int64_t C, const Axis& ad, const Axis& ah,
                          const Axis& aw) {
  using aVec = Vectorized<A>;
  constexpr int64_t K = aVec::size();
  const int64_t S = ad.in * ah.in * aw.in, oS = ad.out * ah.out * aw.out;
  const int64_t terms_each = ad.most * ah.most * aw.most;
  at::parallel_for(0, N * S, cpu::grain_for(C * terms_each), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(C);
    for (int64_t u = begin; u < end; ++u) {
      const int64_t n = u / S, s = u % S;
      const int64_t d = s / (ah.in * aw.in), h = s / aw.in % ah.in, w = s % aw.in;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t od = ad.lo[d]; od < ad.hi[d]; ++od) {
        for (int64_t oh = ah.lo[h]; oh < ah.hi[h]; ++oh) {
          for (int64_t ow = aw.lo[w]; ow < aw.hi[w]; ++ow) {
            const A* t = term + (n * oS + (od * ah.out + oh) * aw.out + ow) * C;
            int64_t c = 0;
            for (; c + K <= C; c += K) (aVec::loadu(acc.data() + c) + aVec::loadu(t + c)).store(acc.data() + c);
            for (; c < C; ++c) acc[c] += t[c];
          }
        }
      }
      cpu::narrow_row(acc.data(), gi + u * C, C);
    }
  });
}

void backward_into(at::Tensor& grad_input, const Plan&, const at::Tensor& grad_output, const at::Tensor& self) {
  const int64_t d = self.dim() - 3;
  const Axis ad(self.size(d), grad_output.size(d)), ah(self.size(d + 1), grad_output.size(d + 1)),
      aw(self.size(d + 2), grad_output.size(d + 2));
  const View v = view_of(grad_output);
  const int64_t oS = ad.out * ah.out * aw.out;
  const bool cl = channels_last(grad_input);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(),
                                  "adaptive_avg_pool3d_backward_cpu", [&] {
    using A = at::opmath_type<scalar_t>;
    const std::unique_ptr<A[]> term(new A[v.N * v.C * oS]);  // (every element written by pass 1)
    scalar_t* gi = grad_input.mutable_data_ptr<scalar_t>();
    if (cl) {
      terms<scalar_t, A>(term.get(), oS * v.C, 1, v.C, grad_output, ad, ah, aw);
      gather_channels_last<scalar_t, A>(gi, term.get(), v.N, v.C, ad, ah, aw);
    } else {
      terms<scalar_t, A>(term.get(), v.C * oS, oS, 1, grad_output, ad, ah, aw);
      gather_planes<scalar_t, A>(gi, term.get(), v.N * v.C, ad, ah, aw);
    }
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  entry::impl<cpu::Backend, check_forward, forward_into>(m, "adaptive_avg_pool3d");
  entry::impl<cpu::Backend, check_backward, backward_into>(m, "adaptive_avg_pool3d_backward");
}

}  // namespace torch_aclnn::adaptive_avg_pool
