// CPU kernels of the upsample-nearest family (docs/spec.md §1, §2).
//
// Forward: a gather through per-axis offset tables.
// Backward: a deterministic gather. Every grad_input element sums its window
// of grad_output in (d, h, w) order, starting from +0.0, in opmath (float32
// for half/bfloat16), rounded once. Per-axis window tables replace per-element
// float math; the work is split over all rows / pixels of grad_input. The
// backward's paths (one per layout and window shape, each in its own header
// under cpu/upsample/) are picked in one place: pick_backward_path.
#include "common/entry.h"
#include "contracts/upsample.h"
#include "cpu/cpu_utils.h"
#include "cpu/upsample/fold_by_2.h"
#include "cpu/upsample/fold_rows.h"
#include "cpu/upsample/halved_rows.h"
#include "cpu/upsample/pixel_vector_rows.h"
#include "cpu/upsample/pixel_windows.h"
#include "cpu/upsample/row_fold.h"
#include "cpu/upsample/sparse_rows.h"
#include "cpu/upsample/window_blocks.h"
#include "cpu/upsample/windows.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <type_traits>
#include <vector>

namespace torch_aclnn::upsample {
namespace {

using c10::MemoryFormat;
using cpu::advance;
using cpu::grain_for;
using cpu::unravel;


// ---------------------------------------------------------------------------
// Forward

template <Mode mode, typename scalar_t>
void forward_kernel(const at::Tensor& self, at::Tensor& out, const Axes& a, MemoryFormat fmt) {
  const int64_t N = self.size(0), C = self.size(1);
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  const auto st = self.strides();
  std::vector<int64_t> offD = source_table<mode>(a, 0), offH = source_table<mode>(a, 1),
                       offW = source_table<mode>(a, 2);
  for (auto& v : offD) v *= st[2];
  for (auto& v : offH) v *= st[3];
  for (auto& v : offW) v *= st[4];
  const scalar_t* in = self.const_data_ptr<scalar_t>();
  scalar_t* o = out.mutable_data_ptr<scalar_t>();

  if (fmt == MemoryFormat::Contiguous) {
    const int64_t sizes[4] = {N, C, oD, oH};
    const int64_t rows = N * C * oD * oH;
    at::parallel_for(0, rows, grain_for(oW), [&](int64_t b, int64_t e) {
      int64_t idx[4];
      unravel<4>(b, sizes, idx);
      for (int64_t r = b; r < e; ++r, advance<4>(sizes, idx)) {
        const scalar_t* src = in + idx[0] * st[0] + idx[1] * st[1] + offD[idx[2]] + offH[idx[3]];
        scalar_t* dst = o + r * oW;
        for (int64_t w = 0; w < oW; ++w) dst[w] = src[offW[w]];
      }
    });
  } else {
    const int64_t sizes[4] = {N, oD, oH, oW};
    const int64_t pixels = N * oD * oH * oW;
    const int64_t sC = st[1];
    at::parallel_for(0, pixels, grain_for(C), [&](int64_t b, int64_t e) {
      int64_t idx[4];
      unravel<4>(b, sizes, idx);
      for (int64_t p = b; p < e; ++p, advance<4>(sizes, idx)) {
        const scalar_t* src = in + idx[0] * st[0] + offD[idx[1]] + offH[idx[2]] + offW[idx[3]];
        scalar_t* dst = o + p * C;
        if (sC == 1) {
          // Vector copies inline (a memcpy call per pixel costs more than
          // the copy for the usual few dozen channels); bits, so any dtype.
          using BVec = at::vec::Vectorized<int8_t>;
          const auto* s8 = reinterpret_cast<const int8_t*>(src);
          auto* d8 = reinterpret_cast<int8_t*>(dst);
          const int64_t bytes = static_cast<int64_t>(sizeof(scalar_t)) * C;
          int64_t i = 0;
          for (; i + BVec::size() <= bytes; i += BVec::size()) BVec::loadu(s8 + i).store(d8 + i);
          if (i < bytes) BVec::loadu(s8 + i, bytes - i).store(d8 + i, static_cast<int>(bytes - i));
        } else {
          for (int64_t c = 0; c < C; ++c) dst[c] = src[c * sC];
        }
      }
    });
  }
}

template <Mode mode>
void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self, c10::SymIntArrayRef output_size, Scale sd,
                  Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  const Axes a = make_axes(self.sizes(), C10_AS_INTARRAYREF_SLOW(output_size), scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "upsample_nearest3d_cpu", [&] {
    forward_kernel<mode, scalar_t>(self, out, a, p.result.format);
  });
}

// ---------------------------------------------------------------------------
// Backward

// Whether the NCDHW backward takes sparse_rows: rows of at most 32 elements
// (the row-by-row fold pays more per row than such a row costs to write), and
// no window of any axis holds more than one output (down-scaling, or keeping
// a size). Wider rows take halved_rows when W is halved, else the row-by-row
// fold: zeroing every row and then writing the ones that receive outputs
// was faster out= but slower on a freshly allocated result.
bool use_sparse_rows(const Axes& a, const Windows& wd, const Windows& wh, const Windows& ww) {
  return a.in[2] <= 32 && max_window(wd) <= 1 && max_window(wh) <= 1 && max_window(ww) <= 1;
}

// The backward's paths; each is a function in its own header.
enum class Path {
  SparseRows,       // NCDHW, short rows, every window <= 1 output      (sparse_rows.h)
  HalvedRows,       // NCDHW, W halved, D and H windows <= 1 output     (halved_rows.h)
  FoldBy2Rows,      // NCDHW row by row, W up-scaled by exactly 2       (fold_rows.h + fold_by_2.h)
  WindowBlockRows,  // NCDHW row by row, AVX-512 permute blocks         (fold_rows.h + window_blocks.h)
  FoldRows,         // NCDHW row by row, generic tap fold               (fold_rows.h)
  PixelVectorRows,  // channels_last_3d, C == one opmath vector         (pixel_vector_rows.h)
  PixelWindows,     // channels_last_3d, any C                          (pixel_windows.h)
};

struct BackwardPlan {
  Path path;
  RowFold fold;  // the NCDHW row paths' W fold
};

// The one place the backward's path is chosen.
template <typename scalar_t>
BackwardPlan pick_backward_path(MemoryFormat fmt, const Axes& a, const Windows& wd, const Windows& wh,
                                const Windows& ww, int64_t C) {
  if (fmt != MemoryFormat::Contiguous) {
    constexpr int64_t K = at::vec::Vectorized<at::opmath_type<scalar_t>>::size();
    return {C == K ? Path::PixelVectorRows : Path::PixelWindows, {}};
  }
  if (use_sparse_rows(a, wd, wh, ww)) return {Path::SparseRows, {}};
  RowFold fold = make_row_fold(ww, a.in[2], a.out[2]);
  if (fold.halved && max_window(wd) <= 1 && max_window(wh) <= 1) return {Path::HalvedRows, std::move(fold)};
  if (fold.uniform == 2) return {Path::FoldBy2Rows, std::move(fold)};
#if defined(CPU_CAPABILITY_AVX512)
  if (!std::is_same_v<scalar_t, double> && fold.blocks * 16 >= a.in[2]) return {Path::WindowBlockRows, std::move(fold)};
#endif
  return {Path::FoldRows, std::move(fold)};
}

// go and gi are both contiguous in `fmt`.
template <Mode mode, typename scalar_t>
void backward_kernel(const at::Tensor& go, at::Tensor& gi, const Axes& a, MemoryFormat fmt) {
  const int64_t N = gi.size(0), C = gi.size(1);
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  const Windows wd = window_table<mode>(a, 0), wh = window_table<mode>(a, 1), ww = window_table<mode>(a, 2);
  const scalar_t* g = go.const_data_ptr<scalar_t>();
  scalar_t* o = gi.mutable_data_ptr<scalar_t>();
  const BackwardPlan plan = pick_backward_path<scalar_t>(fmt, a, wd, wh, ww, C);
  const RowFold& fold = plan.fold;
  // Non-temporal stores (cpu/elementwise.h) for the whole blocks of the x2
  // fold and of fold_window_blocks when grad_output and grad_input together
  // exceed the last-level cache and every row starts on a 64-byte boundary
  // (so every block does).
  const auto stream = [&] {
    return cpu::stream_stores(go.nbytes() + gi.nbytes()) && reinterpret_cast<uintptr_t>(o) % 64 == 0 &&
           (iW * sizeof(scalar_t)) % 64 == 0;
  };
  // channels_last_3d: rows of pixels (n, i, j, :, :), each pixel's share of its window.
  const auto pixel_grain = [&] {
    return grain_for(iW * std::max<int64_t>(C, C * oD * oH * oW / std::max<int64_t>(1, iD * iH * iW)));
  };
  switch (plan.path) {
    case Path::SparseRows:
      return sparse_rows<scalar_t>(g, o, a, wd, wh, ww, N * C);
    case Path::HalvedRows:
      return halved_rows<scalar_t>(g, o, a, wd, wh, fold.phase, N * C);
    case Path::FoldBy2Rows: {
      const bool s = stream();
      return fold_rows(g, o, a, wd, wh, fold, N * C, s, [&] {
        return [&](scalar_t* dst, const Window2<scalar_t>& win) { fold_by_2(dst, win, iW, s); };
      });
    }
    case Path::WindowBlockRows: {
#if defined(CPU_CAPABILITY_AVX512)
      if constexpr (!std::is_same_v<scalar_t, double>) {
        const bool s = stream();
        return fold_rows(g, o, a, wd, wh, fold, N * C, s, [&] {
          return [&](scalar_t* dst, const Window2<scalar_t>& win) {
            fold_window_blocks(dst, win, fold, iW, s && std::is_same_v<scalar_t, float>);
          };
        });
      }
#endif
      TORCH_INTERNAL_ASSERT(false, "upsample backward: no permute blocks in this build");
    }
    case Path::FoldRows:
      return fold_rows(g, o, a, wd, wh, fold, N * C, stream(), [&] { return GenericFold<scalar_t>(fold, iW, oW); });
    case Path::PixelVectorRows:
      return pixel_vector_rows<scalar_t>(g, o, a, wd, wh, ww, N, pixel_grain());
    case Path::PixelWindows:
      return pixel_windows<scalar_t>(g, o, a, wd, wh, ww, N, C, pixel_grain());
  }
}

// grad_input: dense in the result's layout or the other 5-D one.
template <Mode mode>
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output,
                   c10::SymIntArrayRef output_size, c10::SymIntArrayRef input_size, Scale sd, Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  const MemoryFormat fmt = dense_format_5d(grad_input, p.result.format);
  const at::Tensor go = grad_output.contiguous(fmt);
  const Axes a = make_axes(C10_AS_INTARRAYREF_SLOW(input_size), C10_AS_INTARRAYREF_SLOW(output_size), scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "upsample_nearest3d_backward_cpu", [&] {
    backward_kernel<mode, scalar_t>(go, grad_input, a, fmt);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  using B = cpu::Backend;
  constexpr Mode N = Mode::Nearest, E = Mode::NearestExact;
  entry::impl<B, check_forward<N>, forward_into<N>>(m, "upsample_nearest3d");
  entry::impl<B, check_backward<N>, backward_into<N>>(m, "upsample_nearest3d_backward");
  entry::impl<B, check_forward<E>, forward_into<E>>(m, "upsample_nearest_exact3d");
  entry::impl<B, check_backward<E>, backward_into<E>>(m, "upsample_nearest_exact3d_backward");
}

}  // namespace torch_aclnn::upsample
