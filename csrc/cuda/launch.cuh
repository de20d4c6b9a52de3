// Launch helpers shared by the CUDA kernels (host side).
//
// Only c10/cuda headers are used for streams, guards and error checks (not
// ATen/cuda/CUDAContext.h, which pulls in cuBLAS/cuSPARSE headers a bare CUDA
// toolkit may lack). Every kernel launches on the current stream
// (c10::cuda::getCurrentCUDAStream(), so CUDA graphs and user streams work),
// under a c10::cuda::CUDAGuard for its tensors' device, and is followed by
// C10_CUDA_KERNEL_LAUNCH_CHECK().
#pragma once

#include "common/deferred.h"
#include "common/entry.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdint>

namespace torch_aclnn::cuda {

constexpr int kThreads = 256;
// Blocks of one launch at most. Every kernel walks its range with a
// grid-stride loop, so this bounds the grid (tens of waves on any current
// GPU), never the problem size; with 256 threads a step is 2^24 elements.
constexpr int64_t kMaxBlocks = int64_t(1) << 16;

inline unsigned int blocks_for(int64_t n, int threads = kThreads) {
  return static_cast<unsigned int>(std::clamp<int64_t>((n + threads - 1) / threads, 1, kMaxBlocks));
}

// The grid-stride loop every kernel uses: for (p = first; p < total; p += step).
#define TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total)                                              \
  for (index_t p = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x,                      \
               p##_step = static_cast<index_t>(blockDim.x) * gridDim.x;                               \
       p < (total); p += p##_step)

// The CUDA backend of the generic entries (common/entry.h): results through
// the dispatcher (the caching allocator), kernels under a guard for the
// call's device. Every call, once its own contract holds, first raises the
// failed index check of an earlier call whose result has arrived
// (common/deferred.h; one atomic load while none is pending), except while
// the current stream is being captured into a CUDA graph.
struct Guard : c10::cuda::CUDAGuard {
  explicit Guard(c10::Device device) : c10::cuda::CUDAGuard(device) {
    if (deferred::pending() == 0 ||
        c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None) {
      return;
    }
    deferred::raise_arrived();
  }
};

struct Backend {
  static constexpr bool kComputes = true;
  using Guard = cuda::Guard;
  static at::Tensor empty(const Result& r) { return entry::empty(r); }
};

}  // namespace torch_aclnn::cuda
