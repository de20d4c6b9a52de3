// A kernel's result as a launch may get it (tests/cuda_host/<family>.h).
#pragma once

#include <ATen/ATen.h>

#include <limits>

namespace host_result {

// Dense in `fmt`, `offset` elements into its buffer (an out= tensor need not
// start where an allocation does, so its packs need not be aligned), and
// filled with what no kernel writes by chance (NaN, or 90 for integers), so
// an element a kernel skips shows.
inline at::Tensor result_at(at::IntArrayRef sizes, const at::TensorOptions& options, c10::MemoryFormat fmt,
                            int64_t offset) {
  const at::Tensor dense = at::empty(sizes, options.memory_format(fmt));
  at::Tensor buf = at::empty({dense.numel() + offset}, options);
  if (at::isFloatingType(buf.scalar_type())) {
    buf.fill_(std::numeric_limits<double>::quiet_NaN());
  } else {
    buf.fill_(90);
  }
  return buf.as_strided(sizes, dense.strides(), offset);
}

}  // namespace host_result
