// The Autograd kernels of every torch_aclnn operator.
//
// Functional operators. The autograd formulas live in Python, next to each
// family's API (torch_aclnn/ops/<family>.py): one torch.autograd.Function per
// operator (backward, jvp, setup_context), built by
// torch_aclnn.ops._common.register_autograd. Registered the torch.library way,
// they would make the Autograd kernel itself a Python function, entered on
// every call, also where no derivative is needed (no_grad, or no input
// requiring grad or carrying a tangent): some 4-8 us per call, more than the
// CPU kernels take on small tensors. This C++ kernel decides first:
//   - no derivative needed (grad mode off or no argument requiring grad, and
//     no argument with a forward-mode tangent): the call goes below autograd
//     to the backend kernel (CPU, CUDA, Meta, PrivateUse1) without entering
//     Python;
//   - otherwise: the operator's autograd.Function runs (Function.apply). Its
//     forward calls the operator again, now with grad mode and forward grad
//     mode off, so it takes the first branch.
// Inside a torch.func transform (grad, vjp, jvp, jacrev, jacfwd, ...) this
// kernel runs within the transform's processing of the call, with the
// functorch dispatch keys excluded; Function.apply dispatches through
// functorch by itself (custom_function_call), so it runs as if called from
// Python: with the dispatch key set the transform saved when it took the
// call, and the transform no longer processing it (LeaveTransformProcessing).
//
// out= overloads (every schema argument written to, `Tensor(a!)`): the rules
// of aten's out= operators, generically from the schema's alias info:
//   Autograd:        in grad mode, an argument (the written one included)
//                    that requires grad is an error, as is a forward-mode
//                    tangent; nothing is recorded;
//   ADInplaceOrView: the written tensors' version counters are bumped after
//                    the write (a view shares its base's counter), so a tensor
//                    saved for backward and overwritten makes backward raise;
//                    an inference tensor written outside inference mode
//                    raises torch's error.
// Under inference mode the Autograd kernel does not run (the autograd keys are
// excluded) and the ADInplaceOrView one runs for normal tensors only, as for
// aten.
#include "autograd.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/functorch/DynamicLayer.h>
#include <c10/core/AutogradState.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/library.h>

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace torch_aclnn::autograd {
namespace {

// name -> Python callable. Never destroyed: the callables must outlive any
// call, and Python objects cannot be released after the interpreter is gone.
struct Formulas {
  std::mutex mutex;
  std::unordered_map<std::string, PyObject*> by_name;
};

Formulas& formulas() {
  static auto* f = new Formulas();
  return *f;
}

PyObject* lookup(const std::string& name) {
  auto& f = formulas();
  std::lock_guard<std::mutex> lock(f.mutex);
  const auto it = f.by_name.find(name);
  return it == f.by_name.end() ? nullptr : it->second;
}

// What a call's derivatives need: a gradient (torch.library's test,
// torch._C._any_requires_grad: grad mode on and a tensor argument that
// requires grad) and a forward-mode tangent (a tensor argument with one, as
// aten's kernels test it: isFwGradDefined, torch has one forward AD level, 0;
// _fw_grad is undefined while forward grad mode is off, inside an
// autograd.Function's forward for one). Both live in a tensor's autograd
// metadata: a tensor without any is skipped at once. One pass, with tag
// checks only (no type comparisons), as it runs on every call.
struct Needs {
  bool grad = false;
  bool tangent = false;
};

Needs derivatives_needed(const torch::jit::Stack& stack, size_t nargs) {
  Needs needs;
  const bool grad_mode = at::GradMode::is_enabled();
  const bool fw_grad_mode = c10::AutogradState::get_tls_state().get_fw_grad_mode();
  if (!grad_mode && !fw_grad_mode) return needs;
  const auto visit = [&](const at::Tensor& t) {
    if (!t.defined() || t.unsafeGetTensorImpl()->autograd_meta() == nullptr) return;
    needs.grad = needs.grad || (grad_mode && t.requires_grad());
    needs.tangent = needs.tangent || (fw_grad_mode && t._fw_grad(0).defined());
  };
  for (size_t i = stack.size() - nargs; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      visit(v.toTensor());
    } else if (v.isList()) {  // Tensor[], Tensor?[]
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor()) visit(e.toTensor());
      }
    }
  }
  return needs;
}

