// CUDA kernels of the upsample-nearest family (docs/spec.md §1, §2).
//
// Same contract (csrc/contracts/upsample.h) and same index mapping
// (source_index and axis_scale are C10_HOST_DEVICE: host and device run the
// very same float32 arithmetic) as the CPU kernels in csrc/cpu/upsample.cpp.
// The per-element code is in csrc/cuda/upsample.cuh.
//
// Forward: one thread per output element computes src(dst) per axis and
// gathers. The input is read through its strides (no copy for permuted,
// sliced or channels_last_3d inputs).
//
// Backward: a deterministic gather, no atomics. One thread per grad_input
// element sums its window of grad_output in (d, h, w) order, from +0.0, in
// opmath (float32 for half/bfloat16), and rounds once: the same additions in
// the same order as the CPU kernel, so the results are bitwise equal to it.
// grad_output is read through its strides.
//
// The per-axis windows [lo[i], hi[i]) come from a small table kernel launched
// just before (2 * (iD + iH + iW) int64, a few KB): one thread per input index
// binary-searches src over [0, out) with the forward's own source_index. The
// tables are built on the device rather than on the host and copied because
//   - a copy from pageable host memory synchronises with the host and cannot
//     be captured in a CUDA graph; the table kernel is just another launch on
//     the current stream;
//   - the windows are then the exact preimages of the forward's mapping, with
//     no inverse formula carrying its own float rounding (aten CUDA's
//     ceil(i * out / in) window can disagree with its forward by one).
// Computing the windows per element instead would cost six binary searches
// per element; the tables cost one extra launch and cached loads. An axis
// that is a uniform fold (integer upsampling by L, checked on the host
// against the forward's mapping: uniform_fold) needs no table: its window is
// [L*i, L*i + L). When every axis the kernel reads is one, the launch builds
// no table (upsample.cuh, Windows): one kernel, no allocation.
//
// Which kernel a launch takes is one host function (upsample.cuh,
// backward_path): where grad_input's rows (NCDHW) or channels
// (channels_last_3d) split into whole, aligned 16-byte packs, a thread sums a
// pack (4 float32, 8 half/bfloat16, 2 float64) and writes it with one 16-byte
// store, with its elements' loads independent of each other:
//   - channels_last_3d: the pack's channels share one window, and each tap is
//     one 16-byte load of grad_output's channels (channels dense in it);
//   - NCDHW, W a uniform fold by L in {1, 2, 4} with dense, aligned
//     grad_output rows: L 16-byte loads per grad_output row;
//   - NCDHW otherwise: each element's own W window, read element by element.
// A window loop along W whose windows have at most 2 elements is unrolled,
// its loads predicated on the window's end. Elsewhere one thread per element.
// Every kernel makes the same additions in the same order, so all are
// bitwise equal to the CPU kernel.
//
// Layouts: the result is written densely in its memory format. Two kernel
// variants walk it in memory order, NCDHW (contiguous) or NDHWC
// (channels_last_3d), so writes are coalesced and a channels_last_3d tensor
// is never transposed through a copy.
//
// Indexing: 32-bit (with fast division by invariant integers) when every
// offset fits, 64-bit otherwise (aten's CUDA upsample is capped at 2^31).
#include "cuda/launch.cuh"
#include "cuda/upsample.cuh"
#include "cuda/upsample_launch.cuh"

#include <ATen/Dispatch.h>
#include <torch/library.h>

namespace torch_aclnn::upsample {
namespace {

using c10::MemoryFormat;
using cuda::kThreads;
using cuda::Unravel5;
using kernels::Strides5;
using kernels::strides_of;

// ---------------------------------------------------------------------------
// Forward

template <Mode mode, bool channels_last, typename scalar_t, typename index_t>
__global__ void __launch_bounds__(kThreads)
forward_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, index_t total,
               Unravel5<index_t> unravel, Strides5<index_t> st, Axes a) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    kernels::forward_element<mode, channels_last>(p, in, out, unravel, st, a);
  }
}

