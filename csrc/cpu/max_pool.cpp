// CPU kernels of the MaxPool3d family (docs/spec.md §9).
//
// max_pool3d_with_indices: per pooled position, the maximum of its window's
// taps and its flat (D, H, W) position, by the contract's element rule
// (window_max: aten's, NaN included), which the CUDA kernel runs too; the
// value written is that element itself (so a NaN keeps its payload on every
// device). float16/bfloat16 compare in float32 (exact). The rule is applied
// to many windows at once, branch-free (fold_tap): NCDHW planes row by row
// (one tap of every window of a pooled row, vectorised over the row: in
// at::vec vectors where W's stride is 1 or 2, fold_tap_vectors, and a row of
// at most one vector of windows with all its taps in registers, max_lanes),
// or, small planes of narrow rows, K planes at once, transposed so that the
// planes are a vector's lanes (forward_plane_lanes); channels_last_3d over
// the channels, a vector of them per window (max_window: its taps' running
// maximum); other strided planes per window.
//
// max_pool3d_with_indices_backward: grad_input = zeros(self's shape);
// grad_input[n][c][indices[n][c][o]] += grad_output[n][c][o] for every pooled
// position o, the terms of a position added in increasing o, so the result
// does not depend on the thread count and a position covered by several
// windows (overlapping windows: stride < kernel_size) gets its terms in the
// same order as the CUDA kernel's gather: the same bits on both. float32 and
// float64 accumulate in grad_input itself; float16 and bfloat16 in float32,
// rounded once at the end. NCDHW: each (n, c) plane is one task, a scatter
// into the zeroed plane (scatter_plane); planes of wide rows where no
// position is in two windows are written in one pass instead (write_plane):
// each window's taps get its term or 0, which is the same result without the
// zero-fill.
// channels_last_3d: disjoint windows in one write pass over the channels
// (write_channels_last), else tasks are (n, block of channels), a window's
// channels scattered together (scatter_channels_last).
//
// A tensor of shape (N, [C,] D, H, W) is seen as N x C planes
// (common/planes.h); grad_output and indices whose D, H, W axes do not
// flatten are copied once. Every index is checked against the window of its
// own output position before it is used (row 12; TapCheck in the scatters):
// a bad one is never written through, and the first in logical order is
// reported whatever the thread count.
//
// The paths live in cpu/max_pool/ (index_check.h and walk.h are shared) and
// are picked in one place per direction: pick_forward_path, pick_backward_path.
#include "cpu/max_pool/channels_last.h"
#include "cpu/max_pool/index_check.h"
#include "cpu/max_pool/plane_lanes.h"
#include "cpu/max_pool/plane_rows.h"
#include "cpu/max_pool/scatter.h"
#include "cpu/max_pool/walk.h"
#include "cpu/max_pool/window_fold.h"
#include "cpu/max_pool/write_pass.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace torch_aclnn::max_pool {
namespace {

enum class BackwardPath { kWritePlanes, kScatterPlanes, kWriteChannelsLast, kScatterChannelsLast };

// The backward's path. Channels adjacent in grad_input (channels_last_3d):
// disjoint windows over dense channels in one write pass
// (write_channels_last), else the scatter. NCDHW: disjoint windows in rows of
// 32 or more in one write pass per plane (write_plane), else the scatter: the
// write pass pays per pooled row and per element written, zero-fill and
// scatter per element zeroed and per term, so on narrow rows the scatter is
// the faster.
inline BackwardPath pick_backward_path(Planes op, const Geometry& g, const Window& w) {
  if (channels_adjacent(op, g)) {
    return disjoint_windows(w) && op.sK == g.C ? BackwardPath::kWriteChannelsLast : BackwardPath::kScatterChannelsLast;
  }
  return g.oW >= 32 && disjoint_windows(w) ? BackwardPath::kWritePlanes : BackwardPath::kScatterPlanes;
}

// NCDHW, disjoint windows: one write pass per plane (write_plane).
template <typename T, typename I>
void backward_write_planes(T* out, Planes op, const T* go, Planes gp, const I* ix, Planes xp, const Geometry& g,
                           const Window& w, FirstBad& bad) {
  // (grad_input is dense: channels_last_3d with C > 1 is the channels_last_3d kernels')
  TORCH_INTERNAL_ASSERT(op.sK == 1);
  const bool covered = windows_cover_self(g, w);
  at::parallel_for(0, g.N * g.C, cpu::grain_for(g.S + g.oS), [&](int64_t b, int64_t e) {
    std::vector<int32_t> hits(g.oW);
    std::vector<T> terms(g.oW);
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / g.C, c = t % g.C;
      T* dst = out + n * op.sN + c * op.sC;
      if (!covered) cpu::zero_fill(dst, g.S);
      const int64_t first = write_plane(dst, go + n * gp.sN + c * gp.sC, gp.sK, ix + n * xp.sN + c * xp.sC,
                                        xp.sK, g, w, hits.data(), terms.data());
      if (C10_UNLIKELY(first != kNone)) {
        bad.note(t * g.oS + first);
        return;  // the call raises: the rest of the result is not needed
      }
    }
  });
}

