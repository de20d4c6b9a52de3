// Launches both upsample families make (csrc/cuda/upsample.cu,
// csrc/cuda/upsample_trilinear.cu), on the current stream.
#pragma once

#include "cuda/launch.cuh"
#include "cuda/upsample.cuh"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <cstdint>

namespace torch_aclnn::upsample::kernels {

// One thread per element of the tensor a kernel writes, `out`, dense in its
// memory format and walked in memory order (walk_of), reading `in` through
// its strides (strides_of), with 32-bit indexing where both allow it.
// kernel_for(cl, index_tag) is the kernel for the layout (cl: channels_last
// as a std::bool_constant) and the index type, launched as
// kernel(in, out, total, walk, strides, args...).
template <typename scalar_t, typename KernelFor, typename... Args>
void launch_walk(const at::Tensor& in, at::Tensor& out, bool channels_last, const KernelFor& kernel_for,
                 const Args&... args) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  cuda::with_index_type(cuda::fits_32bit({&in, &out}), [&](auto index_tag) {
    using index_t = decltype(index_tag);
    cuda::with_bool(channels_last, [&](auto cl) {
      const auto kernel = kernel_for(cl, index_tag);
      kernel<<<cuda::blocks_for(out.numel()), cuda::kThreads, 0, stream>>>(
          in.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(), static_cast<index_t>(out.numel()),
          walk_of<index_t>(out, channels_last), strides_of<index_t>(in), args...);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  });
}

template <typename Params, void (*entry)(int64_t, int64_t*, const Params&)>
__global__ void __launch_bounds__(cuda::kThreads)
window_kernel(int64_t* __restrict__ table, int64_t entries, Params params) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(int64_t, t, entries) { entry(t, table, params); }
}

// A backward's window table, 2 * entries int64 on like's device: entry(t,
// table, params) (the family's window_entry) by one thread per t < entries.
template <typename Params, void (*entry)(int64_t, int64_t*, const Params&)>
at::Tensor window_table(const at::Tensor& like, int64_t entries, const Params& params) {
  at::Tensor table = at::empty({2 * entries}, like.options().dtype(at::kLong));
  window_kernel<Params, entry><<<cuda::blocks_for(entries), cuda::kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      table.mutable_data_ptr<int64_t>(), entries, params);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return table;
}

}  // namespace torch_aclnn::upsample::kernels
