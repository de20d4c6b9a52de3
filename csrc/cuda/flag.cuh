// The device flag through which a CUDA kernel reports a data-dependent
// contract error (an index outside its range or window): the smallest
// logical position of a bad index, kept with atomicMin (cuda/planes.cuh:
// note_bad) so that the same position is reported on every run, and set to
// kNone by a cudaMemsetAsync (no fill kernel). After the kernels, finish()
// hands it to the deferred checks (csrc/common/deferred.h): an 8-byte
// asynchronous device-to-host copy into pinned memory and an event, with no
// synchronisation (in synchronous mode the call waits for the event and
// raises at once). During CUDA graph capture the flag is not read at all.
// Host code only (csrc/cuda/max_unpool.cu, csrc/cuda/max_pool.cu).
#pragma once

#include "common/contract.h"
#include "common/deferred.h"
#include "cuda/planes.cuh"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <utility>

namespace torch_aclnn::cuda::flag {

inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

// A device flag set to kNone on the current stream; `words` > 1 gives the
// kernels more int64 words, set to kNone by the same memset (the check reads
// the first).
inline at::Tensor make(const at::Tensor& like, cudaStream_t stream, int64_t words = 1) {
  at::Tensor flag = at::empty({words}, like.options().dtype(at::kLong));
  C10_CUDA_CHECK(cudaMemsetAsync(flag.mutable_data_ptr<int64_t>(), kNoneByte, words * sizeof(int64_t), stream));
  return flag;
}

// indices' element (n, c, k) on the host (for the error message).
inline int64_t value_at(const at::Tensor& indices, int64_t n, int64_t c, int64_t k) {
  const auto xp = planes_of<int64_t>(indices);
  return indices.as_strided({1}, {1}, indices.storage_offset() + n * xp.sN + c * xp.sC + k * xp.sK)
      .item<int64_t>();
}

// The flag's value on its way to the host: copied into pinned memory on the
// stream, which then records an event. fail(position, deferred) throws the
// IndexError of the bad position (reading the bad value from the device).
// Queries, waits and that read run in the relaxed capture mode: another
// thread's CUDA graph capture does not forbid them.
template <class Fail>
class FlagCheck final : public deferred::Check {
 public:
  FlagCheck(const char* op, const at::Tensor& flag, cudaStream_t stream, Fail fail)
      : op_(op),
        host_(at::empty({1}, at::TensorOptions().dtype(at::kLong).pinned_memory(true))),
        fail_(std::move(fail)) {
    C10_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    try {
      C10_CUDA_CHECK(cudaMemcpyAsync(host_.mutable_data_ptr<int64_t>(), flag.const_data_ptr<int64_t>(),
                                     sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
      C10_CUDA_CHECK(cudaEventRecord(event_, stream));
    } catch (...) {
      // host_ goes back to the pinned-memory cache: let no copy into it be
      // in flight then (best effort: the stream is failing).
      (void)cudaStreamSynchronize(stream);
      release();
      throw;
    }
  }
  ~FlagCheck() override { release(); }
  FlagCheck(const FlagCheck&) = delete;
  FlagCheck& operator=(const FlagCheck&) = delete;

  bool arrived(bool wait) override {
    c10::cuda::CUDAStreamCaptureModeGuard relaxed(cudaStreamCaptureModeRelaxed);
    if (wait) {
      C10_CUDA_CHECK(cudaEventSynchronize(event_));
      return true;
    }
    const cudaError_t status = cudaEventQuery(event_);
    if (status == cudaErrorNotReady) {
      (void)cudaGetLastError();  // (not an error: clear it)
      return false;
    }
    C10_CUDA_CHECK(status);
    return true;
  }
  bool failed() const override { return position() != kNone; }
  [[noreturn]] void raise(bool deferred) const override {
    c10::cuda::CUDAStreamCaptureModeGuard relaxed(cudaStreamCaptureModeRelaxed);
    try {
      fail_(position(), deferred);
    } catch (const c10::IndexError&) {
      throw;
    } catch (const c10::Error& e) {  // the value could not be read: the error still comes
      ACLNN_CHECK_INDEX(false, deferred::op_name(op_, deferred), "an index failed its check (logical position ",
                        position(), "), and reading its value failed: ", e.what_without_backtrace());
    }
    TORCH_INTERNAL_ASSERT(false, "a failed index check raised nothing");
  }

 private:
  int64_t position() const { return host_.const_data_ptr<int64_t>()[0]; }
  void release() {
    if (event_ == nullptr) return;
    if (cudaEventDestroy(event_) != cudaSuccess) {
      (void)cudaGetLastError();  // (the runtime shutting down: leave no error for a later launch check)
    }
    event_ = nullptr;
  }

  const char* op_;
  at::Tensor host_;  // pinned
  cudaEvent_t event_ = nullptr;
  Fail fail_;
};

// After the kernels that wrote `flag` on `stream`: the deferred check of its
// value, or nothing during graph capture (bad indices then still read and
// write nothing, but raise nothing).
template <class Fail>
void finish(const char* op, const at::Tensor& flag, cudaStream_t stream, Fail fail) {
  if (capturing(stream)) return;
  deferred::submit(std::make_unique<FlagCheck<Fail>>(op, flag, stream, std::move(fail)));
}

}  // namespace torch_aclnn::cuda::flag
