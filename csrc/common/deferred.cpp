// The pending data-dependent checks of the process (csrc/common/deferred.h).
//
// Failed checks raise in submission order: raise_arrived() stops at the first
// check whose result has not arrived. (With several threads, a check another
// thread is waiting for is out of the registry meanwhile, so the order holds
// per thread.) A check is only dropped once its result is known: if waiting
// for it throws, it goes back, so a CUDA error while polling never loses a
// failed check. Passed checks are destroyed outside the registry's lock (they
// hold tensors).
#include "common/deferred.h"

#include <atomic>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

namespace torch_aclnn::deferred {
namespace {

struct Registry {
  std::mutex mutex;
  std::deque<std::unique_ptr<Check>> checks;  // in submission order
  std::atomic<size_t> count{0};
  std::atomic<bool> synchronous{false};

  void counted() { count.store(checks.size(), std::memory_order_relaxed); }  // (under the lock)
};

// Never destroyed: checks may be submitted and raised until the process ends.
Registry& registry() {
  static auto* r = new Registry();
  return *r;
}

// Waits for a check that is not in the registry and raises it if it failed
// (deferred: tagged). If waiting throws, the check goes into the registry, in
// its place: the front for a pending one taken out (deferred), the back for a
// new one, and the error goes on.
void wait_and_raise(Registry& r, std::unique_ptr<Check> check, bool deferred) {
  try {
    check->arrived(true);
  } catch (...) {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (deferred) {
      r.checks.push_front(std::move(check));
    } else {
      r.checks.push_back(std::move(check));
    }
    r.counted();
    throw;
  }
  if (check->failed()) check->raise(deferred);
}

}  // namespace

void submit(std::unique_ptr<Check> check) {
  Registry& r = registry();
  if (r.synchronous.load(std::memory_order_relaxed)) {
    wait_and_raise(r, std::move(check), false);
    return;
  }
  std::unique_ptr<Check> oldest;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.checks.push_back(std::move(check));
    if (r.checks.size() > kMaxPending) {
      oldest = std::move(r.checks.front());
      r.checks.pop_front();
    }
    r.counted();
  }
  if (oldest) wait_and_raise(r, std::move(oldest), true);
}

void raise_arrived() {
  Registry& r = registry();
  if (r.count.load(std::memory_order_relaxed) == 0) return;
  std::vector<std::unique_ptr<Check>> passed;
  std::unique_ptr<Check> bad;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    try {
      while (!r.checks.empty() && r.checks.front()->arrived(false)) {
        std::unique_ptr<Check> front = std::move(r.checks.front());
        r.checks.pop_front();
        if (front->failed()) {
          bad = std::move(front);
          break;  // (the checks after it wait for the next call)
        }
        passed.push_back(std::move(front));
      }
    } catch (...) {  // (a CUDA error: the unanswered check stays at the front)
      r.counted();
      throw;
    }
    r.counted();
  }
  passed.clear();  // (outside the lock)
  if (bad) bad->raise(true);
}

void raise_all() {
  Registry& r = registry();
  // The checks pending now: those submitted meanwhile are the next call's.
  for (size_t n = r.count.load(std::memory_order_relaxed); n > 0; --n) {
    std::unique_ptr<Check> check;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      if (r.checks.empty()) return;
      check = std::move(r.checks.front());
      r.checks.pop_front();
      r.counted();
    }
    wait_and_raise(r, std::move(check), true);
  }
}

size_t pending() { return registry().count.load(std::memory_order_relaxed); }

bool set_synchronous(bool on) { return registry().synchronous.exchange(on); }

}  // namespace torch_aclnn::deferred
