// patch(level="dispatcher"): aten's CPU and CUDA kernels of the aten
// operators that torch_aclnn's operators mirror, replaced by kernels that
// apply the drop-in rule (docs/spec.md §8) in C++ (routes.cpp, rules.h).
// torch_aclnn/_patch.py installs and removes them.
#pragma once

#include <Python.h>

namespace torch_aclnn::aten_routes {

// torch_aclnn._C._aten_routes(): a tuple of (aten operator, torch_aclnn
// operator) names, one per route, in the order of _aten_route_counts();
// empty where this torch cannot have routes (torch < 2.9).
PyObject* routes(PyObject* self, PyObject* args);

// torch_aclnn._C._route_aten(keys): switches on the routes of `keys`, a
// sequence of (aten operator, "CPU" or "CUDA"), and every other route off,
// registering a route's kernel the first time it is switched on.
// RuntimeError where this torch cannot call aten's own kernel from the
// replacement (torch < 2.9).
PyObject* install(PyObject* self, PyObject* args);

// torch_aclnn._C._unroute_aten(): switches every route off (each call goes
// to aten's kernel; the registrations stay). Returns how many results of
// routed calls that autograd recorded since the last call are still alive
// with their grad_fn: a graph whose backward, run now, is aten's.
PyObject* uninstall(PyObject* self, PyObject* args);

// torch_aclnn._C._aten_route_counts(): per route, (calls routed, calls
// handed to aten's kernel) since the library was loaded.
PyObject* counts(PyObject* self, PyObject* args);

// torch_aclnn._C._route_rules(): rules.h's tables as Python data, for
// torch_aclnn/_dropin.py: {"dtypes": ((name, largest value), ...),
// "scalar_limit": float, "inputs": {rule: (first non-empty axis per rank,
// w_fastest_4d)}}.
PyObject* rules(PyObject* self, PyObject* args);

// torch_aclnn._C._route_takes(rule, tensor) -> bool: rules.h's takes_input
// for an input rule's name; _route_takes("loss", self, target, reduction,
// beta): takes_loss; _route_takes("scalar", tensor, value): scalar_fits. (The C++ reading of the rules, which
// tests/test_route_rules.py holds against _dropin's.)
PyObject* takes(PyObject* self, PyObject* args);

}  // namespace torch_aclnn::aten_routes
