// Runs the per-element code of the AvgPool3d CUDA kernels
// (csrc/cuda/avg_pool.cuh) on the host, over CPU tensors, exactly as the
// kernels in csrc/cuda/avg_pool.cu launch it: one "thread" per result
// element in the result's memory order (contiguous or channels_last_3d),
// each computed by its logical position. tests/test_cuda_host_*.py
// compares the results with the CPU kernels bit for bit.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/avg_pool.cuh"
#include "launch.h"

#include <optional>

namespace host_avg_pool {

using namespace torch_aclnn::avg_pool;
using host_launch::format;

kernels::Dims dims(const at::Tensor& big, const at::Tensor& small, const Window& w, bool channels_last) {
  const int64_t d = big.dim() - 3;
  const int64_t C = big.dim() == 5 ? big.size(1) : 1;
  return kernels::dims_of(C, big.size(d), big.size(d + 1), big.size(d + 2), small.size(d), small.size(d + 1),
                          small.size(d + 2), w, channels_last && big.dim() == 5 && C > 1);
}

// The kernel's threads in turn: out (dense in g's layout) element by element
// from in (likewise).
template <bool backward>
void run(at::Tensor& out, const at::Tensor& in, const kernels::Dims& g) {
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in.scalar_type(), backward ? "backward" : "forward", [&] {
    const scalar_t* x = in.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    for (int64_t p = 0; p < out.numel(); ++p) o[p] = kernels::element<backward>(x, p, g);
  });
}

at::Tensor forward(const at::Tensor& self, std::vector<int64_t> kernel_size, std::vector<int64_t> stride,
                   std::vector<int64_t> padding, bool ceil_mode, bool count_include_pad,
                   std::optional<int64_t> divisor_override, bool channels_last) {
  const Plan plan = check_forward(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  at::Tensor out = at::empty(C10_AS_INTARRAYREF_SLOW(plan.result.sizes), self.options());
  const kernels::Dims g = dims(self, out, plan.params.window, channels_last);
  out = out.contiguous(format(g.channels_last));
  run<false>(out, self.contiguous(format(g.channels_last)), g);
  return out;
}

at::Tensor backward(const at::Tensor& grad_output, const at::Tensor& self, std::vector<int64_t> kernel_size,
                    std::vector<int64_t> stride, std::vector<int64_t> padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor_override, bool channels_last) {
  const Plan plan =
      check_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  const kernels::Dims g = dims(self, grad_output, plan.params.window, channels_last);
  at::Tensor out = at::empty(self.sizes(), grad_output.options().memory_format(format(g.channels_last)));
  run<true>(out, grad_output.contiguous(format(g.channels_last)), g);
  return out;
}

}  // namespace host_avg_pool
