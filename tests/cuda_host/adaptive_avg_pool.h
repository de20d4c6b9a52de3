// Runs the per-element code of the CUDA AdaptiveAvgPool3d kernels
// (csrc/cuda/adaptive_avg_pool.cuh) on the host, element after element,
// with the launch set-up of csrc/cuda/adaptive_avg_pool.cu (contract,
// layout, sizes, strides, index width). tests/test_cuda_host_*.py
// compares with the CPU kernels.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/adaptive_avg_pool.cuh"
#include "launch.h"
#include "result.h"

#include <vector>

namespace host_adaptive_avg_pool {

using namespace torch_aclnn::adaptive_avg_pool;
using namespace host_launch;

// The result as a kernel gets it: dense in channels_last_3d (5-D only) or
// contiguous, `offset` elements into a NaN-filled buffer.
at::Tensor result_for(const torch_aclnn::Result& r, bool channels_last, int64_t offset) {
  return host_result::result_at(C10_AS_INTARRAYREF_SLOW(r.sizes), c10::TensorOptions().dtype(r.dtype).device(r.device),
                                format(channels_last && r.sizes.size() == 5), offset);
}

// The kernel of forward_into (backward: backward_into) on the host, with its
// arguments (adaptive_avg_pool.cu, launch); wide: the 64-bit instantiation
// (else the 32-bit one, which the set-up must allow).
template <bool backward>
void run(at::Tensor& out, const at::Tensor& in, const at::Tensor& self, const at::Tensor& pooled, bool wide) {
  with_width(wide, kernels::narrow(out, in, self, pooled), [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const auto s = kernels::sizes_of<index_t>(self, pooled);
    const auto is = kernels::strides_of<index_t>(in);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(), backward ? "backward" : "forward", [&] {
      threads<index_t>(kernels::channels_last(out), out.numel(), [&](auto cl, index_t p) {
        kernels::element<backward, decltype(cl)::value>(p, in.const_data_ptr<scalar_t>(), is,
                                                        out.mutable_data_ptr<scalar_t>(), s);
      });
    });
  });
}

at::Tensor forward(const at::Tensor& self, std::vector<int64_t> output_size, bool channels_last, bool wide,
                   int64_t offset) {
  const Plan p = check_forward(self, c10::fromIntArrayRefSlow(output_size));
  at::Tensor result = result_for(p.result, channels_last, offset);
  if (result.numel() > 0) run<false>(result, self, self, result, wide);
  return result;
}

at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self, bool channels_last, bool wide,
                    int64_t offset) {
  const Plan p = check_backward(grad_output, self);
  at::Tensor gi = result_for(p.result, channels_last, offset);
  if (gi.numel() > 0) run<true>(gi, grad_output, self, grad_output, wide);
  return gi;
}

}  // namespace host_adaptive_avg_pool
