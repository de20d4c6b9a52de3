// The Autograd kernel of every functional torch_aclnn operator.
//
// The autograd formulas live in Python, next to each family's API
// (torch_aclnn/ops/<family>.py, registered through
// torch_aclnn.ops._common.register_autograd, which takes what
// torch.library.register_autograd takes). Registered the torch.library way,
// they would make the Autograd kernel itself a Python function, entered on
// every call, also where no gradient is needed (no_grad, or no input
// requiring grad): some 4-8 us per call, more than the CPU kernels take on
// small tensors. This C++ kernel decides first:
//   - no gradient needed: the call goes below autograd to the backend kernel
//     (CPU, CUDA, Meta, PrivateUse1) without entering Python — what the
//     Python kernel would do, minus the interpreter;
//   - otherwise: the Python formula runs, exactly as torch.library runs it
//     (torch._library.autograd.make_autograd_impl over the same backward and
//     setup_context; see ops/_common.py).
// The out= overloads have no formula (out= does not support autograd) and
// keep torch's default Autograd fallback.
#include "autograd.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/library.h>

#include <mutex>
#include <string>
#include <unordered_map>

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

// torch.library's test (torch._C._any_requires_grad): grad mode on and a
// tensor argument that requires grad.
bool needs_grad(const torch::jit::Stack& stack, size_t nargs) {
  if (!at::GradMode::is_enabled()) return false;
  for (size_t i = stack.size() - nargs; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      if (v.toTensor().requires_grad()) return true;
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList()) {
        if (t.requires_grad()) return true;
      }
    }
  }
  return false;
}

void autograd_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keyset, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  if (!needs_grad(*stack, nargs)) {
    at::AutoDispatchBelowAutograd below;
    op.redispatchBoxed(keyset & c10::after_autograd_keyset, stack);
    return;
  }
  PyObject* formula = lookup(schema.name());
  TORCH_CHECK(formula != nullptr, schema.name(), ": no autograd formula is registered (import torch_aclnn)");
  pybind11::gil_scoped_acquire gil;
  pybind11::tuple args(nargs + 1);
  args[0] = pybind11::int_(keyset.raw_repr());
  for (size_t i = 0; i < nargs; ++i) {
    args[i + 1] = torch::jit::toPyObject(std::move((*stack)[stack->size() - nargs + i]));
  }
  torch::jit::drop(*stack, nargs);
  pybind11::object result = pybind11::reinterpret_borrow<pybind11::object>(formula)(*args);
  TORCH_INTERNAL_ASSERT(schema.returns().size() == 1, schema.name(), ": one result expected");
  stack->push_back(torch::jit::toIValue(result, schema.returns()[0].type()));
}

}  // namespace

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
