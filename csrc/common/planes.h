// A 4-D (N, D, H, W) or 5-D (N, C, D, H, W) tensor seen as N x C planes of
// D*H*W elements, element (n, c, k) at n*sN + c*sC + k*sK: what the kernels of
// the families that index a flattened (D, H, W) axis (max_unpool, max_pool)
// need to address any layout whose last three axes flatten to one strided
// axis (contiguous, channels_last_3d, sliced in N or C, expanded, ...).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <c10/util/Exception.h>

#include <cstdint>

namespace torch_aclnn::planes {

// The stride that steps the flattened (D, H, W) axis of t, or -1 when its
// last three axes cannot be addressed as one strided axis.
inline int64_t flat_stride(const at::Tensor& t) {
  const int64_t nd = t.dim();
  int64_t sK = -1, inner = 1;
  for (int64_t d = nd - 1; d >= nd - 3; --d) {
    const int64_t size = t.size(d);
    if (size == 1) continue;
    if (sK < 0) {
      sK = t.stride(d);  // inner == 1 here: every axis inside d has size 1
    } else if (t.stride(d) != sK * inner) {
      return -1;
    }
    inner *= size;
  }
  return sK < 0 ? 1 : sK;
}

// t itself when its D, H, W axes flatten, else a copy in `fmt`.
inline at::Tensor flattenable(const at::Tensor& t, c10::MemoryFormat fmt) {
  return flat_stride(t) >= 0 ? t : t.contiguous(fmt);
}

// The strides of t's planes: element (n, c, k) at n*sN + c*sC + k*sK
// (sC = 0 for 4-D t). t's D, H, W axes must flatten.
struct Planes {
  int64_t sN, sC, sK;
};

inline Planes planes_of(const at::Tensor& t) {
  const int64_t sK = flat_stride(t);
  TORCH_INTERNAL_ASSERT(sK >= 0, "the D, H, W axes do not flatten");
  return {t.stride(0), t.dim() == 5 ? t.stride(1) : 0, sK};
}

}  // namespace torch_aclnn::planes