// NCDHW: each plane a scatter into the zeroed plane (scatter_plane), in
// grad_input itself or in a float32 row rounded once.
template <typename T, typename I>
void backward_scatter_planes(T* out, Planes op, const T* go, Planes gp, const I* ix, Planes xp, const Geometry& g,
                             const Window& w, FirstBad& bad) {
  using A = at::opmath_type<T>;
  TORCH_INTERNAL_ASSERT(op.sK == 1);  // (as in backward_write_planes)
  const bool direct = adds_in_place<T>(w);
  const TapCheck check(g, w);
  at::parallel_for(0, g.N * g.C, cpu::grain_for(g.S + g.oS), [&](int64_t b, int64_t e) {
    std::vector<A> row(direct ? 0 : g.S);
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / g.C, c = t % g.C;
      T* dst = out + n * op.sN + c * op.sC;
      const T* gs = go + n * gp.sN + c * gp.sC;
      const I* is = ix + n * xp.sN + c * xp.sC;
      int64_t first = kNone;
      if (direct) {
        cpu::zero_fill(dst, g.S);
        first = scatter_plane<T>(dst, gs, gp.sK, is, xp.sK, g, check);
      } else {
        std::fill(row.begin(), row.end(), A(0));
        first = scatter_plane<A>(row.data(), gs, gp.sK, is, xp.sK, g, check);
        cpu::narrow_row(row.data(), dst, g.S);
      }
      if (C10_UNLIKELY(first != kNone)) {
        bad.note(t * g.oS + first);
        return;  // the call raises: the rest of the result is not needed
      }
    }
  });
}

enum class ForwardPath { kChannelsLastVectors, kChannelsLast, kPlaneLanes, kPlaneRows, kStridedPlanes };

// The forward's path. channels_last_3d (channels adjacent in the result and
// self): a vector of channels per window where the values compare in float32
// and positions fit int32 (forward_channels_last_vectors), else the
// compiler's loop over the channels. NCDHW planes with dense D, H, W axes:
// small planes of narrow rows K planes at once (forward_plane_lanes, where
// lanes_of_planes says it folds less), else row by row (forward_plane).
// Other strided planes: window by window.
template <typename A, typename J>
inline ForwardPath pick_forward_path(Planes op, Planes xp, const Geometry& g, const Window& w) {
  constexpr bool vectors = std::is_same_v<A, float> && std::is_same_v<J, int32_t>;
  if (channels_adjacent(op, g) && xp.sC == 1) return vectors ? ForwardPath::kChannelsLastVectors : ForwardPath::kChannelsLast;
  if (xp.sK != 1) return ForwardPath::kStridedPlanes;
  return vectors && lanes_of_planes(g, w) ? ForwardPath::kPlaneLanes : ForwardPath::kPlaneRows;
}

template <typename T, typename J>
void forward_kernel(T* out, int64_t* ix, Planes op, const T* x, Planes xp, const Geometry& g, const Window& w) {
  using A = at::opmath_type<T>;
  const int64_t window_taps = w.kernel[0] * w.kernel[1] * w.kernel[2];  // (per window, for the grains)
  const ForwardPath path = pick_forward_path<A, J>(op, xp, g, w);
  if (path == ForwardPath::kChannelsLastVectors || path == ForwardPath::kChannelsLast) {
    // channels_last_3d: tasks are pooled rows (n, od, oh); per pooled
    // position, the window's taps inside self in increasing (d, h, w), each
    // tap's channels together.
    const int64_t grain = cpu::grain_for(g.oW * g.C * window_taps);
    if constexpr (std::is_same_v<A, float> && std::is_same_v<J, int32_t>) {
      if (path == ForwardPath::kChannelsLastVectors) return forward_channels_last_vectors(out, ix, op, x, xp, g, w, grain);
    }
    at::parallel_for(0, g.N * g.oD * g.oH, grain, [&](int64_t b, int64_t e) {
      std::vector<A> best(g.C);
      std::vector<J> where(g.C);
      for_each_channels_last_window(b, e, g, w, [&](int64_t n, int64_t o, int64_t, const auto& taps) {
        const T* xn = x + n * xp.sN;
        bool first = true;
        taps([&](int64_t pos) {
          const T* xt = xn + pos * xp.sK;
          if (first) {  // window_max's first tap: taken whatever its value
            for (int64_t c = 0; c < g.C; ++c) best[c] = static_cast<A>(xt[c]);
            std::fill(where.begin(), where.end(), static_cast<J>(pos));
            first = false;
            return;
          }
          fold_tap<1>(xt, 1, g.C, static_cast<J>(pos), J(0), best.data(), where.data());
        });
        store_result(out + n * op.sN + o * op.sK, ix + n * op.sN + o * op.sK, 1, g.C, best.data(), where.data(),
                     xn, xp.sK, 1);
      });
    });
    return;
  }
  if constexpr (std::is_same_v<A, float> && std::is_same_v<J, int32_t>) {
    if (path == ForwardPath::kPlaneLanes) return forward_plane_lanes(out, ix, op, x, xp, g, w);
  }
  // (a tap counts as 8 elements of work: a tap folded costs more than an
  // element of an elementwise op, and a small model's planes then split over
  // the threads)
  at::parallel_for(0, g.N * g.C, cpu::grain_for(8 * g.oS * window_taps), [&](int64_t b, int64_t e) {
    // (K elements of room past the row's last window: fold_tap_vectors)
    std::vector<A> best(xp.sK == 1 ? g.oW + at::vec::Vectorized<float>::size() : 0);
    std::vector<J> where(best.size());
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / g.C, c = t % g.C;
      const T* xs = x + n * xp.sN + c * xp.sC;
      T* os = out + n * op.sN + c * op.sC;
      int64_t* is = ix + n * op.sN + c * op.sC;
      if (path == ForwardPath::kPlaneRows) {  // dense D, H, W axes: row by row, vectorised
        if (w.stride[2] == 1) {
          forward_plane<1, T, J>(xs, os, is, op.sK, g, w, best.data(), where.data());
        } else if (w.stride[2] == 2) {
          forward_plane<2, T, J>(xs, os, is, op.sK, g, w, best.data(), where.data());
        } else {
          forward_plane<0, T, J>(xs, os, is, op.sK, g, w, best.data(), where.data());
        }
        continue;
      }
      const int64_t sK = xp.sK;
      const auto at = [&](int64_t pos) { return static_cast<A>(xs[pos * sK]); };
      int64_t o = 0;
      for (int64_t od = 0; od < g.oD; ++od) {
        for (int64_t oh = 0; oh < g.oH; ++oh) {
          for (int64_t ow = 0; ow < g.oW; ++ow, ++o) {
            A value;
            int64_t index;
            plane_window_max(at, od, oh, ow, g, w, value, index);
            os[o * op.sK] = xs[index * sK];  // the element itself: its bits, NaN payloads too
            is[o * op.sK] = index;
          }
        }
      }
    }
  });
}