template <Mode mode>
void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self, c10::SymIntArrayRef output_size, Scale sd,
                  Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  const Axes a = make_axes(self.sizes(), C10_AS_INTARRAYREF_SLOW(output_size), scales);
  const bool cl = p.result.format == MemoryFormat::ChannelsLast3d;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "upsample_nearest3d_cuda", [&] {
    kernels::launch_walk<scalar_t>(self, out, cl, [](auto c, auto index_tag) {
      return forward_kernel<mode, decltype(c)::value, scalar_t, decltype(index_tag)>;
    }, a);
  });
}

// ---------------------------------------------------------------------------
// Backward

// One thread per unit of the path's kernel (upsample.cuh, backward_unit).
template <kernels::Kernel kernel, int Taps, bool channels_last, typename scalar_t, typename index_t>
__global__ void __launch_bounds__(kThreads)
backward_kernel(const scalar_t* __restrict__ go, scalar_t* __restrict__ gi, index_t total,
                Unravel5<index_t> unravel, Strides5<index_t> st, kernels::Windows<index_t> win) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, q, total) {
    kernels::backward_unit<kernel, Taps, channels_last>(q, go, gi, unravel, st, win);
  }
}

// grad_input is dense in the result's layout or the other 5-D one and shares
// no memory with grad_output.
template <Mode mode>
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output,
                   c10::SymIntArrayRef output_size, c10::SymIntArrayRef input_size, Scale sd, Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  const MemoryFormat fmt = dense_format_5d(grad_input, p.result.format);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const Axes a = make_axes(C10_AS_INTARRAYREF_SLOW(input_size), C10_AS_INTARRAYREF_SLOW(output_size), scales);
  const bool cl = fmt == MemoryFormat::ChannelsLast3d;
  const std::array<int64_t, 3> folds = kernels::uniform_folds<mode>(a);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(),
                                  "upsample_nearest3d_backward_cuda", [&] {
    const kernels::Path path = kernels::backward_path<mode, scalar_t>(a, folds, grad_output, grad_input, cl);
    const int64_t units = kernels::units_of<scalar_t>(grad_input, path);
    cuda::with_index_type(cuda::fits_32bit({&grad_output, &grad_input}), [&](auto index_tag) {
      using index_t = decltype(index_tag);
      // Each axis's windows: its fold, or the table, built only if an axis the kernel reads needs it.
      kernels::Windows<index_t> win = kernels::folds_of<index_t>(a, folds);
      at::Tensor table;
      if (kernels::needs_table(win, path)) {
        table = kernels::window_table<Axes, kernels::window_entry<mode>>(grad_input, kernels::window_entries(a), a);
        win.table = table.const_data_ptr<int64_t>();
      }
      kernels::with_path(path, cl, [&](auto kernel, auto taps, auto c) {
        backward_kernel<decltype(kernel)::value, decltype(taps)::value, decltype(c)::value>
            <<<cuda::blocks_for(units), kThreads, 0, stream>>>(
                grad_output.const_data_ptr<scalar_t>(), grad_input.mutable_data_ptr<scalar_t>(),
                static_cast<index_t>(units), kernels::unit_walk_of<scalar_t, index_t>(grad_input, path, cl),
                strides_of<index_t>(grad_output), win);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    });
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  using B = cuda::Backend;
  constexpr Mode N = Mode::Nearest, E = Mode::NearestExact;
  entry::impl<B, check_forward<N>, forward_into<N>>(m, "upsample_nearest3d");
  entry::impl<B, check_backward<N>, backward_into<N>>(m, "upsample_nearest3d_backward");
  entry::impl<B, check_forward<E>, forward_into<E>>(m, "upsample_nearest_exact3d");
  entry::impl<B, check_backward<E>, backward_into<E>>(m, "upsample_nearest_exact3d_backward");
}

}  // namespace torch_aclnn::upsample
