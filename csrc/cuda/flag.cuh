// The device flag through which a CUDA kernel reports a data-dependent
// contract error (an index outside its range or window): the smallest
// logical position of a bad index, kept with atomicMin (cuda/planes.cuh:
// note_bad) so that the same position is reported on every run, set to
// kNone by a cudaMemsetAsync (no fill kernel) and read back after the
// kernels: an 8-byte device-to-host copy into a pinned per-thread buffer and
// a stream synchronisation. During CUDA graph capture a synchronising
// read-back is not allowed, so the flag is not read there. Host code only
// (csrc/cuda/max_unpool.cu, csrc/cuda/max_pool.cu).
#pragma once

#include "cuda/planes.cuh"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace torch_aclnn::cuda::flag {

inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

// The calling thread's pinned 8-byte read-back buffer (pageable memory
// would add a staging copy), allocated on first use; nullptr if pinned
// memory cannot be had, and the read-back then goes to pageable memory.
inline int64_t* pinned_slot() {
  struct Slot {
    int64_t* p = nullptr;
    Slot() {
      if (cudaHostAlloc(reinterpret_cast<void**>(&p), sizeof(int64_t), cudaHostAllocPortable) != cudaSuccess) {
        (void)cudaGetLastError();
        p = nullptr;
      }
    }
    ~Slot() {
      if (p) (void)cudaFreeHost(p);  // may fail once the runtime is shutting down
    }
  };
  thread_local Slot slot;
  return slot.p;
}

// A device flag set to kNone on the current stream.
inline at::Tensor make(const at::Tensor& like, cudaStream_t stream) {
  at::Tensor flag = at::empty({1}, like.options().dtype(at::kLong));
  C10_CUDA_CHECK(cudaMemsetAsync(flag.mutable_data_ptr<int64_t>(), kNoneByte, sizeof(int64_t), stream));
  return flag;
}

// The flag's value (synchronising), or kNone during graph capture.
inline int64_t read(const at::Tensor& flag, cudaStream_t stream) {
  if (capturing(stream)) return kNone;
  int64_t local = kNone;
  int64_t* slot = pinned_slot();
  int64_t* dst = slot ? slot : &local;
  C10_CUDA_CHECK(cudaMemcpyAsync(dst, flag.const_data_ptr<int64_t>(), sizeof(int64_t), cudaMemcpyDeviceToHost,
                                 stream));
  C10_CUDA_CHECK(cudaStreamSynchronize(stream));
  return *dst;
}

// indices' element (n, c, k) on the host (for the error message).
inline int64_t value_at(const at::Tensor& indices, int64_t n, int64_t c, int64_t k) {
  const auto xp = planes_of<int64_t>(indices);
  return indices.as_strided({1}, {1}, indices.storage_offset() + n * xp.sN + c * xp.sC + k * xp.sK)
      .item<int64_t>();
}

}  // namespace torch_aclnn::cuda::flag
