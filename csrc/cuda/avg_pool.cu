// CUDA kernels of the AvgPool3d family (docs/spec.md §12): avg_pool3d and
// avg_pool3d_backward.
//
// Same contract (csrc/contracts/avg_pool.h), result layouts and out= rules
// as the CPU kernels in csrc/cpu/avg_pool.cpp; the per-element code is in
// csrc/cuda/avg_pool.cuh. Inputs are read dense in the result's layout
// (contiguous or channels_last_3d; another layout is copied once).
//
// Forward: one thread per pooled element, in the result's memory order
// (coalesced writes), sums its window's taps inside self in increasing
// (d, h, w) in the opmath type and divides by the window's divisor
// (forward_element): the CPU kernel's operations in its order, the same
// bits.
//
// Backward, a gather, deterministic, no atomics: one thread per grad_input
// element, in grad_input's memory order, sums grad_output[o] / divisor(o)
// over the pooled positions whose windows cover it in increasing
// (od, oh, ow) (gather_element), from 0, and writes the element once: the
// CPU kernel's terms in its order, the same bits on every run, unlike
// aten's CUDA backward (atomicAdd in whatever order the threads run, refused
// under torch.use_deterministic_algorithms(True)). Memory traffic: each
// grad_output element is read by the threads its window covers (neighbours:
// the caches absorb it); each grad_input element is written once (no
// zero-fill pass). Index math is 64-bit.
#include "cuda/avg_pool.cuh"
#include "cuda/launch.cuh"

#include <ATen/Dispatch.h>
#include <torch/library.h>

namespace torch_aclnn::avg_pool {
namespace {

using cuda::kThreads;
using kernels::Dims;

template <bool backward, typename T>
__global__ void __launch_bounds__(kThreads)
element_kernel(int64_t total, const T* __restrict__ in, T* __restrict__ out, Dims g) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(int64_t, p, total) { out[p] = kernels::element<backward>(in, p, g); }
}

// The geometry of a call: big has self's shape, small the pooled shape;
// the layout is the result's (dense in channels_last_3d, else contiguous).
Dims dims_for(const at::Tensor& big, const at::Tensor& small, const at::Tensor& result, const Window& w) {
  const int64_t d = big.dim() - 3;
  const int64_t C = big.dim() == 5 ? big.size(1) : 1;
  const bool cl = big.dim() == 5 && C > 1 && !result.is_contiguous() &&
                  result.is_contiguous(c10::MemoryFormat::ChannelsLast3d);
  return kernels::dims_of(C, big.size(d), big.size(d + 1), big.size(d + 2), small.size(d), small.size(d + 1),
                          small.size(d + 2), w, cl);
}

inline c10::MemoryFormat format_of(const Dims& g) {
  return g.channels_last ? c10::MemoryFormat::ChannelsLast3d : c10::MemoryFormat::Contiguous;
}

// One thread per element of out, dense in the result's memory format or
// (out=) in the other 5-D one, reading in (a dense copy in out's layout): the
// forward pools self into the result, the backward gathers grad_output (in)
// into grad_input (out), which shares no memory with it. pooled: the call's
// tensor of the pooled shape.
template <bool backward>
void launch(at::Tensor& out, const at::Tensor& in, const at::Tensor& self, const at::Tensor& pooled,
            const Window& w) {
  const Dims g = dims_for(self, pooled, out, w);
  const at::Tensor x = in.contiguous(format_of(g));
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t total = out.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(),
                                  backward ? "avg_pool3d_backward_cuda" : "avg_pool3d_cuda", [&] {
    element_kernel<backward, scalar_t><<<cuda::blocks_for(total), kThreads, 0, stream>>>(
        total, x.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), g);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

void forward_into(at::Tensor& result, const Plan& plan, const at::Tensor& self, at::IntArrayRef, at::IntArrayRef,
                  at::IntArrayRef, bool, bool, std::optional<int64_t>) {
  launch<false>(result, self, self, result, plan.params.window);
}

void backward_into(at::Tensor& grad_input, const Plan& plan, const at::Tensor& grad_output, const at::Tensor& self,
                   at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, bool, bool, std::optional<int64_t>) {
  launch<true>(grad_input, grad_output, self, grad_output, plan.params.window);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  entry::impl<cuda::Backend, check_forward, forward_into>(m, "avg_pool3d");
  entry::impl<cuda::Backend, check_backward, backward_into>(m, "avg_pool3d_backward");
}

}  // namespace torch_aclnn::avg_pool
