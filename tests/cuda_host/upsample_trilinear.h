// Runs the per-element code of the CUDA upsample-trilinear kernels
// (csrc/cuda/upsample_trilinear.cuh) on the host, element after element, with
// the launch set-up the kernels get (make_geometry, walk_of, strides_of, the
// window table). tests/test_cuda_host_*.py compare the results with
// the CPU kernels. Built with the host compiler: no CUDA toolkit or GPU
// needed. Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/upsample_trilinear.cuh"
#include "launch.h"

#include <optional>
#include <vector>

namespace host_upsample_trilinear {

using namespace torch_aclnn::upsample_trilinear;
using namespace torch_aclnn::upsample_trilinear::kernels;
using namespace host_launch;

// The forward kernel's result, computed on the host. wide: 64-bit indexing.
inline at::Tensor forward(const at::Tensor& self, std::vector<int64_t> output_size, bool align_corners,
                          std::optional<double> sd, std::optional<double> sh, std::optional<double> sw,
                          bool channels_last, bool wide) {
  const Scale scales[3] = {sd, sh, sw};
  at::Tensor out = at::empty({self.size(0), self.size(1), output_size[0], output_size[1], output_size[2]},
                             self.options().memory_format(format(channels_last)));
  if (out.numel() == 0) return out;
  TORCH_CHECK(wide || fits_32bit({&self, &out}));
  const Geometry g = make_geometry(self.sizes(), output_size, align_corners, scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "forward", [&] {
    with_index_type(!wide, [&](auto index_tag) {
      using index_t = decltype(index_tag);
      const auto walk = walk_of<index_t>(out, channels_last);
      const auto st = strides_of<index_t>(self);
      threads<index_t>(channels_last, out.numel(), [&](auto cl, index_t p) {
        forward_element<decltype(cl)::value>(p, self.const_data_ptr<scalar_t>(), out.mutable_data_ptr<scalar_t>(),
                                             walk, st, g);
      });
    });
  });
  return out;
}

// The window table the backward's table kernel builds, as the launch's dtype
// (acc_t) builds it.
template <typename acc_t>
std::vector<int64_t> windows(const Geometry& g) {
  const int64_t entries = window_entries(g);
  std::vector<int64_t> table(2 * entries, -1);
  for (int64_t e = 0; e < entries; ++e) window_entry<acc_t>(e, table.data(), g);
  for (int64_t v : table) TORCH_CHECK(v >= 0, "window table entry not written");
  return table;
}

// The backward kernel's result, computed on the host.
inline at::Tensor backward(const at::Tensor& grad_output, std::vector<int64_t> output_size,
                           std::vector<int64_t> input_size, bool align_corners, std::optional<double> sd,
                           std::optional<double> sh, std::optional<double> sw, bool channels_last, bool wide) {
  const Scale scales[3] = {sd, sh, sw};
  at::Tensor gi = at::empty(input_size, grad_output.options().memory_format(format(channels_last)));
  if (gi.numel() == 0) return gi;
  TORCH_CHECK(wide || fits_32bit({&grad_output, &gi}));
  const Geometry g = make_geometry(input_size, output_size, align_corners, scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "backward", [&] {
    const std::vector<int64_t> table = windows<at::opmath_type<scalar_t>>(g);
    with_index_type(!wide, [&](auto index_tag) {
      using index_t = decltype(index_tag);
      const auto walk = walk_of<index_t>(gi, channels_last);
      const auto st = strides_of<index_t>(grad_output);
      threads<index_t>(channels_last, gi.numel(), [&](auto cl, index_t p) {
        backward_element<decltype(cl)::value>(p, grad_output.const_data_ptr<scalar_t>(),
                                              gi.mutable_data_ptr<scalar_t>(), walk, st, table.data(), g);
      });
    });
  });
  return gi;
}

}  // namespace host_upsample_trilinear
