// Runs the per-element code of the CUDA MaxPool3d kernels
// (csrc/cuda/max_pool.cuh) on the host, element after element, with the
// launch set-up of csrc/cuda/max_pool.cu (contract, flattening, geometry,
// index width, walk orders, flag). forward: the pooled values and indices;
// backward: the result and the flag (the smallest logical position of an
// index outside its window, or kNone). tests/test_cuda_host_*.py
// compares with the CPU kernels.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/max_pool.cuh"
#include "launch.h"

#include <tuple>
#include <vector>

namespace host_max_pool {

using namespace torch_aclnn::max_pool;
using namespace torch_aclnn::max_pool::kernels;
using namespace host_launch;

// forward_into's kernel: the contract's results (dense in its format), each
// element by max_element in the result's memory order; wide: the 64-bit
// instantiation (else the 32-bit one, which the set-up must allow).
std::tuple<at::Tensor, at::Tensor> forward(const at::Tensor& self, std::vector<int64_t> kernel,
                                           std::vector<int64_t> stride, std::vector<int64_t> padding,
                                           std::vector<int64_t> dilation, bool ceil_mode, bool wide) {
  const torch_aclnn::Plan2<Params> p = check_forward(self, kernel, stride, padding, dilation, ceil_mode);
  at::Tensor result = at::empty_symint(p.result.sizes, p.result.options());
  at::Tensor indices = at::empty_symint(p.second.sizes, p.second.options());
  if (result.numel() == 0) return {result, indices};
  const ForwardLaunch l = forward_launch_of(result, indices, self, p);
  with_width(wide, l.narrow, [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const Windows<index_t> win(l.g, p.params.window);
    const auto sp = planes_of<index_t>(l.self);
    const auto op = planes_of<index_t>(result);
    const Walk<index_t> walk(l.g.oS, l.g.C);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, l.self.scalar_type(), "forward", [&] {
      threads<index_t>(l.cl, result.numel(), [&](auto cl, index_t q) {
        max_element<decltype(cl)::value>(q, l.self.const_data_ptr<scalar_t>(), sp, result.mutable_data_ptr<scalar_t>(),
                                         indices.mutable_data_ptr<int64_t>(), op, walk, win);
      });
    });
  });
  return {result, indices};
}

// The kernels of backward_into on grad_input (dense in the result's format
// or the other 5-D one); wide: the 64-bit instantiation (else the 32-bit
// one, which the set-up must allow).
int64_t run(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output, const at::Tensor& self,
            const at::Tensor& indices, bool wide) {
  int64_t flag = kNone;
  if (grad_input.numel() == 0) return flag;
  const Launch l = launch_of(grad_input, grad_output, self, indices, p);
  with_width(wide, l.narrow, [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const Pool<index_t> pool(l.g, p.params.window);
    const auto xp = planes_of<index_t>(l.indices);
    const auto gp = planes_of<index_t>(l.grad_output);
    const auto op = planes_of<index_t>(grad_input);
    with_indices_type(l.indices.scalar_type(), [&](auto i_tag) {
      using I = decltype(i_tag);
      const I* ix = l.indices.const_data_ptr<I>();
      const Walk<index_t> pooled(l.g.oS, l.g.C), in(l.g.S, l.g.C);
      threads<index_t>(l.check_cl, l.indices.numel(), [&](auto cl, index_t q) {
        check_element<decltype(cl)::value>(q, ix, xp, pooled, pool, &flag);
      });
      AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, l.grad_output.scalar_type(), "gather", [&] {
        threads<index_t>(l.gather_cl, grad_input.numel(), [&](auto cl, index_t q) {
          gather_element<decltype(cl)::value>(q, l.grad_output.const_data_ptr<scalar_t>(), gp, ix, xp,
                                              grad_input.mutable_data_ptr<scalar_t>(), op, in, pool);
        });
      });
    });
  });
  return flag;
}

// The functional operator: result in the contract's format.
std::tuple<at::Tensor, int64_t> backward(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Tensor& indices, std::vector<int64_t> kernel,
                                         std::vector<int64_t> stride, std::vector<int64_t> padding,
                                         std::vector<int64_t> dilation, bool ceil_mode, bool wide) {
  const Plan p = check_backward(grad_output, self, indices, kernel, stride, padding, dilation, ceil_mode);
  at::Tensor gi = at::empty(self.sizes(), grad_output.options().memory_format(p.result.format));
  const int64_t flag = run(gi, p, grad_output, self, indices, wide);
  return {gi, flag};
}

// The out= overload writing straight into a dense grad_input of the given
// layout (channels_last: channels_last_3d, 5-D only).
std::tuple<at::Tensor, int64_t> backward_layout(const at::Tensor& grad_output, const at::Tensor& self,
                                                const at::Tensor& indices, std::vector<int64_t> kernel,
                                                std::vector<int64_t> stride, std::vector<int64_t> padding,
                                                std::vector<int64_t> dilation, bool ceil_mode, bool channels_last,
                                                bool wide) {
  const c10::MemoryFormat fmt = format(channels_last && self.dim() == 5);
  at::Tensor gi = at::empty(self.sizes(), grad_output.options().memory_format(fmt));
  const Plan p = check_backward(grad_output, self, indices, kernel, stride, padding, dilation, ceil_mode,
                                torch_aclnn::Out(gi));
  const int64_t flag = run(gi, p, grad_output, self, indices, wide);
  return {gi, flag};
}

// The pooled positions the gather visits for input position x on one axis
// (candidates, kept by covers), to compare with the contract's in_window.
std::vector<int64_t> taps(int64_t x, int64_t pooled, int64_t kernel, int64_t stride, int64_t padding,
                          int64_t dilation, bool wide) {
  std::vector<int64_t> os;
  with_index_type(!wide, [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const Axis<index_t> a(pooled, kernel, stride, padding, dilation);
    index_t reach, lo, end;
    a.candidates(static_cast<index_t>(x), reach, lo, end);
    for (index_t o = lo; o < end; ++o) {
      if (a.covers(reach, o)) os.push_back(static_cast<int64_t>(o));
    }
  });
  return os;
}

}  // namespace host_max_pool
