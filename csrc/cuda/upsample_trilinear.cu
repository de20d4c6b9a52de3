// CUDA kernels of the upsample-trilinear family (docs/spec.md §10).
//
// Same contract and the same taps and weights (contracts/upsample_trilinear.h:
// ratio, taps and window are C10_HOST_DEVICE, every multiply and add rounded
// on its own) as the CPU kernels in csrc/cpu/upsample_trilinear.cpp. The
// per-element code is in csrc/cuda/upsample_trilinear.cuh.
//
// Forward: one thread per output element, walking the result in memory order
// (NCDHW or NDHWC, so writes are coalesced), reading self through its strides:
// the CPU kernel's eight terms, grouped the same way.
//
// Backward: a deterministic gather, no atomics. A small table kernel first
// finds, for every input index of each axis, the range of output positions
// whose taps land on it (2 * (iD + iH + iW) int64, one binary search per
// entry with the forward's own taps). Then one thread per grad_input element
// sums its taps, W outermost, D, then H innermost, in increasing position and
// tap 0 before tap 1, from +0.0, in opmath (float32 for half/bfloat16),
// rounded once: the same additions in the same order as the CPU kernel, so
// the results are bitwise equal to it. grad_output is read through its
// strides.
//
// Indexing: 32-bit when every offset fits, 64-bit otherwise.
#include "cuda/launch.cuh"
#include "cuda/upsample_launch.cuh"
#include "cuda/upsample_trilinear.cuh"

#include <ATen/Dispatch.h>
#include <torch/library.h>

namespace torch_aclnn::upsample_trilinear {
namespace {

using c10::MemoryFormat;
using cuda::kThreads;
using cuda::Unravel5;
using kernels::Strides5;

template <bool channels_last, typename scalar_t, typename index_t>
__global__ void __launch_bounds__(kThreads)
forward_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, index_t total, Unravel5<index_t> walk,
               Strides5<index_t> st, Geometry g) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    kernels::forward_element<channels_last>(p, in, out, walk, st, g);
  }
}

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self, c10::SymIntArrayRef output_size,
                  bool align_corners, Scale sd, Scale sh, Scale sw) {
  if (out.numel() == 0) return;
  const Scale scales[3] = {sd, sh, sw};
  const Geometry g = make_geometry(self.sizes(), C10_AS_INTARRAYREF_SLOW(output_size), align_corners, scales);
  const bool cl = p.result.format == MemoryFormat::ChannelsLast3d;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "upsample_trilinear3d_cuda", [&] {
    upsample::kernels::launch_walk<scalar_t>(self, out, cl, [](auto c, auto index_tag) {
      return forward_kernel<decltype(c)::value, scalar_t, decltype(index_tag)>;
    }, g);
  });
}

template <bool channels_last, typename scalar_t, typename index_t>
__global__ void __launch_bounds__(kThreads)
backward_kernel(const scalar_t* __restrict__ go, scalar_t* __restrict__ gi, index_t total, Unravel5<index_t> walk,
                Strides5<index_t> st, const int64_t* __restrict__ table, Geometry g) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    kernels::backward_element<channels_last>(p, go, gi, walk, st, table, g);
  }
}

// grad_input is dense in the result's layout or the other 5-D one and shares
// no memory with grad_output.
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output,
                   c10::SymIntArrayRef output_size, c10::SymIntArrayRef input_size, bool align_corners, Scale sd,
                   Scale sh, Scale sw) {
  if (grad_input.numel() == 0) return;
  const Scale scales[3] = {sd, sh, sw};
  const MemoryFormat fmt = dense_format_5d(grad_input, p.result.format);
  const bool cl = fmt == MemoryFormat::ChannelsLast3d;
  const Geometry g = make_geometry(C10_AS_INTARRAYREF_SLOW(input_size), C10_AS_INTARRAYREF_SLOW(output_size),
                                   align_corners, scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(),
                                  "upsample_trilinear3d_backward_cuda", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const at::Tensor table = upsample::kernels::window_table<Geometry, kernels::window_entry<acc_t>>(
        grad_input, kernels::window_entries(g), g);
    upsample::kernels::launch_walk<scalar_t>(grad_output, grad_input, cl, [](auto c, auto index_tag) {
      return backward_kernel<decltype(c)::value, scalar_t, decltype(index_tag)>;
    }, table.const_data_ptr<int64_t>(), g);
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  using B = cuda::Backend;
  entry::impl<B, check_forward, forward_into>(m, kForward);
  entry::impl<B, check_backward, backward_into>(m, kBackward);
}

}  // namespace torch_aclnn::upsample_trilinear
