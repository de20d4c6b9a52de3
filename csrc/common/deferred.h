// Data-dependent contract checks whose result arrives after the call
// returns (docs/spec.md §7, "Index checks on CUDA").
//
// A CUDA kernel that checks indices on the device (max_unpool3d and its
// backward, max_pool3d_with_indices_backward) keeps the first bad position
// in a device flag. Reading that flag at once would synchronise the host
// with the GPU on every call. Instead the call submits a Check (an
// asynchronous copy of the flag and an event, csrc/cuda/flag.cuh) and
// returns; a failed check raises its IndexError, tagged "deferred: ", at
// the first of:
//   - the next torch_aclnn operator call on a CUDA device (any thread, not
//     during CUDA graph capture), for the checks whose result has arrived by
//     then, in submission order (never waiting);
//   - torch_aclnn.check_index_errors(), which waits for the pending checks;
//   - at exit, torch_aclnn warns about each failed check nobody raised.
// In synchronous mode (torch_aclnn.set_sync_index_checks(True), or
// TORCH_ACLNN_SYNC_INDEX_CHECKS=1) each call waits for its own check and
// raises at the call, untagged, as the CPU kernels do.
//
// Device-independent (no CUDA here): csrc/common/deferred.cpp keeps the pending
// checks of the process; tests/cuda_host/deferred.h tests it on the host.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace torch_aclnn::deferred {

// What a deferred IndexError's message starts with after "[torch_aclnn
// 161002] ", before the operator's name (is_contract_error, in
// common/contract.h and torch_aclnn/ops/_errors.py, tells such an error, which
// belongs to an earlier call, from the current call's own).
inline constexpr std::string_view kTag = "deferred: ";

// The operator's name as a check's error names it.
inline std::string op_name(const char* op, bool deferred) {
  return deferred ? std::string(kTag) + op : std::string(op);
}

class Check {
 public:
  virtual ~Check() = default;
  // Whether the result has arrived; with wait, blocks until it has.
  virtual bool arrived(bool wait) = 0;
  // Whether the check failed (once arrived).
  virtual bool failed() const = 0;
  // Throws the check's contract error (once failed); deferred: the call has
  // returned since, and the message is tagged.
  [[noreturn]] virtual void raise(bool deferred) const = 0;
};

// Synchronous mode: the check is waited for and raises now. Otherwise it is
// kept until its result arrives (at most kMaxPending: beyond that the oldest
// is waited for).
void submit(std::unique_ptr<Check> check);

// Takes the checks whose result has arrived, in submission order up to the
// first that has not: drops the passed ones, raises the first failed one (the
// checks after it stay pending). Never waits. Costs one atomic load while
// nothing is pending.
void raise_arrived();

// Waits for the checks pending when called, in submission order; raises the
// first failed one (the checks after it stay pending).
void raise_all();

// How many checks are pending.
size_t pending();

// Sets synchronous mode; returns the previous mode.
bool set_synchronous(bool on);

inline constexpr size_t kMaxPending = 1024;

}  // namespace torch_aclnn::deferred
