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
#include <ATen/OpMathType.h>
#include <torch/library.h>

namespace torch_aclnn::avg_pool {
namespace {

using cuda::kThreads;
using kernels::Dims;

template <typename T>
__global__ void __launch_bounds__(kThreads)
forward_kernel(int64_t total, const T* __restrict__ x, T* __restrict__ out, Dims g) {
  using A = at::opmath_type<T>;
  const int64_t oS = g.oD * g.oH * g.oW;
  TORCH_ACLNN_GRID_STRIDE_LOOP(int64_t, p, total) {
    out[p] = static_cast<T>(kernels::forward_element<T, A>(x, kernels::logical(g, p, oS), g));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
gather_kernel(int64_t total, const T* __restrict__ go, T* __restrict__ out, Dims g) {
  using A = at::opmath_type<T>;
  const int64_t S = g.D * g.H * g.W;
  TORCH_ACLNN_GRID_STRIDE_LOOP(int64_t, p, total) {
    out[p] = static_cast<T>(kernels::gather_element<T, A>(go, kernels::logical(g, p, S), g));
  }
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

void forward_into(at::Tensor& result, const Plan& plan, const at::Tensor& self, at::IntArrayRef, at::IntArrayRef,
                  at::IntArrayRef, bool, bool, std::optional<int64_t>) {
  const Dims g = dims_for(self, result, result, plan.params.window);
  const at::Tensor x = self.contiguous(format_of(g));
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t total = result.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "avg_pool3d_cuda", [&] {
    forward_kernel<scalar_t><<<cuda::blocks_for(total), kThreads, 0, stream>>>(
        total, x.const_data_ptr<scalar_t>(), result.mutable_data_ptr<scalar_t>(), g);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

// grad_input: dense in the result's memory format, or (out=) in the other
// 5-D one; it shares no memory with grad_output.
void backward_into(at::Tensor& grad_input, const Plan& plan, const at::Tensor& grad_output, const at::Tensor& self,
                   at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, bool, bool, std::optional<int64_t>) {
  const Dims g = dims_for(self, grad_output, grad_input, plan.params.window);
  const at::Tensor go = grad_output.contiguous(format_of(g));
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t total = grad_input.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "avg_pool3d_backward_cuda",
                                  [&] {
                                    gather_kernel<scalar_t><<<cuda::blocks_for(total), kThreads, 0, stream>>>(
                                        total, go.const_data_ptr<scalar_t>(),
                                        grad_input.mutable_data_ptr<scalar_t>(), g);
                                    C10_CUDA_KERNEL_LAUNCH_CHECK();
                                  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  entry::impl<cuda::Backend, check_forward, forward_into>(m, "avg_pool3d");
  entry::impl<cuda::Backend, check_backward, backward_into>(m, "avg_pool3d_backward");
}

}  // namespace torch_aclnn::avg_pool
