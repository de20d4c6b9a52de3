// CPU kernels of the AvgPool3d family (docs/spec.md §12).
//
// Both operators compute in the opmath type A (float32 for float16 and
// bfloat16, rounded once at the end; float32 and float64 in their own type,
// which gives aten CPU's bits) and keep the layout: a tensor is read and
// written dense in the result's layout, contiguous (N*C planes of D*H*W
// elements) or channels_last_3d (c fastest); an input in another layout is
// copied once into it. Work is split by output rows, each computed by one
// thread in a private buffer, so the result does not depend on the thread
// count, and each element's sum is formed in the one order of the spec,
// the order of the CUDA kernels' per-element code (csrc/cuda/avg_pool.cuh):
// the same bits on both.
//
// avg_pool3d, contiguous: one task per (plane, od); per pooled row (od, oh)
// a row of sums acc[oW], and for every tap row (d, h) of the window and
// every tap l along W, acc[ow] += x[d][h][ow*sW - pW + l] over the ow whose
// tap l lies inside self (a strided loop over the row, which the compiler
// vectorises): each sum gets its taps in increasing (d, h, w), as
// forward_element's. float16/bfloat16 tap rows are widened once per use.
// channels_last_3d: per window, the running sums of all C channels
// (at::vec vectors over c), tap by tap in increasing (d, h, w).
// Then sum / divisor, the divisor from per-axis tables (axis_window).
//
// avg_pool3d_backward, a gather: first t[o] = grad_output[o] / divisor(o)
// in A (one pass over the pooled elements; aten's term), then for every
// input element the sum of t over the pooled positions whose windows cover
// it, in increasing (od, oh, ow), from 0. Contiguous: one task per input
// row (plane, d, h), a row buffer acc[W]; for every covering (od, oh) in
// increasing order and every tap l from kW-1 down to 0 (so the ow that
// reach one w come in increasing order), acc[ow*sW - pW + l] += t[od][oh][ow].
// channels_last_3d: per input position, the running sums of all C channels
// over its covering windows in increasing (od, oh, ow). No atomics; a
// position that no window covers (stride > kernel_size) is 0.
#include "contracts/avg_pool.h"
#include "cpu/cpu_utils.h"
#include "cpu/lanes.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace torch_aclnn::avg_pool {
namespace {

// floor(a / b), ceil(a / b) for b > 0.
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// One axis: per pooled position its taps inside self [lo, hi) and its
// divisor factor (axis_window); per input position the covering pooled
// positions [first, last] (covering).
struct Axis {
  std::vector<int64_t> lo, hi, f, first, last;
  Axis(int64_t size, int64_t pooled, int64_t k, int64_t s, int64_t p, bool count_include_pad)
      : lo(pooled), hi(pooled), f(pooled), first(size), last(size) {
    for (int64_t o = 0; o < pooled; ++o) axis_window<int64_t>(o, size, k, s, p, count_include_pad, lo[o], hi[o], f[o]);
    for (int64_t x = 0; x < size; ++x) covering<int64_t>(x, pooled, k, s, p, first[x], last[x]);
  }
};

// The sizes of a call: self (N, [C,] D, H, W) as P = N*C planes, pooled
// (oD, oH, oW); cl: dense in channels_last_3d (else contiguous).
struct Geometry {
  int64_t N, C, P, D, H, W, oD, oH, oW;
  bool cl;
  int64_t S() const { return D * H * W; }
  int64_t oS() const { return oD * oH * oW; }
};

// big: self's shape, small: the pooled shape; layout: the result's.
Geometry geometry_of(const at::Tensor& big, const at::Tensor& small, const at::Tensor& result) {
  Geometry g;
  const int64_t d = big.dim() - 3;
  g.N = big.size(0);
  g.C = big.dim() == 5 ? big.size(1) : 1;
  g.P = g.N * g.C;
  g.D = big.size(d);
  g.H = big.size(d + 1);
  g.W = big.size(d + 2);
  g.oD = small.size(d);
  g.oH = small.size(d + 1);
  g.oW = small.size(d + 2);
  g.cl = result.dim() == 5 && g.C > 1 && !result.is_contiguous() &&
         result.is_contiguous(c10::MemoryFormat::ChannelsLast3d);
  return g;
}

// Axis i (0: D, 1: H, 2: W) of a call.
inline Axis axis_of(const Geometry& g, const Window& w, int i) {
  const int64_t size[3] = {g.D, g.H, g.W}, pooled[3] = {g.oD, g.oH, g.oW};
  return Axis(size[i], pooled[i], w.kernel[i], w.stride[i], w.padding[i], w.count_include_pad);
}

inline c10::MemoryFormat format_of(const Geometry& g) {
  return g.cl ? c10::MemoryFormat::ChannelsLast3d : c10::MemoryFormat::Contiguous;
}

// acc[0, n) += x[0, n) (x widened to A), one addition per element.
template <typename T, typename A>
inline void add_row(A* __restrict acc, const T* __restrict x, int64_t n) {
  using aVec = at::vec::Vectorized<A>;
  constexpr int64_t K = aVec::size();
  int64_t c = 0;
  for (; c + K <= n; c += K) (aVec::loadu(acc + c) + cpu::widen(x + c)).store(acc + c);
  for (; c < n; ++c) acc[c] += static_cast<A>(x[c]);
}

// Per tap l along W, the pooled positions [a[l], b[l]) whose tap l lies
// inside self: 0 <= ow*sW - pW + l < W.
struct TapRanges {
  std::vector<int64_t> a, b;
  TapRanges(int64_t W, int64_t oW, int64_t k, int64_t s, int64_t p) : a(k), b(k) {
    for (int64_t l = 0; l < k; ++l) {
      a[l] = std::max<int64_t>(0, ceil_div(p - l, s));
      b[l] = std::min<int64_t>(oW, floor_div(W - 1 + p - l, s) + 1);
    }
  }
};

template <typename A>
inline A divisor(const Window& w, int64_t fd, int64_t fh, int64_t fw) {
  return static_cast<A>(w.divisor != 0 ? w.divisor : fd * fh * fw);
}

// ---------------------------------------------------------------------------
// avg_pool3d

template <typename T>
void forward_contiguous(T* __restrict out, const T* __restrict x, const Geometry& g, const Window& w) {
  using A = at::opmath_type<T>;
  const Axis ad = axis_of(g, w, 0), ah = axis_of(g, w, 1), aw = axis_of(g, w, 2);
  const int64_t kW = w.kernel[2], sW = w.stride[2], pW = w.padding[2];
  const TapRanges taps(g.W, g.oW, kW, sW, pW);
  const int64_t S = g.S(), oS = g.oS();
  const int64_t cost = g.oH * g.oW * w.kernel[0] * w.kernel[1] * kW;
  at::parallel_for(0, g.P * g.oD, cpu::grain_for(cost), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(g.oW);
    std::vector<A> wide(std::is_same_v<T, A> ? 0 : g.W);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t q = task / g.oD, od = task % g.oD;
      const T* xq = x + q * S;
      T* oq = out + q * oS + od * g.oH * g.oW;
      for (int64_t oh = 0; oh < g.oH; ++oh) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t d = ad.lo[od]; d < ad.hi[od]; ++d) {
          for (int64_t h = ah.lo[oh]; h < ah.hi[oh]; ++h) {
            const A* row;
            if constexpr (std::is_same_v<T, A>) {
              row = xq + (d * g.H + h) * g.W;
            } else {
              cpu::widen_row(xq + (d * g.H + h) * g.W, wide.data(), g.W);
              row = wide.data();
            }
            for (int64_t l = 0; l < kW; ++l) {
              A* __restrict a = acc.data();
              const A* __restrict r = row + l - pW;
              const int64_t lo = taps.a[l], hi = taps.b[l];
              if (sW == 1) {
                for (int64_t ow = lo; ow < hi; ++ow) a[ow] += r[ow];
              } else if (sW == 2) {
                for (int64_t ow = lo; ow < hi; ++ow) a[ow] += r[2 * ow];
              } else {
                for (int64_t ow = lo; ow < hi; ++ow) a[ow] += r[ow * sW];
              }
            }
          }
        }
        T* o = oq + oh * g.oW;
        const int64_t fdh = ad.f[od] * ah.f[oh];
        for (int64_t ow = 0; ow < g.oW; ++ow) {
          o[ow] = static_cast<T>(acc[ow] / divisor<A>(w, fdh, 1, aw.f[ow]));
        }
      }
    }
  });
}

