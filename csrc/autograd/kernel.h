// The Autograd kernels of every torch_aclnn operator.
//
// Functional operators. Each operator's reverse-mode derivative is a C++
// formula in csrc/autograd/<family>.cpp (csrc/autograd/derivative.h); its
// forward-mode tangent (jvp) and vmap rule are Python, in
// torch_aclnn/ops/<family>.py. The one Autograd kernel below decides per call:
//   - no derivative needed (grad mode off or no argument requiring grad, and
//     no argument with a forward-mode tangent): the call goes below autograd
//     to the backend kernel (CPU, CUDA, Meta, PrivateUse1);
//   - a gradient needed, outside torch.func transforms and without
//     tangents (plain training): a C++ autograd node records the call, as
//     aten's kernels record theirs (compiled autograd traces it too); its
//     backward is the C++ formula. No Python runs, forward or backward;
//   - a forward-mode tangent, or inside a torch.func transform (grad, vjp,
//     jvp, jacrev, jacfwd, vmap, ...): the operator's torch.autograd.Function
//     (torch_aclnn/ops/_autograd.py register_autograd), whose backward calls the
//     same C++ formula (torch_aclnn._C._derivative) and whose jvp is Python.
//     Its forward calls the operator again, now with grad mode and forward
//     grad mode off, so it takes the first path. Within a transform this
//     kernel runs within the transform's processing of the call, with the
//     functorch dispatch keys excluded; Function.apply dispatches through
//     functorch by itself (custom_function_call), so it runs as if called
//     from Python: with the dispatch key set the transform saved when it took
//     the call, and the transform no longer processing it
//     (LeaveTransformProcessing).
//
// out= overloads (every schema argument written to, `Tensor(a!)`): the rules
// of aten's out= operators, generically from the schema's alias info:
//   Autograd:        in grad mode, an argument (the written one included)
//                    that requires grad is an error, as is a forward-mode
//                    tangent; nothing is recorded;
//   ADInplaceOrView: the written tensors' version counters are bumped after
//                    the write (a view shares its base's counter), so a tensor
//                    saved for backward and overwritten makes backward raise;
//                    an inference tensor written outside inference mode
//                    raises torch's error.
// Under inference mode the Autograd kernel does not run (the autograd keys are
// excluded) and the ADInplaceOrView one runs for normal tensors only, as for
// aten.
//
// (csrc/autograd/kernel.cpp; the derivatives: csrc/autograd/<family>.cpp.)
#pragma once

#include <Python.h>

namespace torch_aclnn::autograd {

// torch_aclnn._C._set_autograd_formula(name, fn): the operator's
// torch.autograd.Function, as fn(*args) (its apply), which the Autograd
// kernel of operator `name` ("torch_aclnn::elu") calls where the C++ node
// cannot record the call: a forward-mode tangent is needed, or inside a
// torch.func transform. Called by torch_aclnn/ops/_autograd.py's
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
