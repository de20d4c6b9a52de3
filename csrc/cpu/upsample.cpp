// CPU kernels of the upsample-nearest family (spec §1, §2).
//
// Forward: a gather through per-axis offset tables.
// Backward: a deterministic gather. Every grad_input element sums its window
// of grad_output in (d, h, w) order, starting from +0.0, in opmath (float32
// for half/bfloat16), rounded once. Per-axis window tables replace per-element
// float math; the work is split over all rows / pixels of grad_input.
#include "contracts/upsample.h"
#include "cpu/cpu_utils.h"

#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <cstring>
#include <vector>

namespace torch_aclnn::upsample {
namespace {

using c10::MemoryFormat;
using cpu::advance;
using cpu::grain_for;
using cpu::unravel;

struct Axes {
  int64_t in[3];
  int64_t out[3];
  float s[3];
};

Axes make_axes(at::IntArrayRef input_size, at::IntArrayRef output_size, const Scale (&scales)[3]) {
  Axes a;
  const bool use = use_scales(scales);
  for (int i = 0; i < 3; ++i) {
    a.in[i] = input_size[2 + i];
    a.out[i] = output_size[i];
    a.s[i] = axis_scale(use, use ? *scales[i] : 0.0, a.in[i], a.out[i]);
  }
  return a;
}

// src(dst) for every dst of one axis.
template <Mode mode>
std::vector<int64_t> source_table(const Axes& a, int axis) {
  std::vector<int64_t> t(a.out[axis]);
  for (int64_t dst = 0; dst < a.out[axis]; ++dst) {
    t[dst] = source_index<mode>(a.s[axis], dst, a.in[axis]);
    TORCH_INTERNAL_ASSERT(t[dst] >= 0 && t[dst] < a.in[axis]);
  }
  return t;
}

// For every input index i of one axis, the output window [lo[i], hi[i]) of
// the dst with src(dst) == i (src is non-decreasing, so it is one range;
// empty when no output maps to i).
struct Windows {
  std::vector<int64_t> lo, hi;
};

template <Mode mode>
Windows window_table(const Axes& a, int axis) {
  Windows w;
  w.lo.assign(a.in[axis], 0);
  w.hi.assign(a.in[axis], 0);
  std::vector<int64_t> src = source_table<mode>(a, axis);
  for (int64_t dst = 0; dst < a.out[axis]; ++dst) {
    const int64_t i = src[dst];
    TORCH_INTERNAL_ASSERT(dst == 0 || src[dst - 1] <= i, "source index is not monotonic");
    if (w.hi[i] == 0) w.lo[i] = dst;
    w.hi[i] = dst + 1;
  }
  return w;
}

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
          std::memcpy(dst, src, sizeof(scalar_t) * C);
        } else {
          for (int64_t c = 0; c < C; ++c) dst[c] = src[c * sC];
        }
      }
    });
  }
}

template <Mode mode>
at::Tensor forward_cpu(const at::Tensor& self, c10::SymIntArrayRef output_size_, Scale sd, Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  check_forward(mode, self, output_size_, scales);
  const auto output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  const MemoryFormat fmt = result_format(self);
  at::Tensor out = at::empty({self.size(0), self.size(1), output_size[0], output_size[1], output_size[2]},
                             self.options().memory_format(fmt));
  if (out.numel() == 0) return out;
  const Axes a = make_axes(self.sizes(), output_size, scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "upsample_nearest3d_cpu", [&] {
    forward_kernel<mode, scalar_t>(self, out, a, fmt);
  });
  return out;
}

// ---------------------------------------------------------------------------
// Backward

