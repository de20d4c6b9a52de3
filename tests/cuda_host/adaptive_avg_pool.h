// Runs the per-element code of the CUDA AdaptiveAvgPool3d kernels
// (csrc/cuda/adaptive_avg_pool.cuh) on the host, element after element,
// with the launch set-up of csrc/cuda/adaptive_avg_pool.cu (contract,
// layout, sizes, strides, index width). tests/test_cuda_host_emulation.py
// compares with the CPU kernels.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/adaptive_avg_pool.cuh"
#include "result.h"

#include <ATen/Dispatch.h>

#include <vector>

namespace host_adaptive_avg_pool {

using namespace torch_aclnn::adaptive_avg_pool;
using torch_aclnn::cuda::with_bool;
using torch_aclnn::cuda::with_index_type;

// The result as a kernel gets it: dense in channels_last_3d (5-D only) or
// contiguous, `offset` elements into a NaN-filled buffer.
at::Tensor result_for(const torch_aclnn::Result& r, bool channels_last, int64_t offset) {
  const c10::MemoryFormat fmt = channels_last && r.sizes.size() == 5 ? c10::MemoryFormat::ChannelsLast3d
                                                                     : c10::MemoryFormat::Contiguous;
  return host_result::result_at(C10_AS_INTARRAYREF_SLOW(r.sizes), c10::TensorOptions().dtype(r.dtype).device(r.device),
                                fmt, offset);
}

// forward_into's kernel; wide: the 64-bit instantiation (else the 32-bit
// one, which the set-up must allow).
at::Tensor forward(const at::Tensor& self, std::vector<int64_t> output_size, bool channels_last, bool wide,
                   int64_t offset) {
  const Plan p = check_forward(self, c10::fromIntArrayRefSlow(output_size));
  at::Tensor result = result_for(p.result, channels_last, offset);
  if (result.numel() == 0) return result;
  TORCH_CHECK(wide || kernels::narrow(result, self, self, result), "the 32-bit kernels do not cover this call");
  with_index_type(!wide, [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const auto s = kernels::sizes_of<index_t>(self, result);
    const auto xs = kernels::strides_of<index_t>(self);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "forward", [&] {
      with_bool(kernels::channels_last(result), [&](auto cl) {
        for (int64_t q = 0; q < result.numel(); ++q) {
          kernels::pool_element<decltype(cl)::value>(static_cast<index_t>(q), self.const_data_ptr<scalar_t>(), xs,
                                                     result.mutable_data_ptr<scalar_t>(), s);
        }
      });
    });
  });
  return result;
}

// backward_into's kernel, likewise.
at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self, bool channels_last, bool wide,
                    int64_t offset) {
  const Plan p = check_backward(grad_output, self);
  at::Tensor gi = result_for(p.result, channels_last, offset);
  if (gi.numel() == 0) return gi;
  TORCH_CHECK(wide || kernels::narrow(gi, grad_output, self, grad_output),
              "the 32-bit kernels do not cover this call");
  with_index_type(!wide, [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const auto s = kernels::sizes_of<index_t>(self, grad_output);
    const auto gs = kernels::strides_of<index_t>(grad_output);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "backward", [&] {
      with_bool(kernels::channels_last(gi), [&](auto cl) {
        for (int64_t q = 0; q < gi.numel(); ++q) {
          kernels::gather_element<decltype(cl)::value>(static_cast<index_t>(q),
                                                       grad_output.const_data_ptr<scalar_t>(), gs,
                                                       gi.mutable_data_ptr<scalar_t>(), s);
        }
      });
    });
  });
  return gi;
}

}  // namespace host_adaptive_avg_pool
