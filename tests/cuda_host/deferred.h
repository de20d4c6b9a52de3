// The deferred index checks (csrc/deferred.cpp, compiled into this module
// with its own registry) driven by checks whose result arrives after a given
// number of polls, as a CUDA event's would: the CUDA side (csrc/cuda/flag.cuh)
// only supplies a copy of the device flag and an event.
#pragma once

#include "deferred.cpp"

#include <c10/util/Exception.h>
#include <torch/extension.h>

#include <memory>
#include <string>

namespace deferred_emulation {

// Check `id`: its result arrives after `polls` non-waiting queries; a failed
// one raises "[torch_aclnn 161002] <op>: check <id> failed".
class FakeCheck final : public torch_aclnn::deferred::Check {
 public:
  FakeCheck(int id, int polls, bool bad) : id_(id), polls_(polls), bad_(bad) {}
  bool arrived(bool wait) override { return wait || polls_-- <= 0; }
  bool failed() const override { return bad_; }
  [[noreturn]] void raise(bool deferred) const override {
    TORCH_CHECK_INDEX(false, "[torch_aclnn 161002] ", torch_aclnn::deferred::op_name("max_unpool3d", deferred),
                      ": check ", id_, " failed");
  }

 private:
  int id_, polls_;
  bool bad_;
};

inline void register_deferred(pybind11::module& m) {
  namespace d = torch_aclnn::deferred;
  m.def("submit", [](int id, int polls, bool bad) { d::submit(std::make_unique<FakeCheck>(id, polls, bad)); });
  m.def("raise_arrived", [] { d::raise_arrived(); });
  m.def("raise_all", [] { d::raise_all(); });
  m.def("pending", [] { return d::pending(); });
  m.def("set_synchronous", [](bool on) { return d::set_synchronous(on); });
  m.attr("max_pending") = d::kMaxPending;
}

}  // namespace deferred_emulation