template <typename T>
void forward_channels_last(T* __restrict out, const T* __restrict x, const Geometry& g, const Window& w) {
  using A = at::opmath_type<T>;
  const Axis ad = axis_of(g, w, 0), ah = axis_of(g, w, 1), aw = axis_of(g, w, 2);
  const int64_t C = g.C;
  const int64_t cost = g.oW * C * w.kernel[0] * w.kernel[1] * w.kernel[2];
  at::parallel_for(0, g.N * g.oD * g.oH, cpu::grain_for(cost), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(C);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t oh = task % g.oH, od = (task / g.oH) % g.oD, n = task / (g.oH * g.oD);
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t d = ad.lo[od]; d < ad.hi[od]; ++d) {
          for (int64_t h = ah.lo[oh]; h < ah.hi[oh]; ++h) {
            for (int64_t x0 = aw.lo[ow]; x0 < aw.hi[ow]; ++x0) {
              add_row(acc.data(), x + (((n * g.D + d) * g.H + h) * g.W + x0) * C, C);
            }
          }
        }
        T* o = out + (task * g.oW + ow) * C;
        const A div = divisor<A>(w, ad.f[od] * ah.f[oh], 1, aw.f[ow]);
        for (int64_t c = 0; c < C; ++c) o[c] = static_cast<T>(acc[c] / div);
      }
    }
  });
}

