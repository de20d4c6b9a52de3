// The error vocabulary shared by every operator contract (csrc/contracts/*.h).
//
// Every contract violation raises a Python exception whose message starts with
// "[torch_aclnn <aclnn code>] <op>: " and then names the argument, the rule and
// the value given. Exception types (one rule, every backend):
//   TypeError   161001 a required argument is None (checked in the Python API;
//                      the schema rejects None before any kernel runs)
//   TypeError   161002 an unsupported dtype, or dtypes that must match and don't
//   ValueError  161002 a shape, rank, size, scalar or option that breaks a rule
//   IndexError  161002 an index value outside its range (data dependent)
//   RuntimeError 161002 tensor arguments on more than one device
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKey.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>
#include <c10/core/SymInt.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include "common/deferred.h"

#include <algorithm>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>

#define ACLNN_CHECK_TYPE(cond, op, ...) \
  TORCH_CHECK_TYPE(cond, "[torch_aclnn 161002] ", op, ": ", __VA_ARGS__)
#define ACLNN_CHECK_VALUE(cond, op, ...) \
  TORCH_CHECK_VALUE(cond, "[torch_aclnn 161002] ", op, ": ", __VA_ARGS__)
#define ACLNN_CHECK_INDEX(cond, op, ...) \
  TORCH_CHECK_INDEX(cond, "[torch_aclnn 161002] ", op, ": ", __VA_ARGS__)

namespace torch_aclnn {

// Whether `e` is a contract error of the call that raised it: its message
// starts "[torch_aclnn 16100<n>] <op>: " (the rows above; torch_aclnn's other
// errors start "[torch_aclnn] "), and it is not an earlier call's deferred
// index check (common/deferred.h). Its type says which row. The Python twin
// is torch_aclnn/ops/_errors.py's is_contract_error.
inline bool is_contract_error(const c10::Error& e) {
  static constexpr std::string_view kTags[] = {"[torch_aclnn 161001] ", "[torch_aclnn 161002] "};
  const std::string_view message = e.what_without_backtrace();
  for (std::string_view tag : kTags) {
    if (message.substr(0, tag.size()) == tag) {
      const std::string_view rest = message.substr(tag.size());
      return rest.find(": ") != std::string_view::npos && rest.substr(0, deferred::kTag.size()) != deferred::kTag;
    }
  }
  return false;
}

// The value of a size for an error message. Only called once a check has
// failed (TORCH_CHECK builds its message lazily), so turning a symbolic size
// into its concrete value (a guard) costs nothing: the trace is over anyway.
inline int64_t val(int64_t v) { return v; }
inline int64_t val(const c10::SymInt& v) {
  return v.is_symbolic() && v.has_hint() ? v.guard_int(__FILE__, __LINE__) : v.expect_int();
}

// A set of dtypes an argument may have, and the words its TypeError lists
// them in ("<arg> must be <names>, got <dtype>").
struct DtypeSet {
  c10::ArrayRef<at::ScalarType> dtypes;
  const char* names;

  bool contains(at::ScalarType t) const { return std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end(); }
};

inline constexpr at::ScalarType kFloatingDtypes[] = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16};
// The dtypes of every family's floating tensors. A family with another set
// (max_unpool's values, the pooling indices) passes its own.
inline constexpr DtypeSet kFloating{kFloatingDtypes, "float32, float64, float16 or bfloat16"};

// The dtype row of every contract: arg's dtype t is one of `dtypes`.
inline void check_dtype(const char* op, const char* arg, at::ScalarType t, const DtypeSet& dtypes = kFloating) {
  ACLNN_CHECK_TYPE(dtypes.contains(t), op, arg, " must be ", dtypes.names, ", got ", t);
}

// "[2, 3, 4]" for an array of sizes (IntArrayRef or SymIntArrayRef).
template <typename Array>
std::string fmt_list(const Array& a) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << val(a[i]);
  os << "]";
  return os.str();
}

// A result allocated from sizes given as arguments must be representable:
// its byte size, and the strides torch computes for it (the product of the
// sizes with 0 counted as 1), below 2^63 (torch's limit for one storage).
// Checked where the sizes are concrete. itemsize 1 checks an element count
// (a broadcast that is reduced, never allocated). (A shape that fits but
// cannot be allocated is the allocator's error, not a contract violation.)
inline void check_fits_int64(const char* op, const char* what, c10::SymIntArrayRef sizes, int64_t itemsize) {
  int64_t bytes = itemsize;
  bool overflow = false;
  for (const c10::SymInt& s : sizes) {
    const auto v = s.maybe_as_int();
    if (!v) return;
    overflow = overflow || __builtin_mul_overflow(bytes, std::max<int64_t>(*v, 1), &bytes);
  }
  ACLNN_CHECK_VALUE(!overflow, op, what, " of shape ", fmt_list(sizes),
                    " overflows int64: it would need 2^63 ", itemsize == 1 ? "elements" : "bytes", " or more");
}

// One device (every operator, every backend): every tensor argument, and
// the out= tensor, live on one device, meta included. A 0-dim CPU input is
// accepted beside tensors of another device, as aten's elementwise ops
// accept a CPU scalar. Returns the call's device: that of the first input
// that is not such a scalar (else the first input's), where the result is
// allocated. Checked before anything else, so a mixed call never reaches
// another backend's kernel or returns uninitialised memory.
//
// The devices compared are the logical ones: a fake tensor (FakeTensorMode,
// torch.compile) reaches the Meta kernels as a meta tensor whose key set
// still carries the backend key of the device it stands for (CPU, CUDA,
// PrivateUse1, ...); that backend's device type is its device then (index
// unknown: such devices compare by type only). So a CPU/CUDA mix is caught
// while tracing as it is when run, with the same tagged message.
struct Named {
  const char* name;
  const at::Tensor& tensor;
};

