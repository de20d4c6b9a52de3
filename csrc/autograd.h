// The Autograd kernels of every torch_aclnn operator (see
// csrc/autograd.cpp; the derivatives: csrc/autograd/<family>.cpp).
#pragma once

#include <Python.h>

namespace torch_aclnn::autograd {

// torch_aclnn._C._set_autograd_formula(name, fn): the operator's
// torch.autograd.Function, as fn(*args) (its apply), which the Autograd
// kernel of operator `name` ("torch_aclnn::elu") calls where the C++ node
// cannot record the call: a forward-mode tangent is needed, or inside a
// torch.func transform. Called by torch_aclnn/ops/_common.py's
// register_autograd.
PyObject* set_formula(PyObject* self, PyObject* args);

// torch_aclnn._C._derivative_keep(name): per schema argument, what the
// derivative keeps: "value", "like" (a stand-in with its shape, dtype and
// device) or None.
PyObject* derivative_keep(PyObject* self, PyObject* args);

// torch_aclnn._C._derivative(name, arguments, needs_input_grad, grad): the
// operator's C++ backward formula (a tuple, one gradient or None per schema
// argument). `arguments` are the call's, with the kept tensors (stand-ins for
// "like") and None for the tensors not kept.
PyObject* derivative(PyObject* self, PyObject* args);

// Reads each derivative's operator schema once: which arguments are tensors
// (the derivatives register at load time, before the schemas they belong
// to may exist). Called once, by the module init. Throws on failure.
void resolve_derivatives();

// The Autograd and ADInplaceOrView kernels of every torch_aclnn overload that
// writes an argument (the out= overloads): aten's out= rules. Called once, by
// the module init, after the schemas are registered. Throws on failure.
void register_out_kernels();

}  // namespace torch_aclnn::autograd
