// torch_aclnn: the one TORCH_LIBRARY holding every operator schema.
//
// Kernels live next to their backend registration (the Autograd kernel of
// every operator in csrc/autograd/kernel.cpp):
//   csrc/meta.cpp            Meta (fake-tensor / torch.compile) kernels
//   csrc/cpu/<family>.cpp    CPU kernels (built once per ISA, see setup.py)
//   csrc/cuda/<family>.cu    CUDA kernels
// Every backend registers the generic entries of csrc/common/entry.h: the
// family's contract (csrc/contracts/<family>.h: the checks and the result's
// spec) and the backend's kernel.
#include "aten_routes/routes.h"
#include "autograd/kernel.h"
#include "common/deferred.h"
#include "direct_call.h"

#include <Python.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/Exceptions.h>
#include <torch/library.h>

namespace {

// torch_aclnn._C._sync_index_checks(on): sets synchronous index checks
// (common/deferred.h), returns the previous mode.
PyObject* sync_index_checks(PyObject* /*self*/, PyObject* args) {
  int on = 0;
  if (!PyArg_ParseTuple(args, "p", &on)) return nullptr;
  return PyBool_FromLong(torch_aclnn::deferred::set_synchronous(on != 0));
}

// torch_aclnn._C._check_index_errors(): waits for every pending index check
// and raises the first failed one's IndexError. Releases the GIL meanwhile.
PyObject* check_index_errors(PyObject* /*self*/, PyObject* /*args*/) {
  HANDLE_TH_ERRORS
  {
    pybind11::gil_scoped_release no_gil;
    torch_aclnn::deferred::raise_all();
  }
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

// torch_aclnn._C._pending_index_checks(): how many are pending.
PyObject* pending_index_checks(PyObject* /*self*/, PyObject* /*args*/) {
  return PyLong_FromSize_t(torch_aclnn::deferred::pending());
}

}  // namespace

extern "C" {
// The module init: `import torch_aclnn._C` loads the library and runs the
// static registrations (the schemas below, the kernels beside their
// backends), then registers the out= overloads' Autograd and
// ADInplaceOrView kernels; its functions reach the autograd formulas (all in
// csrc/autograd/kernel.cpp).
PyMODINIT_FUNC PyInit__C(void) {
  try {
    torch_aclnn::autograd::resolve_derivatives();
    torch_aclnn::autograd::register_out_kernels();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_ImportError, e.what());
    return nullptr;
  }
  static PyMethodDef methods[] = {
      {"_set_autograd_formula", torch_aclnn::autograd::set_formula, METH_VARARGS,
       "_set_autograd_formula(name, fn): operator `name`'s autograd.Function (tangents, torch.func)"},
      {"_derivative_keep", torch_aclnn::autograd::derivative_keep, METH_VARARGS,
       "_derivative_keep(name): per argument (then per result, for several), what operator `name`'s "
       "derivative keeps"},
      {"_derivative", torch_aclnn::autograd::derivative, METH_VARARGS,
       "_derivative(name, arguments, needs_input_grad, grad): operator `name`'s backward formula "
       "(arguments: then the kept results, for an operator with several)"},
      {"_sync_index_checks", sync_index_checks, METH_VARARGS,
       "_sync_index_checks(on): synchronous index checks on CUDA; returns the previous mode"},
      {"_check_index_errors", check_index_errors, METH_NOARGS,
       "_check_index_errors(): waits for the pending index checks, raises the first failed one"},
      {"_pending_index_checks", pending_index_checks, METH_NOARGS, "_pending_index_checks(): how many are pending"},
      {"_direct_call", torch_aclnn::direct_call::make, METH_VARARGS,
       "_direct_call(name, overload, fallback): operator `name`'s direct call from the Python API, `fallback` (its "
       "OpOverload) for the calls it does not take"},
      {"_aten_routes", torch_aclnn::aten_routes::routes, METH_NOARGS,
       "_aten_routes(): (aten operator, torch_aclnn operator) per route of patch(level='dispatcher')"},
      {"_route_aten", torch_aclnn::aten_routes::install, METH_VARARGS,
       "_route_aten(keys): installs the routes, keys a sequence of (aten operator, 'CPU' or 'CUDA')"},
      {"_unroute_aten", torch_aclnn::aten_routes::uninstall, METH_NOARGS, "_unroute_aten(): removes the routes"},
      {"_aten_route_counts", torch_aclnn::aten_routes::counts, METH_NOARGS,
       "_aten_route_counts(): per route, (calls routed, calls handed to aten)"},
      {"_route_rules", torch_aclnn::aten_routes::rules, METH_NOARGS,
       "_route_rules(): the drop-in rule's tensor rules (csrc/aten_routes/rules.h) as Python data"},
      {"_route_takes", torch_aclnn::aten_routes::takes, METH_VARARGS,
       "_route_takes(rule, tensor) / _route_takes('loss', self, target, reduction, beta): the rules' C++ verdict"},
      {nullptr, nullptr, 0, nullptr}};
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, methods};
  return PyModule_Create(&module_def);
}
}