// result, indices: dense in the result's format.
void forward_into(at::Tensor& result, at::Tensor& indices, const Plan2<Params>& p, const at::Tensor& self_,
                  at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, bool) {
  const at::Tensor self = planes::flattenable(self_, p.result.format);
  const Geometry g = geometry(self, result);
  TORCH_INTERNAL_ASSERT(indices.strides() == result.strides());  // (both allocated in the result's spec)
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "max_pool3d_with_indices", [&] {
    const auto run = [&](auto position) {
      forward_kernel<scalar_t, decltype(position)>(result.mutable_data_ptr<scalar_t>(),
                                                   indices.mutable_data_ptr<int64_t>(), planes_of(result),
                                                   self.const_data_ptr<scalar_t>(), planes_of(self), g,
                                                   p.params.window);
    };
    if (positions_fit<int32_t>(g)) {
      run(int32_t{});
    } else {
      run(int64_t{});
    }
  });
}

// grad_input: dense in the result's format, or in the other 5-D one (out=).
// Where its channels are adjacent, grad_output and indices are read with
// adjacent channels too (copied once if not).
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output_, const at::Tensor& self,
                   const at::Tensor& indices_, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef,
                   bool) {
  const Window& w = p.params.window;
  const Geometry g = geometry(self, grad_output_);
  const Planes op = planes_of(grad_input);
  const BackwardPath path = pick_backward_path(op, g, w);
  const bool channels_last = path == BackwardPath::kWriteChannelsLast || path == BackwardPath::kScatterChannelsLast;
  const auto operand = [&](const at::Tensor& t) {
    if (channels_last) {
      return planes::flat_stride(t) >= 0 && t.stride(1) == 1 ? t : t.contiguous(MemoryFormat::ChannelsLast3d);
    }
    return planes::flattenable(t, p.result.format);
  };
  const at::Tensor grad_output = operand(grad_output_);
  const at::Tensor indices = operand(indices_);
  FirstBad bad;
  AT_DISPATCH_INDEX_TYPES(indices.scalar_type(), "max_pool3d_with_indices_backward", [&] {
    const index_t* ix = indices.const_data_ptr<index_t>();
    const Planes xp = planes_of(indices);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "max_pool3d_backward", [&] {
      const auto kernel = path == BackwardPath::kWritePlanes         ? backward_write_planes<scalar_t, index_t>
                          : path == BackwardPath::kScatterPlanes     ? backward_scatter_planes<scalar_t, index_t>
                          : path == BackwardPath::kWriteChannelsLast ? write_channels_last<scalar_t, index_t>
                                                                     : scatter_channels_last<scalar_t, index_t>;
      kernel(grad_input.mutable_data_ptr<scalar_t>(), op, grad_output.const_data_ptr<scalar_t>(),
             planes_of(grad_output), ix, xp, g, w, bad);
    });
    check_found(bad, g, w, ix, xp);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  entry::impl<cpu::Backend, check_forward, forward_into>(m, "max_pool3d_with_indices");
  entry::impl<cpu::Backend, check_backward, backward_into>(m, "max_pool3d_with_indices_backward");
}

}  // namespace torch_aclnn::max_pool
