// The Python API's direct call of an operator: torch_aclnn._C._direct_call(
// name, overload, fallback) makes a callable that behaves as `fallback` (the
// operator's torch.ops OpOverload) and takes a shorter way for the common
// call.
//
// torch.ops reaches an operator through a Python frame (OpOverload.__call__),
// a pybind11 function and a generic schema parser (createStackForSchema),
// each dearer than aten's generated bindings. A direct call
// parses the schema once, when it is made, into one converter per argument.
// For a call whose arguments all have the schema's own exact types
// (torch.Tensor or nn.Parameter; float; int within ±2^62; bool; None for an
// optional float or int; a list or tuple of such ints), it builds the argument stack
// itself and calls the operator boxed, as torch.ops does, the GIL released.
// Everything below (autograd, autocast, functorch, the Python dispatch key,
// the kernels and their contracts) is the same dispatcher call.
//
// Any other call goes to `fallback` unchanged, so its errors and its
// __torch_function__ handling are torch.ops' own: keyword arguments, a
// tensor subclass (its __torch_function__, fake tensors), an active
// TorchFunctionMode, an int or a float of another type (bool, numpy scalars,
// SymInt), an int beyond ±2^62 (the contract's range errors are the checked
// path's). The Python API makes the direct call outside torch.compile only:
// dynamo does not trace into C, so compiled code calls the OpOverload itself.
#include "direct_call.h"

#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <optional>
#include <string>
#include <vector>

namespace torch_aclnn::direct_call {
namespace {

enum class Kind { Tensor, Float, OptionalFloat, Int, OptionalInt, Bool, IntList };

struct Argument {
  Kind kind;
  std::optional<c10::IValue> default_value;
};

struct Signature {
  c10::OperatorHandle handle;
  std::vector<Argument> arguments;
  size_t required = 0;  // the leading arguments without a default
  size_t returns = 0;
};

struct DirectCall {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  Signature* signature;
  PyObject* fallback;
};

// ints beyond this go to the fallback: SymInt reserves the range below
// -2^62, and the checked path words the contract's range errors.
constexpr int64_t kIntLimit = int64_t{1} << 62;

bool to_int(PyObject* o, int64_t& v) {
  if (!PyLong_CheckExact(o)) return false;  // (bool is a subclass of int)
  int overflow = 0;
  v = PyLong_AsLongLongAndOverflow(o, &overflow);
  return overflow == 0 && v >= -kIntLimit && v <= kIntLimit;
}

bool convert(Kind kind, PyObject* o, torch::jit::Stack& stack) {
  if ((kind == Kind::OptionalFloat || kind == Kind::OptionalInt) && o == Py_None) {
    stack.emplace_back();
    return true;
  }
  switch (kind) {
    case Kind::Tensor:
      if (!THPVariable_CheckExact(o)) return false;
      stack.emplace_back(THPVariable_Unpack(o));
      return true;
    case Kind::OptionalFloat:
    case Kind::Float:
      if (!PyFloat_CheckExact(o)) return false;
      stack.emplace_back(PyFloat_AS_DOUBLE(o));
      return true;
    case Kind::OptionalInt:
    case Kind::Int: {
      int64_t v = 0;
      if (!to_int(o, v)) return false;
      stack.emplace_back(v);
      return true;
    }
    case Kind::Bool:
      if (o != Py_True && o != Py_False) return false;
      stack.emplace_back(o == Py_True);
      return true;
    case Kind::IntList: {
      const bool list = PyList_CheckExact(o);
      if (!list && !PyTuple_CheckExact(o)) return false;
      const Py_ssize_t n = list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
      c10::List<int64_t> values;
      values.reserve(n);
      for (Py_ssize_t i = 0; i < n; ++i) {
        int64_t v = 0;
        if (!to_int(list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i), v)) return false;
        values.push_back(v);
      }
      stack.emplace_back(std::move(values));
      return true;
    }
  }
  return false;
}

// The converter of a schema argument's type, or nullopt for a type without
// one (an operator with such an argument cannot have a direct call).
std::optional<Kind> kind_of(const c10::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::TensorType:
      return Kind::Tensor;
    case c10::TypeKind::FloatType:
    case c10::TypeKind::NumberType:  // Scalar: taken from a float only
      return Kind::Float;
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType:
      return Kind::Int;
    case c10::TypeKind::BoolType:
      return Kind::Bool;
    case c10::TypeKind::OptionalType: {
      const auto elem = type->castRaw<c10::OptionalType>()->getElementType()->kind();
      if (elem == c10::TypeKind::FloatType) return Kind::OptionalFloat;
      if (elem == c10::TypeKind::IntType) return Kind::OptionalInt;
      return std::nullopt;
    }
    case c10::TypeKind::ListType: {
      const auto elem = type->castRaw<c10::ListType>()->getElementType()->kind();
      if (elem == c10::TypeKind::IntType || elem == c10::TypeKind::SymIntType) return Kind::IntList;
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

PyObject* wrap(torch::jit::Stack& stack, size_t returns) {
  if (returns == 1) return THPVariable_Wrap(std::move(stack[0]).toTensor());
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(returns));
  if (tuple == nullptr) return nullptr;
  for (size_t i = 0; i < returns; ++i) {
    PyObject* t = THPVariable_Wrap(std::move(stack[i]).toTensor());
    if (t == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), t);
  }
  return tuple;
}

// Exceptions become Python's as torch.ops' pybind11 entry makes them: the
// same types, and no warning handler (a TORCH_WARN below goes where it goes
// through torch.ops; HANDLE_TH_ERRORS would turn it into a Python warning).
PyObject* call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* direct = reinterpret_cast<DirectCall*>(self);
  const Signature& op = *direct->signature;
  const auto n = static_cast<size_t>(PyVectorcall_NARGS(nargsf));
  bool plain = (kwnames == nullptr || PyTuple_GET_SIZE(kwnames) == 0) && n >= op.required &&
               n <= op.arguments.size() && !at::impl::torch_function_mode_enabled();
  try {
    torch::jit::Stack stack;
    if (plain) {
      stack.reserve(op.arguments.size());
      for (size_t i = 0; plain && i < n; ++i) plain = convert(op.arguments[i].kind, args[i], stack);
    }
    if (plain) {
      for (size_t i = n; i < op.arguments.size(); ++i) stack.push_back(*op.arguments[i].default_value);
      {
        pybind11::gil_scoped_release no_gil;
        op.handle.callBoxed(stack);
      }
      return wrap(stack, op.returns);
    }
  } catch (pybind11::builtin_exception& e) {
    e.set_error();
    return nullptr;
  } catch (const std::exception&) {
    torch::translate_exception_to_python(std::current_exception());
    return nullptr;
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "torch_aclnn: unknown C++ exception");
    return nullptr;
  }
  return PyObject_Vectorcall(direct->fallback, args, nargsf, kwnames);
}

