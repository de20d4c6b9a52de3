// patch(level="dispatcher"): aten's CPU and CUDA kernels of the aten
// operators that torch_aclnn's operators mirror, replaced by kernels that
// apply the drop-in rule (docs/spec.md §8) in C++ (see csrc/dropin.cpp).
// torch_aclnn/_patch.py installs and removes them.
#pragma once

#include <Python.h>

namespace torch_aclnn::dropin {

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

}  // namespace torch_aclnn::dropin