TORCH_LIBRARY(torch_aclnn, m) {
  const std::vector<at::Tag> tags = {at::Tag::pt2_compliant_tag};
  // §1 upsample_nearest3d (aclnnUpsampleNearest3dBackward)
  m.def("upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, "
        "float? scales_h=None, float? scales_w=None) -> Tensor", tags);
  m.def("upsample_nearest3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, "
        "float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor", tags);
  m.def("upsample_nearest3d_backward.grad_input(Tensor grad_output, SymInt[3] output_size, "
        "SymInt[5] input_size, float? scales_d=None, float? scales_h=None, float? scales_w=None, *, "
        "Tensor(a!) grad_input) -> ()", tags);
  // §2 upsample_nearest_exact3d (aclnnUpsampleNearestExact3dBackward)
  m.def("upsample_nearest_exact3d(Tensor self, SymInt[3] output_size, float? scales_d=None, "
        "float? scales_h=None, float? scales_w=None) -> Tensor", tags);
  m.def("upsample_nearest_exact3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, "
        "float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor", tags);
  m.def("upsample_nearest_exact3d_backward.grad_input(Tensor grad_output, SymInt[3] output_size, "
        "SymInt[5] input_size, float? scales_d=None, float? scales_h=None, float? scales_w=None, *, "
        "Tensor(a!) grad_input) -> ()", tags);
  // §3 elu (aclnnEluBackward)
  m.def("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor", tags);
  m.def("elu_backward(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, bool is_result, "
        "Tensor self_or_result) -> Tensor", tags);
  m.def("elu_backward.grad_input(Tensor grad_output, Scalar alpha, Scalar scale, Scalar input_scale, "
        "bool is_result, Tensor self_or_result, *, Tensor(a!) grad_input) -> ()", tags);
  // §4 smooth_l1_loss (aclnnSmoothL1LossBackward)
  m.def("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.0) -> Tensor", tags);
  m.def("smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, "
        "float beta) -> Tensor", tags);
  m.def("smooth_l1_loss_backward.grad_input(Tensor grad_output, Tensor self, Tensor target, int reduction, "
        "float beta, *, Tensor(a!) grad_input) -> ()", tags);
  // §5 max_unpool3d (aclnnMaxUnpool3dBackward)
  m.def("max_unpool3d(Tensor self, Tensor indices, SymInt[3] output_size, int[3] stride, "
        "int[3] padding) -> Tensor", tags);
  m.def("max_unpool3d_backward(Tensor grad_output, Tensor self, Tensor indices, SymInt[3] output_size, "
        "int[3] stride, int[3] padding) -> Tensor", tags);
  m.def("max_unpool3d_backward.grad_input(Tensor grad_output, Tensor self, Tensor indices, "
        "SymInt[3] output_size, int[3] stride, int[3] padding, *, Tensor(a!) grad_input) -> ()",
        tags);
  // §9 max_pool3d_with_indices (aclnnMaxPool3dWithArgmaxBackward)
  m.def("max_pool3d_with_indices(Tensor self, int[] kernel_size, int[] stride, int[] padding, int[] dilation, "
        "bool ceil_mode) -> (Tensor, Tensor)", tags);
  m.def("max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, Tensor indices, int[] kernel_size, "
        "int[] stride, int[] padding, int[] dilation, bool ceil_mode) -> Tensor", tags);
  m.def("max_pool3d_with_indices_backward.grad_input(Tensor grad_output, Tensor self, Tensor indices, "
        "int[] kernel_size, int[] stride, int[] padding, int[] dilation, bool ceil_mode, *, "
        "Tensor(a!) grad_input) -> ()", tags);
  // §10 upsample_trilinear3d (aclnnUpsampleTrilinear3dBackward)
  m.def("upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, float? scales_d=None, "
        "float? scales_h=None, float? scales_w=None) -> Tensor", tags);
  m.def("upsample_trilinear3d_backward(Tensor grad_output, SymInt[3] output_size, SymInt[5] input_size, "
        "bool align_corners, float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor", tags);
  m.def("upsample_trilinear3d_backward.grad_input(Tensor grad_output, SymInt[3] output_size, "
        "SymInt[5] input_size, bool align_corners, float? scales_d=None, float? scales_h=None, "
        "float? scales_w=None, *, Tensor(a!) grad_input) -> ()", tags);
  // §11 leaky_relu (aclnnLeakyReluBackward)
  m.def("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", tags);
  m.def("leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, bool self_is_result) "
        "-> Tensor", tags);
  m.def("leaky_relu_backward.grad_input(Tensor grad_output, Tensor self, Scalar negative_slope, "
        "bool self_is_result, *, Tensor(a!) grad_input) -> ()", tags);
  // §12 avg_pool3d (aclnnAvgPool3dBackward)
  m.def("avg_pool3d(Tensor self, int[] kernel_size, int[] stride=[], int[] padding=[0], bool ceil_mode=False, "
        "bool count_include_pad=True, int? divisor_override=None) -> Tensor", tags);
  m.def("avg_pool3d_backward(Tensor grad_output, Tensor self, int[] kernel_size, int[] stride, int[] padding, "
        "bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor", tags);
  m.def("avg_pool3d_backward.grad_input(Tensor grad_output, Tensor self, int[] kernel_size, int[] stride, "
        "int[] padding, bool ceil_mode, bool count_include_pad, int? divisor_override, *, "
        "Tensor(a!) grad_input) -> ()", tags);
  // §13 adaptive_avg_pool3d (aclnnAdaptiveAvgPool3dBackward)
  m.def("adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", tags);
  m.def("adaptive_avg_pool3d_backward(Tensor grad_output, Tensor self) -> Tensor", tags);
  m.def("adaptive_avg_pool3d_backward.grad_input(Tensor grad_output, Tensor self, *, Tensor(a!) grad_input) -> ()",
        tags);
}