// t's device, or for a fake tensor the type of the device it stands for
// (index -1).
inline c10::Device logical_device(const at::Tensor& t) {
  const c10::Device device = t.device();
  if (!device.is_meta()) return device;
  const c10::BackendComponent backend = t.key_set().highestBackendKey();
  if (backend == c10::BackendComponent::InvalidBit || backend == c10::BackendComponent::MetaBit) return device;
  return c10::Device(
      c10::dispatchKeyToDeviceType(c10::toRuntimePerBackendFunctionalityKey(c10::DispatchKey::Dense, backend)));
}

inline bool same_device(c10::Device a, c10::Device b) {
  return a.type() == b.type() && (a.index() == b.index() || !a.has_index() || !b.has_index());
}

inline bool cpu_scalar(const at::Tensor& t) { return t.dim() == 0 && logical_device(t).is_cpu(); }

inline c10::Device one_device(const char* op, std::initializer_list<Named> inputs,
                              const at::Tensor& out = at::Tensor(), const char* out_name = "grad_input") {
  const Named* first = inputs.begin();
  for (const Named& a : inputs) {
    if (!cpu_scalar(a.tensor)) {
      first = &a;
      break;
    }
  }
  const c10::Device logical = logical_device(first->tensor);
  const auto check = [&](const char* name, const at::Tensor& t, bool scalar_ok) {
    const c10::Device device = logical_device(t);
    TORCH_CHECK(same_device(device, logical) || (scalar_ok && cpu_scalar(t)), "[torch_aclnn 161002] ", op, ": ",
                name, " is on ", device, ", but ", first->name, " is on ", logical,
                ": every tensor argument", out.defined() ? " and the out= tensor" : "",
                " must be on one device (a 0-dim CPU input is accepted beside tensors of another device)");
  };
  for (const Named& a : inputs) check(a.name, a.tensor, true);
  if (out.defined()) check(out_name, out, false);
  return first->tensor.device();
}

// The out= tensor a contract checks: the caller's grad_input in a
// .grad_input overload, undefined for the functional form. A type of its own
// so that the generic entries (common/entry.h) tell a contract's out=
// parameter from the operator's arguments.
struct Out {
  const at::Tensor& tensor;
  Out() : tensor(undefined()) {}
  Out(const at::Tensor& t) : tensor(t) {}  // NOLINT(google-explicit-constructor)

 private:
  static const at::Tensor& undefined() {
    static const at::Tensor t;
    return t;
  }
};

// The result of a valid call, as its contract states it (what aten's
// structured meta functions set): allocated by the generic entries
// (common/entry.h) on every backend, Meta included, in this spec, and the
// out= tensor's temporary when the kernel cannot write out= directly.
struct Result {
  c10::SmallVector<c10::SymInt, 6> sizes;  // unless `like`
  at::ScalarType dtype = at::kFloat;
  c10::Device device = c10::kCPU;  // the call's device (one_device)
  c10::MemoryFormat format = c10::MemoryFormat::Contiguous;
  // Set: empty_like(*like) with its sizes, dtype and strides (elementwise ops).
  const at::Tensor* like = nullptr;
  // out= (common/entry.h: writes_in_place): the out= tensor is written
  // directly only when it has `dtype`, when dense in `format` or the other
  // 5-D layout if out_dense, and when it shares no memory with `reads` (or,
  // out_elementwise, is exactly one of them).
  bool out_dense = false;
  bool out_elementwise = false;
  c10::SmallVector<const at::Tensor*, 3> reads;

  c10::TensorOptions options() const {
    return c10::TensorOptions().dtype(dtype).device(device).memory_format(format);
  }
  static Result like_tensor(const at::Tensor& t, c10::Device device) {
    Result r;
    r.like = &t;
    r.dtype = t.scalar_type();
    r.device = device;
    return r;
  }
  // A backward's grad_input (pooling, upsample): `sizes` in `format` with
  // grad_output's dtype; an out= tensor is written directly when dense and
  // sharing no memory with grad_output.
  static Result grad_input(c10::SymIntArrayRef sizes, const at::Tensor& grad_output, c10::Device device,
                           c10::MemoryFormat format) {
    Result r;
    r.sizes.assign(sizes.begin(), sizes.end());
    r.dtype = grad_output.scalar_type();
    r.device = device;
    r.format = format;
    r.out_dense = true;
    r.reads = {&grad_output};
    return r;
  }
};

// What a contract returns: the result's spec and what the family's kernels
// need beyond the operator's arguments.
struct NoParams {};
template <class Params = NoParams>
struct Plan {
  Result result;
  Params params;
};

// What the contract of an operator with two results returns (values and
// their indices): the second result's spec too.
template <class Params = NoParams>
struct Plan2 {
  Result result;
  Result second;
  Params params;
};

// An input on the call's device: t itself, or a 0-dim CPU input copied there
// (for kernels that read every operand on the device).
inline at::Tensor on_device(const at::Tensor& t, c10::Device device) {
  return t.device() == device ? t : t.to(device);
}

}  // namespace torch_aclnn
