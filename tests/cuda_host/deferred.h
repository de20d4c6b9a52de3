// The deferred index checks (csrc/common/deferred.cpp, compiled into this module
// with its own registry) driven by checks whose result arrives after a given
// number of polls, as a CUDA event's would: the CUDA side (csrc/cuda/flag.cuh)
// only supplies a copy of the device flag and an event.
#pragma once

#include "common/deferred.cpp"

#include <c10/util/Exception.h>
#include <torch/extension.h>

#include <memory>
#include <string>

namespace deferred_emulation {

// Check `id`: its result arrives after `polls` non-waiting queries; a failed
// one raises "[torch_aclnn 161002] <op>: check <id> failed". The first
// `errors` queries (waiting or not) throw, as a failing CUDA call would.
class FakeCheck final : public torch_aclnn::deferred::Check {
 public:
  FakeCheck(int id, int polls, bool bad, int errors) : id_(id), polls_(polls), errors_(errors), bad_(bad) {}
  bool arrived(bool wait) override {
    TORCH_CHECK(errors_-- <= 0, "CUDA error while querying check ", id_);
    return wait || polls_-- <= 0;
  }
  bool failed() const override { return bad_; }
  [[noreturn]] void raise(bool deferred) const override {
    TORCH_CHECK_INDEX(false, "[torch_aclnn 161002] ", torch_aclnn::deferred::op_name("max_unpool3d", deferred),
                      ": check ", id_, " failed");
  }

 private:
  int id_, polls_, errors_;
  bool bad_;
};

inline void register_deferred(pybind11::module& m) {
  namespace d = torch_aclnn::deferred;
  m.def(
      "submit",
      [](int id, int polls, bool bad, int errors) { d::submit(std::make_unique<FakeCheck>(id, polls, bad, errors)); },
      pybind11::arg("id"), pybind11::arg("polls"), pybind11::arg("bad"), pybind11::arg("errors") = 0);
  m.def("raise_arrived", [] { d::raise_arrived(); });
  m.def("raise_all", [] { d::raise_all(); });
  m.def("pending", [] { return d::pending(); });
  m.def("set_synchronous", [](bool on) { return d::set_synchronous(on); });
  m.attr("max_pending") = d::kMaxPending;
}

}  // namespace deferred_emulation
