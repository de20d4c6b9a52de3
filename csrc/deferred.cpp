// The pending data-dependent checks of the process (csrc/common/deferred.h).
#include "common/deferred.h"

#include <atomic>
#include <deque>
#include <mutex>
#include <utility>

namespace torch_aclnn::deferred {
namespace {

struct Registry {
  std::mutex mutex;
  std::deque<std::unique_ptr<Check>> checks;  // in submission order
  std::atomic<size_t> count{0};
  std::atomic<bool> synchronous{false};
};

// Never destroyed: checks may be submitted and raised until the process ends.
Registry& registry() {
  static auto* r = new Registry();
  return *r;
}

}  // namespace

void submit(std::unique_ptr<Check> check) {
  Registry& r = registry();
  if (r.synchronous.load(std::memory_order_relaxed)) {
    check->arrived(true);
    if (check->failed()) check->raise(false);
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
    r.count.store(r.checks.size(), std::memory_order_relaxed);
  }
  if (oldest) {
    oldest->arrived(true);
    if (oldest->failed()) oldest->raise(true);
  }
}

void raise_arrived() {
  Registry& r = registry();
  if (r.count.load(std::memory_order_relaxed) == 0) return;
  std::unique_ptr<Check> bad;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (auto it = r.checks.begin(); it != r.checks.end();) {
      if (!(*it)->arrived(false) || ((*it)->failed() && bad)) {
        ++it;  // (a second failed check stays for the next call)
        continue;
      }
      if ((*it)->failed()) bad = std::move(*it);
      it = r.checks.erase(it);
    }
    r.count.store(r.checks.size(), std::memory_order_relaxed);
  }
  if (bad) bad->raise(true);
}

void raise_all() {
  Registry& r = registry();
  for (;;) {
    std::unique_ptr<Check> check;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      if (r.checks.empty()) return;
      check = std::move(r.checks.front());
      r.checks.pop_front();
      r.count.store(r.checks.size(), std::memory_order_relaxed);
    }
    check->arrived(true);
    if (check->failed()) check->raise(true);
  }
}

size_t pending() { return registry().count.load(std::memory_order_relaxed); }

bool synchronous() { return registry().synchronous.load(std::memory_order_relaxed); }

bool set_synchronous(bool on) { return registry().synchronous.exchange(on); }

}  // namespace torch_aclnn::deferred
