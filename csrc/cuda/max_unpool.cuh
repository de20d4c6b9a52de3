// The per-element code of the MaxUnpool3d CUDA kernels and the host-side
// set-up of their launches (csrc/cuda/max_unpool.cu launches them). The
// element functions are C10_HOST_DEVICE; their only CUDA built-ins, the
// atomic min/max, have a sequential host form (max and min do not depend on
// the order they are applied in), so tests/test_cuda_host_emulation.py can
// run the very same code on the host and compare with the CPU kernels.
//
// Geometry (csrc/contracts/max_unpool.h, shared with the CPU kernels): a
// tensor of shape (N, [C,] D, H, W) is N x C planes of S = D*H*W elements
// (C = 1 for 4-D), element (n, c, k) at n*sN + c*sC + k*sK (cuda/planes.cuh);
// a tensor whose D, H, W axes do not flatten to one strided axis is copied
// once.
#pragma once

#include "contracts/max_unpool.h"
#include "cuda/index.cuh"
#include "cuda/planes.cuh"

#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>

#include <cstdint>
#include <limits>

namespace torch_aclnn::max_unpool::kernels {

// Planes, their walks and the position flag (cuda/planes.cuh).
using torch_aclnn::cuda::channels_fastest;
using torch_aclnn::cuda::Divider;
using torch_aclnn::cuda::kNone;
using torch_aclnn::cuda::kNoneByte;
using torch_aclnn::cuda::note_bad;
using torch_aclnn::cuda::Planes;
using torch_aclnn::cuda::planes_of;
using torch_aclnn::cuda::Walk;

// ---------------------------------------------------------------------------
// Atomics (device) and their sequential host forms.

C10_HOST_DEVICE inline void claim(int32_t* w, int32_t i) {
#if defined(__CUDA_ARCH__)
  atomicMax(w, i);
#else
  if (i > *w) *w = i;
#endif
}

C10_HOST_DEVICE inline void claim(int64_t* w, int64_t i) {
#if defined(__CUDA_ARCH__)
  atomicMax(reinterpret_cast<long long*>(w), static_cast<long long>(i));
#else
  if (i > *w) *w = i;
#endif
}

C10_HOST_DEVICE inline bool out_of_range(int64_t v, int64_t oS) {
  return static_cast<uint64_t>(v) >= static_cast<uint64_t>(oS);
}

// ---------------------------------------------------------------------------
// Forward: a scatter made deterministic in two passes.
//
// Pass 1 (claim), one thread per input element (n, c, i), walked in the
// indices' memory order: atomicMax(winner[n, c, v], i) with v = indices[n, c,
// i]; winner is laid out like the output and starts at -1. Afterwards every
// output element holds the largest input position that targets it -- the
// spec's "largest flat input position wins" -- whatever the order the
// threads ran in. An out-of-range v claims nothing and lowers the flag to
// its logical position (n*C + c)*S + i.
// Pass 2 (fill), one thread per output element in memory order:
// out = winner < 0 ? 0 : self[n, c, winner].

template <bool channels_last, typename W, typename index_t>
C10_HOST_DEVICE inline void claim_element(index_t p, const int64_t* __restrict__ ix, const Planes<index_t>& xp,
                                          W* __restrict__ winner, const Planes<index_t>& op, const Walk<index_t>& walk,
                                          int64_t C, int64_t S, int64_t oS, int64_t* flag) {
  index_t n, c, i;
  walk.template split<channels_last>(p, n, c, i);
  const int64_t v = ix[n * xp.sN + c * xp.sC + i * xp.sK];
  if (out_of_range(v, oS)) {
    note_bad(flag, (static_cast<int64_t>(n) * C + static_cast<int64_t>(c)) * S + static_cast<int64_t>(i));
    return;
  }
  claim(winner + (n * op.sN + c * op.sC + static_cast<index_t>(v) * op.sK), static_cast<W>(i));
}

// p: an output element's offset (the output and winner are dense in the
// walk's order).
template <bool channels_last, typename T, typename W, typename index_t>
C10_HOST_DEVICE inline void fill_element(index_t p, const T* __restrict__ x, const Planes<index_t>& sp,
                                         const W* __restrict__ winner, T* __restrict__ out,
                                         const Walk<index_t>& walk) {
  const W w = winner[p];
  if (w < 0) {
    out[p] = T(0);
    return;
  }
  index_t n, c, k;
  walk.template split<channels_last>(p, n, c, k);
  out[p] = x[n * sp.sN + c * sp.sC + static_cast<index_t>(w) * sp.sK];
}

// ---------------------------------------------------------------------------
// Backward: a gather, one thread per grad_input element in memory order.
// An out-of-range index is never read through: the element gets 0 and the
// flag its logical position.

template <bool channels_last, typename T, typename index_t>
C10_HOST_DEVICE inline void gather_element(index_t p, const T* __restrict__ go, const Planes<index_t>& gp,
                                           const int64_t* __restrict__ ix, const Planes<index_t>& xp,
                                           T* __restrict__ out, const Walk<index_t>& walk, int64_t C, int64_t S,
                                           int64_t oS, int64_t* flag) {
  index_t n, c, i;
  walk.template split<channels_last>(p, n, c, i);
  const int64_t v = ix[n * xp.sN + c * xp.sC + i * xp.sK];
  if (out_of_range(v, oS)) {
    out[p] = T(0);
    note_bad(flag, (static_cast<int64_t>(n) * C + static_cast<int64_t>(c)) * S + static_cast<int64_t>(i));
    return;
  }
  out[p] = go[n * gp.sN + c * gp.sC + static_cast<index_t>(v) * gp.sK];
}

}  // namespace torch_aclnn::max_unpool::kernels