// The operator's name as aten's messages spell it: "elu_backward".
std::string base_name(const c10::FunctionSchema& schema) {
  const std::string& name = schema.name();
  const auto pos = name.rfind("::");
  return pos == std::string::npos ? name : name.substr(pos + 2);
}

// Within a torch.func transform's processing of a call (grad, vjp, jvp and
// the transforms built on them), for as long as it lives: outside it again.
// The transform saved the dispatch key set it took the call with and
// excluded its own keys; this guard restores that key set and clears the
// transform's record of it, so that the autograd.Function (and the jvp and
// the operators it calls at the same level) go through functorch as when
// called from Python, and puts both back on exit.
class LeaveTransformProcessing {
 public:
  LeaveTransformProcessing() {
    if (!c10::impl::tls_is_dispatch_key_excluded(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
        !at::functorch::maybeCurrentDynamicLayer().has_value()) {
      return;
    }
    at::functorch::DynamicLayer layer = at::functorch::popDynamicLayer();
    try {
      saved_ = layer.interpreter().getSavedLocalDispatchKeySet();
      layer.interpreter().clearSavedLocalDispatchKeySet();
    } catch (const c10::Error&) {  // the transform is not processing a call: nothing to leave
    }
    at::functorch::pushDynamicLayer(std::move(layer));
    if (saved_.has_value()) c10::impl::_force_tls_local_dispatch_key_set(*saved_);
  }
  ~LeaveTransformProcessing() {
    if (!saved_.has_value()) return;
    c10::impl::_force_tls_local_dispatch_key_set(inside_);
    at::functorch::DynamicLayer layer = at::functorch::popDynamicLayer();
    layer.interpreter().saveLocalDispatchKeySet(*saved_);
    at::functorch::pushDynamicLayer(std::move(layer));
  }
  LeaveTransformProcessing(const LeaveTransformProcessing&) = delete;
  LeaveTransformProcessing& operator=(const LeaveTransformProcessing&) = delete;

 private:
  std::optional<c10::impl::LocalDispatchKeySet> saved_;
  c10::impl::LocalDispatchKeySet inside_ = c10::impl::tls_local_dispatch_key_set();
};

void autograd_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keyset, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const Needs needs = derivatives_needed(*stack, nargs);
  if (!needs.grad && !needs.tangent) {
    at::AutoDispatchBelowAutograd below;
    op.redispatchBoxed(keyset & c10::after_autograd_keyset, stack);
    return;
  }
  PyObject* formula = lookup(schema.name());
  TORCH_CHECK(formula != nullptr, schema.name(), ": no autograd formula is registered (import torch_aclnn)");
  LeaveTransformProcessing leave;  // see the top
  pybind11::gil_scoped_acquire gil;
  pybind11::tuple args(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    args[i] = torch::jit::toPyObject(std::move((*stack)[stack->size() - nargs + i]));
  }
  torch::jit::drop(*stack, nargs);
  pybind11::object result = pybind11::reinterpret_borrow<pybind11::object>(formula)(*args);
  TORCH_INTERNAL_ASSERT(schema.returns().size() == 1, schema.name(), ": one result expected");
  stack->push_back(torch::jit::toIValue(result, schema.returns()[0].type()));
}

bool writes_an_argument(const c10::FunctionSchema& schema) {
  for (const auto& arg : schema.arguments()) {
    if (arg.alias_info() != nullptr && arg.alias_info()->isWrite()) return true;
  }
  return false;
}

// The tensors the call writes (arguments annotated `(a!)`), before the call
// consumes the stack.
std::vector<at::Tensor> written_tensors(const c10::FunctionSchema& schema, const torch::jit::Stack& stack) {
  const size_t nargs = schema.arguments().size();
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < nargs; ++i) {
    const auto* alias = schema.arguments()[i].alias_info();
    if (alias == nullptr || !alias->isWrite()) continue;
    const c10::IValue& v = stack[stack.size() - nargs + i];
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else if (v.isList()) {  // Tensor(a!)[]
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor()) out.push_back(e.toTensor());
      }
    }
  }
  return out;
}

