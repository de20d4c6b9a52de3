// The out= policy of every .grad_input overload, on every backend (CPU and
// CUDA kernels both use this header): write straight into the caller's tensor
// when the kernel can, otherwise compute into a fresh temporary and copy_ it
// in. out= never resizes: the contracts (csrc/contracts/*.h) have already
// checked its shape and dtype.
#pragma once

#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>

#include <initializer_list>

namespace torch_aclnn {

// Writing `out` while `inputs` are still being read is safe: it shares no
// memory with any of them (another storage, or no overlap within the same
// one; "too hard to tell" counts as shared).
inline bool shares_no_memory(const at::Tensor& out, std::initializer_list<const at::Tensor*> inputs) {
  for (const at::Tensor* t : inputs) {
    if (out.is_alias_of(*t) && at::get_overlap_status(out, *t) != at::MemOverlapStatus::No) return false;
  }
  return true;
}

// For elementwise kernels, which read each element before writing the same
// position: also safe when `out` is exactly `in` (same address, same strides).
inline bool elementwise_safe_to_write(const at::Tensor& out, const at::Tensor& in) {
  if (!out.is_alias_of(in)) return true;
  switch (at::get_overlap_status(out, in)) {
    case at::MemOverlapStatus::No:
      return true;
    case at::MemOverlapStatus::Full:
      return out.const_data_ptr() == in.const_data_ptr() && out.strides() == in.strides();
    default:
      return false;
  }
}

// The 5-D layout a kernel that writes NCDHW or NDHWC densely should write
// `t` in: `preferred` when `t` is dense in it, else the other one (`t` may be
// dense in neither: check is_contiguous on the result).
inline c10::MemoryFormat dense_format_5d(const at::Tensor& t, c10::MemoryFormat preferred) {
  if (t.is_contiguous(preferred)) return preferred;
  return preferred == c10::MemoryFormat::Contiguous ? c10::MemoryFormat::ChannelsLast3d
                                                    : c10::MemoryFormat::Contiguous;
}

// compute(dst) into `out` when `direct`, else into make_tmp() and copy_.
template <typename MakeTmp, typename Compute>
void write_out(at::Tensor& out, bool direct, MakeTmp&& make_tmp, Compute&& compute) {
  if (direct) {
    compute(out);
    return;
  }
  at::Tensor tmp = make_tmp();
  compute(tmp);
  out.copy_(tmp);
}

}  // namespace torch_aclnn