void forward_into(at::Tensor& result, const Plan& plan, const at::Tensor& self, at::IntArrayRef, at::IntArrayRef,
                  at::IntArrayRef, bool, bool, std::optional<int64_t>) {
  const Geometry g = geometry_of(self, result, result);
  const at::Tensor x = self.contiguous(format_of(g));
  const Window& w = plan.params.window;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "avg_pool3d_cpu", [&] {
    if (g.cl) {
      forward_channels_last(result.mutable_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(), g, w);
    } else {
      forward_contiguous(result.mutable_data_ptr<scalar_t>(), x.const_data_ptr<scalar_t>(), g, w);
    }
  });
}

// ---------------------------------------------------------------------------
// avg_pool3d_backward

// t = grad_output / divisor, in A, in grad_output's (dense) layout.
template <typename T, typename A = at::opmath_type<T>>
std::vector<A> scaled_terms(const T* __restrict go, const Geometry& g, const Window& w, const Axis& ad,
                            const Axis& ah, const Axis& aw) {
  std::vector<A> t(g.P * g.oS());
  const int64_t C = g.cl ? g.C : 1;  // elements per pooled position of a row
  const int64_t rows = g.cl ? g.N * g.oD * g.oH : g.P * g.oD * g.oH;
  at::parallel_for(0, rows, cpu::grain_for(g.oW * C), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t oh = r % g.oH, od = (r / g.oH) % g.oD;
      const int64_t fdh = ad.f[od] * ah.f[oh];
      for (int64_t ow = 0; ow < g.oW; ++ow) {
        const A div = divisor<A>(w, fdh, 1, aw.f[ow]);
        const int64_t base = (r * g.oW + ow) * C;
        for (int64_t c = 0; c < C; ++c) t[base + c] = static_cast<A>(go[base + c]) / div;
      }
    }
  });
  return t;
}

