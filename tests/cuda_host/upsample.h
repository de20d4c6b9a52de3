// Runs the per-element code of the CUDA upsample kernels
// (csrc/cuda/upsample.cuh) on the host, element after element, with the
// launch set-up the kernels get (make_axes, walk_of, strides_of, the window
// table). tests/test_cuda_host_*.py compare the results with the
// CPU kernels. Built with the host compiler: no CUDA toolkit or GPU needed.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/upsample.cuh"
#include "launch.h"
#include "result.h"

#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace host_upsample {

using namespace torch_aclnn::upsample;
using namespace torch_aclnn::upsample::kernels;
using namespace host_launch;

template <typename F>
void with_mode(bool exact, F&& f) {
  if (exact) {
    f(std::integral_constant<Mode, Mode::NearestExact>{});
  } else {
    f(std::integral_constant<Mode, Mode::Nearest>{});
  }
}

// The forward kernel's result, computed on the host. wide: 64-bit indexing.
at::Tensor forward(const at::Tensor& self, std::vector<int64_t> output_size, std::optional<double> sd,
                   std::optional<double> sh, std::optional<double> sw, bool exact, bool channels_last, bool wide) {
  const Scale scales[3] = {sd, sh, sw};
  at::Tensor out = at::empty({self.size(0), self.size(1), output_size[0], output_size[1], output_size[2]},
                             self.options().memory_format(format(channels_last)));
  if (out.numel() == 0) return out;
  TORCH_CHECK(wide || fits_32bit({&self, &out}));
  const Axes a = make_axes(self.sizes(), output_size, scales);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "forward", [&] {
    with_index_type(!wide, [&](auto index_tag) {
      using index_t = decltype(index_tag);
      const auto unravel = walk_of<index_t>(out, channels_last);
      const auto st = strides_of<index_t>(self);
      with_mode(exact, [&](auto m) {
        threads<index_t>(channels_last, out.numel(), [&](auto cl, index_t p) {
          forward_element<decltype(m)::value, decltype(cl)::value>(p, self.const_data_ptr<scalar_t>(),
                                                                   out.mutable_data_ptr<scalar_t>(), unravel, st, a);
        });
      });
    });
  });
  return out;
}

// The window table the backward's table kernel builds.
std::vector<int64_t> windows(const Axes& a, bool exact) {
  const int64_t entries = window_entries(a);
  std::vector<int64_t> win(2 * entries, -1);
  with_mode(exact, [&](auto m) {
    for (int64_t t = 0; t < entries; ++t) window_entry<decltype(m)::value>(t, win.data(), a);
  });
  for (int64_t v : win) TORCH_CHECK(v >= 0, "window table entry not written");
  return win;
}

// The window table as a tensor (for direct checks).
at::Tensor window_table(std::vector<int64_t> output_size, std::vector<int64_t> input_size, std::optional<double> sd,
                        std::optional<double> sh, std::optional<double> sw, bool exact) {
  const Scale scales[3] = {sd, sh, sw};
  const std::vector<int64_t> win = windows(make_axes(input_size, output_size, scales), exact);
  return torch::tensor(win, torch::kLong);
}

// uniform_folds of the launch's mode.
std::array<int64_t, 3> folds_for(const Axes& a, bool exact) {
  std::array<int64_t, 3> folds{};
  with_mode(exact, [&](auto m) { folds = uniform_folds<decltype(m)::value>(a); });
  return folds;
}

// The kernel the launch takes (csrc/cuda/upsample.cu asks the same function).
template <typename scalar_t>
Path path_for(const Axes& a, bool exact, const std::array<int64_t, 3>& folds, const at::Tensor& grad_output,
              const at::Tensor& gi, bool channels_last) {
  Path path;
  with_mode(exact, [&](auto m) {
    path = backward_path<decltype(m)::value, scalar_t>(a, folds, grad_output, gi, channels_last);
  });
  return path;
}

// The backward kernel's result, computed on the host, into a result `offset`
// elements into its buffer (host_result::result_at).
at::Tensor backward(const at::Tensor& grad_output, std::vector<int64_t> output_size, std::vector<int64_t> input_size,
                    std::optional<double> sd, std::optional<double> sh, std::optional<double> sw, bool exact,
                    bool channels_last, bool wide, int64_t offset) {
  const Scale scales[3] = {sd, sh, sw};
  at::Tensor gi = host_result::result_at(input_size, grad_output.options(), format(channels_last), offset);
  if (gi.numel() == 0) return gi;
  TORCH_CHECK(wide || fits_32bit({&grad_output, &gi}));
  const Axes a = make_axes(input_size, output_size, scales);
  const std::array<int64_t, 3> folds = folds_for(a, exact);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "backward", [&] {
    const Path path = path_for<scalar_t>(a, exact, folds, grad_output, gi, channels_last);
    const int64_t units = units_of<scalar_t>(gi, path);
    with_index_type(!wide, [&](auto index_tag) {
      using index_t = decltype(index_tag);
      // The folds and, where the launch builds one, the table; where it does
      // not, a table of zeros (empty windows), so that a kernel reading it
      // anyway gives a wrong result rather than a crash.
      Windows<index_t> win = folds_of<index_t>(a, folds);
      const std::vector<int64_t> table =
          needs_table(win, path) ? windows(a, exact) : std::vector<int64_t>(2 * window_entries(a), 0);
      win.table = table.data();
      const auto unravel = unit_walk_of<scalar_t, index_t>(gi, path, channels_last);
      const auto st = strides_of<index_t>(grad_output);
      with_path(path, channels_last, [&](auto kernel, auto taps, auto cl) {
        for (int64_t q = 0; q < units; ++q) {
          backward_unit<decltype(kernel)::value, decltype(taps)::value, decltype(cl)::value>(
              static_cast<index_t>(q), grad_output.const_data_ptr<scalar_t>(), gi.mutable_data_ptr<scalar_t>(),
              unravel, st, win);
        }
      });
    });
  });
  return gi;
}

// Which backward kernel the launch takes for these arguments, with the
// result `offset` elements into its buffer: its name and taps (Path).
std::tuple<std::string, int64_t> backward_path_of(const at::Tensor& grad_output, std::vector<int64_t> output_size,
                                                  std::vector<int64_t> input_size, std::optional<double> sd,
                                                  std::optional<double> sh, std::optional<double> sw, bool exact,
                                                  bool channels_last, int64_t offset) {
  const Scale scales[3] = {sd, sh, sw};
  const at::Tensor gi = host_result::result_at(input_size, grad_output.options(), format(channels_last), offset);
  const Axes a = make_axes(input_size, output_size, scales);
  const Path path = AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grad_output.scalar_type(), "path", [&] {
    return path_for<scalar_t>(a, exact, folds_for(a, exact), grad_output, gi, channels_last);
  });
  static const char* names[] = {"element", "fold", "row", "channels"};
  return {names[static_cast<int>(path.kernel)], path.taps};
}

}  // namespace host_upsample
