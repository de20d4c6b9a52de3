// The Python API's direct call of an operator: a callable that behaves as
// the operator's torch.ops OpOverload and parses the common call faster (see
// csrc/direct_call.cpp). torch_aclnn/ops/_calls.py (Operator) makes them.
#pragma once

#include <Python.h>

namespace torch_aclnn::direct_call {

// torch_aclnn._C._direct_call(name, overload, fallback): the direct call of
// operator `name` ("torch_aclnn::elu"), overload `overload` ("" for the
// default), which hands every call it does not take to `fallback`.
// RuntimeError for an operator of another library, one that writes an
// argument or takes varargs, one with a keyword-only argument, an argument
// type without a converter, a required argument after a default, or a result
// that is not a Tensor (torch_aclnn/ops/_calls.py then keeps the
// OpOverload alone).
PyObject* make(PyObject* self, PyObject* args);

}  // namespace torch_aclnn::direct_call