// Autograd kernel of the out= overloads: aten's checks
// (throw_error_out_requires_grad, and forward AD's "out= function" error),
// then the call below autograd. Nothing is recorded.
void out_autograd_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keyset, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const Needs needs = derivatives_needed(*stack, nargs);
  TORCH_CHECK(!needs.grad, base_name(schema),
              "(): functions with out=... arguments don't support automatic differentiation, but one of the "
              "arguments requires grad.");
  TORCH_CHECK_NOT_IMPLEMENTED(!needs.tangent, "Trying to use forward AD with ", base_name(schema),
                              "_out that does not support it because it is an out= function");
  at::AutoDispatchBelowAutograd below;
  op.redispatchBoxed(keyset & c10::after_autograd_keyset, stack);
}

// ADInplaceOrView kernel of the out= overloads: the write, then the version
// bump of every written tensor (aten's increment_version).
void out_inplace_or_view_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keyset,
                                torch::jit::Stack* stack) {
  const std::vector<at::Tensor> written = written_tensors(op.schema(), *stack);
  {
    at::AutoDispatchBelowADInplaceOrView below;
    op.redispatchBoxed(keyset & c10::after_ADInplaceOrView_keyset, stack);
  }
  for (const at::Tensor& t : written) {
    if (t.defined()) torch::autograd::impl::bump_version(t);
  }
}

}  // namespace

void register_out_kernels() {
  // Never destroyed, like the registrations of a TORCH_LIBRARY_IMPL block.
  static auto* autograd_lib =
      new torch::Library(torch::Library::IMPL, "torch_aclnn", c10::DispatchKey::Autograd, __FILE__, __LINE__);
  static auto* inplace_lib = new torch::Library(torch::Library::IMPL, "torch_aclnn",
                                                c10::DispatchKey::ADInplaceOrView, __FILE__, __LINE__);
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("torch_aclnn::", 0) != 0) continue;
    const auto handle = dispatcher.findSchema(name);
    if (!handle.has_value() || !writes_an_argument(handle->schema())) continue;
    const std::string op = name.name.substr(std::string("torch_aclnn::").size()) +
                           (name.overload_name.empty() ? "" : "." + name.overload_name);
    autograd_lib->impl(op.c_str(), torch::CppFunction::makeFromBoxedFunction<&out_autograd_kernel>());
    inplace_lib->impl(op.c_str(), torch::CppFunction::makeFromBoxedFunction<&out_inplace_or_view_kernel>());
  }
}

PyObject* set_formula(PyObject* /*self*/, PyObject* args) {
  const char* name = nullptr;
  PyObject* fn = nullptr;
  if (!PyArg_ParseTuple(args, "sO", &name, &fn)) return nullptr;
  const std::string qualname = name;
  const std::string ns = "torch_aclnn::";
  if (qualname.rfind(ns, 0) != 0 || !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_ValueError, "_set_autograd_formula(name, fn): a torch_aclnn:: operator and a callable");
    return nullptr;
  }
  bool first;
  {
    auto& f = formulas();
    std::lock_guard<std::mutex> lock(f.mutex);
    PyObject*& slot = f.by_name[qualname];
    first = slot == nullptr;
    Py_INCREF(fn);
    Py_XDECREF(slot);
    slot = fn;
  }
  if (first) {
    // The operator's Autograd kernel, registered with its first formula (so
    // an operator has one only once its formula exists). Never destroyed,
    // like the registrations of a TORCH_LIBRARY_IMPL block.
    static auto* library =
        new torch::Library(torch::Library::IMPL, "torch_aclnn", c10::DispatchKey::Autograd, __FILE__, __LINE__);
    try {
      library->impl(qualname.substr(ns.size()).c_str(), torch::CppFunction::makeFromBoxedFunction<&autograd_kernel>());
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
      return nullptr;
    }
  }
  Py_RETURN_NONE;
}

}  // namespace torch_aclnn::autograd
