// CUDA kernels of the AdaptiveAvgPool3d family (docs/spec.md §13):
// adaptive_avg_pool3d and adaptive_avg_pool3d_backward.
//
// Same contract (csrc/contracts/adaptive_avg_pool.h), windows, result
// layouts and out= rules as the CPU kernels in csrc/cpu/adaptive_avg_pool.cpp,
// and the same bits: the per-element code (csrc/cuda/adaptive_avg_pool.cuh)
// adds the CPU kernels' terms in the CPU kernels' order, in the opmath type.
//
// Forward: one thread per pooled element, in the result's memory order
// (contiguous: ow fastest; channels_last_3d: c fastest, so neighbouring
// threads read neighbouring channels), summing its window of self read in
// place with any strides.
//
// Backward, a gather, deterministic, no atomics: one thread per grad_input
// element, in grad_input's memory order, sums grad_output / kd / kh / kw over
// the windows that cover it (per axis [floor(x*out/in), ceil((x+1)*out/in)))
// in increasing (od, oh, ow), and writes its element once (no zero fill).
// aten's CUDA backward adds with atomicAdd instead, in whatever order the
// threads run, and raises under torch.use_deterministic_algorithms(True).
// Memory traffic: each grad_output element is read by the threads of the
// positions its window covers (neighbours: the caches absorb it); each
// grad_input element is written once.
//
// 32- or 64-bit index math (cuda/index.cuh) per call: 32-bit when the
// tensors and each axis's window arithmetic fit (kernels::narrow).
#include "cuda/adaptive_avg_pool.cuh"
#include "cuda/launch.cuh"

#include <ATen/Dispatch.h>
#include <torch/library.h>

namespace torch_aclnn::adaptive_avg_pool {
namespace {

using cuda::kThreads;
using cuda::with_bool;
using kernels::Sizes;
using kernels::Strides;

template <bool backward, bool channels_last, typename T, typename index_t>
__global__ void __launch_bounds__(kThreads)
element_kernel(index_t total, const T* __restrict__ in, Strides<index_t> is, T* __restrict__ out, Sizes<index_t> s) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) { kernels::element<backward, channels_last>(p, in, is, out, s); }
}

// One thread per element of out, dense in the result's memory format or
// (out=) the other 5-D one, reading in: the forward pools self into the
// result, the backward gathers grad_output (in) into grad_input (out), which
// shares no memory with it. pooled: the call's tensor of the pooled shape.
template <bool backward>
void launch(at::Tensor& out, const at::Tensor& in, const at::Tensor& self, const at::Tensor& pooled) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  cuda::with_index_type(kernels::narrow(out, in, self, pooled), [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const auto s = kernels::sizes_of<index_t>(self, pooled);
    const auto is = kernels::strides_of<index_t>(in);
    const index_t total = static_cast<index_t>(out.numel());
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(),
                                    backward ? "adaptive_avg_pool3d_backward_cuda" : "adaptive_avg_pool3d_cuda", [&] {
      with_bool(kernels::channels_last(out), [&](auto cl) {
        element_kernel<backward, decltype(cl)::value><<<cuda::blocks_for(total), kThreads, 0, stream>>>(
            total, in.const_data_ptr<scalar_t>(), is, out.mutable_data_ptr<scalar_t>(), s);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    });
  });
}

void forward_into(at::Tensor& result, const Plan&, const at::Tensor& self, c10::SymIntArrayRef) {
  launch<false>(result, self, self, result);
}

void backward_into(at::Tensor& grad_input, const Plan&, const at::Tensor& grad_output, const at::Tensor& self) {
  launch<true>(grad_input, grad_output, self, grad_output);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  entry::impl<cuda::Backend, check_forward, forward_into>(m, "adaptive_avg_pool3d");
  entry::impl<cuda::Backend, check_backward, backward_into>(m, "adaptive_avg_pool3d_backward");
}

}  // namespace torch_aclnn::adaptive_avg_pool