// go and gi are both contiguous in `fmt`.
template <Mode mode, typename scalar_t>
void backward_kernel(const at::Tensor& go, at::Tensor& gi, const Axes& a, MemoryFormat fmt) {
  using acc_t = at::opmath_type<scalar_t>;
  const int64_t N = gi.size(0), C = gi.size(1);
  const int64_t iD = a.in[0], iH = a.in[1], iW = a.in[2];
  const int64_t oD = a.out[0], oH = a.out[1], oW = a.out[2];
  const Windows wd = window_table<mode>(a, 0), wh = window_table<mode>(a, 1), ww = window_table<mode>(a, 2);
  const scalar_t* g = go.const_data_ptr<scalar_t>();
  scalar_t* o = gi.mutable_data_ptr<scalar_t>();

  if (fmt == MemoryFormat::Contiguous) {
    // One grad_input row (n, c, i, j, :) at a time, accumulated in a row buffer:
    // for each (d, h) of the window, every k adds its w-window. Each element
    // still sums in (d, h, w) order.
    const int64_t sizes[4] = {N * C, iD, iH, 1};
    const int64_t rows = N * C * iD * iH;
    const int64_t cost = std::max<int64_t>(1, oD * oH * oW / std::max<int64_t>(1, iD * iH));
    at::parallel_for(0, rows, grain_for(cost), [&](int64_t b, int64_t e) {
      std::vector<acc_t> acc(iW);
      int64_t idx[4];
      unravel<4>(b, sizes, idx);
      const int64_t* lo = ww.lo.data();
      const int64_t* hi = ww.hi.data();
      for (int64_t r = b; r < e; ++r, advance<4>(sizes, idx)) {
        const int64_t nc = idx[0], i = idx[1], j = idx[2];
        std::fill(acc.begin(), acc.end(), acc_t(0));
        for (int64_t d = wd.lo[i]; d < wd.hi[i]; ++d) {
          for (int64_t h = wh.lo[j]; h < wh.hi[j]; ++h) {
            const scalar_t* row = g + ((nc * oD + d) * oH + h) * oW;
            for (int64_t k = 0; k < iW; ++k) {
              acc_t s = acc[k];
              for (int64_t w = lo[k]; w < hi[k]; ++w) s += static_cast<acc_t>(row[w]);
              acc[k] = s;
            }
          }
        }
        scalar_t* dst = o + r * iW;
        for (int64_t k = 0; k < iW; ++k) dst[k] = static_cast<scalar_t>(acc[k]);
      }
    });
  } else {
    // channels_last_3d: one pixel (n, i, j, k, :) at a time, C contiguous.
    const int64_t sizes[4] = {N, iD, iH, iW};
    const int64_t pixels = N * iD * iH * iW;
    const int64_t cost = std::max<int64_t>(1, C * oD * oH * oW / std::max<int64_t>(1, iD * iH * iW));
    at::parallel_for(0, pixels, grain_for(cost), [&](int64_t b, int64_t e) {
      std::vector<acc_t> acc(C);
      int64_t idx[4];
      unravel<4>(b, sizes, idx);
      for (int64_t p = b; p < e; ++p, advance<4>(sizes, idx)) {
        const int64_t n = idx[0], i = idx[1], j = idx[2], k = idx[3];
        std::fill(acc.begin(), acc.end(), acc_t(0));
        for (int64_t d = wd.lo[i]; d < wd.hi[i]; ++d) {
          for (int64_t h = wh.lo[j]; h < wh.hi[j]; ++h) {
            for (int64_t w = ww.lo[k]; w < ww.hi[k]; ++w) {
              const scalar_t* px = g + (((n * oD + d) * oH + h) * oW + w) * C;
              for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<acc_t>(px[c]);
            }
          }
        }
        scalar_t* dst = o + p * C;
        for (int64_t c = 0; c < C; ++c) dst[c] = static_cast<scalar_t>(acc[c]);
      }
    });
  }
}

template <Mode mode>
void backward_into(const at::Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,
                   const Scale (&scales)[3], at::Tensor& grad_input, MemoryFormat fmt) {
  if (grad_input.numel() == 0) return;
  const at::Tensor go = grad_output.contiguous(fmt);
  const Axes a = make_axes(input_size, output_size, scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, go.scalar_type(), "upsample_nearest3d_backward_cpu", [&] {
    backward_kernel<mode, scalar_t>(go, grad_input, a, fmt);
  });
}

template <Mode mode>
at::Tensor backward_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                        c10::SymIntArrayRef input_size, Scale sd, Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  check_backward(mode, grad_output, output_size, input_size, scales);
  const MemoryFormat fmt = result_format(grad_output);
  const auto in_size = C10_AS_INTARRAYREF_SLOW(input_size);
  at::Tensor grad_input = at::empty(in_size, grad_output.options().memory_format(fmt));
  backward_into<mode>(grad_output, C10_AS_INTARRAYREF_SLOW(output_size), in_size, scales, grad_input, fmt);
  return grad_input;
}

template <Mode mode>
at::Tensor& backward_out_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                             c10::SymIntArrayRef input_size, Scale sd, Scale sh, Scale sw,
                             at::Tensor& grad_input) {
  const Scale scales[3] = {sd, sh, sw};
  check_backward(mode, grad_output, output_size, input_size, scales, grad_input);
  at::assert_no_internal_overlap(grad_input);
  const auto out_size = C10_AS_INTARRAYREF_SLOW(output_size);
  const auto in_size = C10_AS_INTARRAYREF_SLOW(input_size);
  // Write straight into grad_input when it is dense in a layout the kernel
  // produces and shares no memory with grad_output; otherwise go through a
  // temporary.
  MemoryFormat fmt = result_format(grad_output);
  if (!grad_input.is_contiguous(fmt)) {
    fmt = fmt == MemoryFormat::Contiguous ? MemoryFormat::ChannelsLast3d : MemoryFormat::Contiguous;
  }
  if (grad_input.is_contiguous(fmt) && at::get_overlap_status(grad_input, grad_output) == at::MemOverlapStatus::No) {
    backward_into<mode>(grad_output, out_size, in_size, scales, grad_input, fmt);
  } else {
    fmt = result_format(grad_output);
    at::Tensor tmp = at::empty(in_size, grad_output.options().memory_format(fmt));
    backward_into<mode>(grad_output, out_size, in_size, scales, tmp, fmt);
    grad_input.copy_(tmp);
  }
  return grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  m.impl("upsample_nearest3d", forward_cpu<Mode::Nearest>);
  m.impl("upsample_nearest3d_backward", backward_cpu<Mode::Nearest>);
  m.impl("upsample_nearest3d_backward.grad_input", backward_out_cpu<Mode::Nearest>);
  m.impl("upsample_nearest_exact3d", forward_cpu<Mode::NearestExact>);
  m.impl("upsample_nearest_exact3d_backward", backward_cpu<Mode::NearestExact>);
  m.impl("upsample_nearest_exact3d_backward.grad_input", backward_out_cpu<Mode::NearestExact>);
}

}  // namespace torch_aclnn::upsample
