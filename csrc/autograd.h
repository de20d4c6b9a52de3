// The Autograd kernel of every functional torch_aclnn operator (see
// csrc/autograd.cpp).
#pragma once

#include <Python.h>

namespace torch_aclnn::autograd {

// torch_aclnn._C._set_autograd_formula(name, fn): the Python formula the
// Autograd kernel of operator `name` ("torch_aclnn::elu") calls when a
// gradient is needed, as fn(raw_keyset, *args); the first call for an
// operator also registers that kernel. Called by
// torch_aclnn/ops/_common.py's register_autograd.
PyObject* set_formula(PyObject* self, PyObject* args);

}  // namespace torch_aclnn::autograd
