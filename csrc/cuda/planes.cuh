// The plane view of common/planes.h as the CUDA kernels use it, shared by
// the families that index a flattened (D, H, W) axis (csrc/cuda/max_pool.cuh,
// csrc/cuda/max_unpool.cuh): a tensor of shape (N, [C,] D, H, W) as N x C
// planes, element (n, c, k) at n*sN + c*sC + k*sK in the kernel's index
// type; the walk of a flat thread index over (n, c, k) in either memory
// order; and the bad-index position flag (an atomic min, with a sequential
// host form, so tests/test_cuda_host_*.py run the same code on the
// host).
#pragma once

#include "common/planes.h"
#include "cuda/index.cuh"

#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>

#include <cstdint>

namespace torch_aclnn::cuda {

// "No bad index seen" in a position flag: larger than any position, and a
// repeated byte, so one cudaMemsetAsync sets it.
constexpr unsigned char kNoneByte = 0x7f;
constexpr int64_t kNone = 0x7f7f7f7f7f7f7f7fLL;
static_assert(kNone == static_cast<int64_t>(kNoneByte) * 0x0101010101010101LL);

template <typename index_t>
struct Planes {
  index_t sN, sC, sK;
};

// t's planes (its D, H, W axes must flatten: planes::flattenable).
template <typename index_t>
Planes<index_t> planes_of(const at::Tensor& t) {
  const planes::Planes p = planes::planes_of(t);
  return {static_cast<index_t>(p.sN), static_cast<index_t>(p.sC), static_cast<index_t>(p.sK)};
}

// Whether walking t's planes with c fastest follows its memory order (g: a
// family's geometry, with `five` and `C`).
template <typename G>
inline bool channels_fastest(const at::Tensor& t, const G& g) {
  return g.five && g.C > 1 && t.stride(1) == 1;
}

// A flat index in walk order -> (n, c, k) for planes of `plane` elements:
// (n, c, k) order (k fastest) or, channels_last, (n, k, c) order (c fastest).
template <typename index_t>
struct Walk {
  Divider<index_t> plane, channels;
  Walk() = default;
  Walk(int64_t plane_size, int64_t C)
      : plane(static_cast<index_t>(plane_size)), channels(static_cast<index_t>(C)) {}

  template <bool channels_last>
  C10_HOST_DEVICE inline void split(index_t p, index_t& n, index_t& c, index_t& k) const {
    if constexpr (channels_last) {
      const auto nk = channels.divmod(p);
      c = nk.mod;
      const auto q = plane.divmod(nk.div);
      n = q.div;
      k = q.mod;
    } else {
      const auto nc = plane.divmod(p);
      k = nc.mod;
      const auto q = channels.divmod(nc.div);
      n = q.div;
      c = q.mod;
    }
  }
};

// Lowers the flag to pos: an atomic min on the device, its sequential form
// on the host (a minimum does not depend on the order it is taken in).
C10_HOST_DEVICE inline void note_bad(int64_t* flag, int64_t pos) {
#if defined(__CUDA_ARCH__)
  atomicMin(reinterpret_cast<long long*>(flag), static_cast<long long>(pos));
#else
  if (pos < *flag) *flag = pos;
#endif
}

}  // namespace torch_aclnn::cuda
