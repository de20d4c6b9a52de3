// What the emulations of the CUDA kernels (tests/cuda_host/<family>.h) share:
// a launch's threads run on the host one after another, and the launch
// set-up helpers of csrc/cuda/index.cuh.
#pragma once

#include "cuda/index.cuh"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <cstdint>
#include <utility>

namespace host_launch {

using torch_aclnn::cuda::fits_32bit;
using torch_aclnn::cuda::with_bool;
using torch_aclnn::cuda::with_index_type;

// The dense layout of a 5-D result: channels_last_3d or contiguous.
inline c10::MemoryFormat format(bool channels_last) {
  return channels_last ? c10::MemoryFormat::ChannelsLast3d : c10::MemoryFormat::Contiguous;
}

// Calls f with the index type of the kernel instantiation a test asks for:
// 64-bit where wide, else 32-bit, which the launch's set-up must allow
// (narrow).
template <typename F>
void with_width(bool wide, bool narrow, F&& f) {
  TORCH_CHECK(wide || narrow, "the 32-bit kernels do not cover this call");
  with_index_type(!wide, std::forward<F>(f));
}

// The kernel variant of a layout launched over n threads: element(cl, p) for
// p = 0, ..., n - 1 in turn, cl the layout as a std::bool_constant
// (with_bool) and p in the kernel's index type.
template <typename index_t, typename Element>
void threads(bool channels_last, int64_t n, Element&& element) {
  with_bool(channels_last, [&](auto cl) {
    for (int64_t p = 0; p < n; ++p) element(cl, static_cast<index_t>(p));
  });
}

}  // namespace host_launch