// An operator is as immutable as its OpOverload: a copy is the same object.
PyObject* same(PyObject* self, PyObject* /*unused*/) {
  Py_INCREF(self);
  return self;
}

void dealloc(PyObject* self) {
  auto* direct = reinterpret_cast<DirectCall*>(self);
  delete direct->signature;
  Py_XDECREF(direct->fallback);
  Py_TYPE(self)->tp_free(self);
}

PyObject* repr(PyObject* self) {
  auto* direct = reinterpret_cast<DirectCall*>(self);
  return PyUnicode_FromFormat("<torch_aclnn direct call of %R>", direct->fallback);
}

PyTypeObject& direct_call_type() {
  static PyTypeObject type = [] {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "torch_aclnn._C._DirectCall";
    t.tp_basicsize = sizeof(DirectCall);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
    t.tp_vectorcall_offset = offsetof(DirectCall, vectorcall);
    t.tp_call = PyVectorcall_Call;
    t.tp_dealloc = dealloc;
    t.tp_repr = repr;
    t.tp_doc = "An operator's direct call from the Python API (csrc/direct_call.cpp)";
    static PyMethodDef methods[] = {{"__copy__", same, METH_NOARGS, nullptr},
                                    {"__deepcopy__", same, METH_O, nullptr},
                                    {nullptr, nullptr, 0, nullptr}};
    t.tp_methods = methods;
    return t;
  }();
  return type;
}

}  // namespace

PyObject* make(PyObject* /*self*/, PyObject* args) {
  HANDLE_TH_ERRORS
  const char* name = nullptr;
  const char* overload = nullptr;
  PyObject* fallback = nullptr;
  if (!PyArg_ParseTuple(args, "ssO", &name, &overload, &fallback)) return nullptr;
  // (torch_aclnn's operators are registered by this library, for the life of
  // the process: the handle below never outlives its operator)
  TORCH_CHECK(std::string(name).rfind("torch_aclnn::", 0) == 0, "_direct_call: ", name,
              " is not a torch_aclnn operator");
  if (PyType_Ready(&direct_call_type()) < 0) return nullptr;
  auto op = std::make_unique<Signature>(Signature{c10::Dispatcher::singleton().findSchemaOrThrow(name, overload)});
  const c10::FunctionSchema& schema = op->handle.schema();
  TORCH_CHECK(!schema.is_mutable() && !schema.is_vararg() && !schema.is_varret(), "_direct_call: ", schema,
              " writes an argument or takes varargs");
  for (const c10::Argument& a : schema.arguments()) {
    const auto kind = kind_of(a.real_type());
    TORCH_CHECK(!a.kwarg_only(), "_direct_call: ", schema, ": argument ", a.name(), " is keyword-only");
    TORCH_CHECK(kind.has_value(), "_direct_call: ", schema, ": argument ", a.name(), " has no converter");
    if (!a.default_value().has_value()) {
      TORCH_CHECK(op->required == op->arguments.size(), "_direct_call: ", schema,
                  ": a required argument after a default");
      ++op->required;
    }
    op->arguments.push_back({*kind, a.default_value()});
  }
  for (const c10::Argument& r : schema.returns()) {
    TORCH_CHECK(r.type()->kind() == c10::TypeKind::TensorType, "_direct_call: ", schema, " returns a non-tensor");
  }
  op->returns = schema.returns().size();
  TORCH_CHECK(op->returns > 0, "_direct_call: ", schema, " returns nothing");
  auto* direct = PyObject_New(DirectCall, &direct_call_type());
  if (direct == nullptr) return nullptr;
  direct->vectorcall = call;
  direct->signature = op.release();
  Py_INCREF(fallback);
  direct->fallback = fallback;
  return reinterpret_cast<PyObject*>(direct);
  END_HANDLE_TH_ERRORS
}

}  // namespace torch_aclnn::direct_call