template <typename T>
void backward_contiguous(T* __restrict gi, const T* __restrict go, const Geometry& g, const Window& w) {
  using A = at::opmath_type<T>;
  const Axis ad = axis_of(g, w, 0), ah = axis_of(g, w, 1), aw = axis_of(g, w, 2);
  const std::vector<A> t = scaled_terms(go, g, w, ad, ah, aw);
  const int64_t kW = w.kernel[2], sW = w.stride[2], pW = w.padding[2];
  const TapRanges taps(g.W, g.oW, kW, sW, pW);
  const int64_t S = g.S(), oS = g.oS();
  const int64_t cost = g.W * (1 + w.kernel[0] * w.kernel[1] / std::max<int64_t>(1, w.stride[0] * w.stride[1]));
  at::parallel_for(0, g.P * g.D * g.H, cpu::grain_for(cost), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(g.W);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t h = row % g.H, d = (row / g.H) % g.D, q = row / (g.H * g.D);
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t od = ad.first[d]; od <= ad.last[d]; ++od) {
        for (int64_t oh = ah.first[h]; oh <= ah.last[h]; ++oh) {
          const A* __restrict trow = t.data() + q * oS + (od * g.oH + oh) * g.oW;
          for (int64_t l = kW - 1; l >= 0; --l) {
            A* __restrict a = acc.data() + l - pW;
            const int64_t lo = taps.a[l], hi = taps.b[l];
            if (sW == 1) {
              for (int64_t ow = lo; ow < hi; ++ow) a[ow] += trow[ow];
            } else if (sW == 2) {
              for (int64_t ow = lo; ow < hi; ++ow) a[2 * ow] += trow[ow];
            } else {
              for (int64_t ow = lo; ow < hi; ++ow) a[ow * sW] += trow[ow];
            }
          }
        }
      }
      T* o = gi + q * S + (d * g.H + h) * g.W;
      for (int64_t x0 = 0; x0 < g.W; ++x0) o[x0] = static_cast<T>(acc[x0]);
    }
  });
}

template <typename T>
void backward_channels_last(T* __restrict gi, const T* __restrict go, const Geometry& g, const Window& w) {
  using A = at::opmath_type<T>;
  const Axis ad = axis_of(g, w, 0), ah = axis_of(g, w, 1), aw = axis_of(g, w, 2);
  const std::vector<A> t = scaled_terms(go, g, w, ad, ah, aw);
  const int64_t C = g.C;
  at::parallel_for(0, g.N * g.D * g.H, cpu::grain_for(g.W * C), [&](int64_t begin, int64_t end) {
    std::vector<A> acc(C);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t h = row % g.H, d = (row / g.H) % g.D, n = row / (g.H * g.D);
      for (int64_t x0 = 0; x0 < g.W; ++x0) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t od = ad.first[d]; od <= ad.last[d]; ++od) {
          for (int64_t oh = ah.first[h]; oh <= ah.last[h]; ++oh) {
            for (int64_t ow = aw.first[x0]; ow <= aw.last[x0]; ++ow) {
              add_row(acc.data(), t.data() + (((n * g.oD + od) * g.oH + oh) * g.oW + ow) * C, C);
            }
          }
        }
        T* o = gi + (row * g.W + x0) * C;
        for (int64_t c = 0; c < C; ++c) o[c] = static_cast<T>(acc[c]);
      }
    }
  });
}

// grad_input: dense in the result's memory format, or (out=) in the other
// 5-D one; it shares no memory with grad_output.
void backward_into(at::Tensor& grad_input, const Plan& plan, const at::Tensor& grad_output, const at::Tensor& self,
                   at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, bool, bool, std::optional<int64_t>) {
  const Geometry g = geometry_of(self, grad_output, grad_input);
  const at::Tensor go = grad_output.contiguous(format_of(g));
  const Window& w = plan.params.window;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "avg_pool3d_backward_cpu",
                                  [&] {
                                    if (g.cl) {
                                      backward_channels_last(grad_input.mutable_data_ptr<scalar_t>(),
                                                             go.const_data_ptr<scalar_t>(), g, w);
                                    } else {
                                      backward_contiguous(grad_input.mutable_data_ptr<scalar_t>(),
                                                          go.const_data_ptr<scalar_t>(), g, w);
                                    }
                                  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  entry::impl<cpu::Backend, check_forward, forward_into>(m, "avg_pool3d");
  entry::impl<cpu::Backend, check_backward, backward_into>(m, "avg_pool3d_backward");
}

}  // namespace torch_aclnn::avg_pool
