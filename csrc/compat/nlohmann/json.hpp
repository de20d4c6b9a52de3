// nlohmann/json for ATen/functorch/Interpreter.h, which includes it although
// torch's wheels do not ship it. That header uses it only to (de)serialize
// an Interpreter (Interpreter::serialize / deserialize and their to_json /
// from_json templates), which torch_aclnn never does: csrc/autograd/kernel.cpp only
// reads the functorch layer stack. Where the real library is not installed,
// this declares what the header names; using it throws.
#pragma once

#if defined(__has_include_next) && __has_include_next(<nlohmann/json.hpp>)
#include_next <nlohmann/json.hpp>
#else
#include <stdexcept>
#include <string>

namespace nlohmann {

class json {
 public:
  json() = default;
  template <typename T>
  explicit json(const T&) {
    unavailable();
  }
  std::string dump() const {
    unavailable();
  }
  static json parse(const std::string&) {
    unavailable();
  }
  template <typename T>
  T get() const {
    unavailable();
  }

 private:
  [[noreturn]] static void unavailable() {
    throw std::logic_error("torch_aclnn is built without nlohmann/json: no functorch (de)serialization");
  }
};

}  // namespace nlohmann
#endif
