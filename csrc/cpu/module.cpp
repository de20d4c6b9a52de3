// Module init of one CPU-kernel extension (torch_aclnn._cpu_<isa>). setup.py
// builds csrc/cpu/*.cpp once per instruction set; torch_aclnn/_loader.py
// imports exactly the one matching aten's CPU capability, whose static
// TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) blocks then register the kernels.
#include <Python.h>

#ifndef TORCH_ACLNN_ISA_MODULE
#error "TORCH_ACLNN_ISA_MODULE must name the module (set by setup.py)"
#endif

#define TORCH_ACLNN_STR2(x) #x
#define TORCH_ACLNN_STR(x) TORCH_ACLNN_STR2(x)
#define TORCH_ACLNN_CAT2(a, b) a##b
#define TORCH_ACLNN_CAT(a, b) TORCH_ACLNN_CAT2(a, b)

extern "C" PyMODINIT_FUNC TORCH_ACLNN_CAT(PyInit_, TORCH_ACLNN_ISA_MODULE)(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, TORCH_ACLNN_STR(TORCH_ACLNN_ISA_MODULE),
                                          nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
