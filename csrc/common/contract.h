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
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/Exception.h>

#include <sstream>
#include <string>

#define TORCH_ACLNN_ERR_PARAM_NULLPTR 161001
#define TORCH_ACLNN_ERR_PARAM_INVALID 161002

#define ACLNN_CHECK_TYPE(cond, op, ...) \
  TORCH_CHECK_TYPE(cond, "[torch_aclnn 161002] ", op, ": ", __VA_ARGS__)
#define ACLNN_CHECK_VALUE(cond, op, ...) \
  TORCH_CHECK_VALUE(cond, "[torch_aclnn 161002] ", op, ": ", __VA_ARGS__)
#define ACLNN_CHECK_INDEX(cond, op, ...) \
  TORCH_CHECK_INDEX(cond, "[torch_aclnn 161002] ", op, ": ", __VA_ARGS__)

namespace torch_aclnn {

// The value of a size for an error message. Only called once a check has
// failed (TORCH_CHECK builds its message lazily), so turning a symbolic size
// into its concrete value (a guard) costs nothing: the trace is over anyway.
inline int64_t val(int64_t v) { return v; }
inline int64_t val(const c10::SymInt& v) {
  return v.is_symbolic() && v.has_hint() ? v.guard_int(__FILE__, __LINE__) : v.expect_int();
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
// numel * element size below 2^63 bytes (torch's limit for one storage).
// Checked where the sizes are concrete; an empty shape always fits. (A shape
// that fits but cannot be allocated is the allocator's error, not a contract
// violation.)
inline void check_fits_int64(const char* op, const char* what, c10::SymIntArrayRef sizes, int64_t itemsize) {
  int64_t bytes = itemsize;
  bool overflow = false;
  for (const c10::SymInt& s : sizes) {
    const auto v = s.maybe_as_int();
    if (!v || *v == 0) return;
    overflow = overflow || __builtin_mul_overflow(bytes, *v, &bytes);
  }
  ACLNN_CHECK_VALUE(!overflow, op, what, " of shape ", fmt_list(sizes),
                    " overflows int64: it would need 2^63 bytes or more");
}

// A contract is written once, over SymInts, so that the same code validates
// concrete sizes (CPU/CUDA kernels) and symbolic ones (Meta kernels under
// torch.compile(dynamic=True); comparisons then become shape guards).
inline c10::SymIntArrayRef sym(at::IntArrayRef a) { return c10::fromIntArrayRefSlow(a); }

}  // namespace torch_aclnn
