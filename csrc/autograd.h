// The Autograd kernels of every torch_aclnn operator (see
// csrc/autograd.cpp).
#pragma once

#include <Python.h>

namespace torch_aclnn::autograd {

// torch_aclnn._C._set_autograd_formula(name, fn): the Python formula the
// Autograd kernel of operator `name` ("torch_aclnn::elu") calls when a
// gradient or a forward-mode tangent is needed, as fn(*args) (the
// operator's autograd.Function.apply); the first call for an operator also
// registers that kernel. Called by torch_aclnn/ops/_common.py's
// register_autograd.
PyObject* set_formula(PyObject* self, PyObject* args);

// The Autograd and ADInplaceOrView kernels of every torch_aclnn overload that
// writes an argument (the out= overloads): aten's out= rules. Called once, by
// the module init, after the schemas are registered. Throws on failure.
void register_out_kernels();

}  // namespace torch_aclnn::autograd
