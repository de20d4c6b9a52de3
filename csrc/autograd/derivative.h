// The reverse-mode derivative of one operator (its backward formula), as
// csrc/autograd/<family>.cpp define them (in namespace
// torch_aclnn::autograd::<family>_formulas: setup.py compiles the families'
// files as one unit), and the registry that the operators' Autograd kernel
// (csrc/autograd/kernel.cpp) reads.
//
// A formula sees the call's arguments in schema order, as IValues: the
// tensors the derivative keeps (`Keep::value`), stride-0 stand-ins of those
// whose shape, dtype and device it needs but not their values (`Keep::like`:
// only those are kept, no tensor), undefined tensors for the rest, and every non-tensor
// argument as given. An operator with several results (max_pool3d_with_indices:
// values and indices) differentiates its first only (the others are integer
// tensors, marked non-differentiable); its formula sees, after the
// arguments, one entry per result: the result where the derivative keeps it
// (`results`, Keep::value), else an undefined tensor. The formula returns one
// gradient per schema argument (undefined where none is needed or defined),
// computed with operators that are themselves differentiable, so that double
// backward works.
//
// The same formula runs in both of the kernel's recording paths: plain
// autograd (a C++ node) and, inside torch.func transforms or with forward-mode
// tangents, the operator's torch.autograd.Function, whose backward calls it
// through torch_aclnn._C._derivative (torch_aclnn/ops/_autograd.py).
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torch_aclnn::autograd {

enum class Keep { none, value, like };

using Args = std::vector<c10::IValue>;
// (arguments, incoming gradient, needs[i]: argument i's gradient is wanted)
using Formula = std::function<std::vector<at::Tensor>(const Args&, const at::Tensor&, const std::vector<bool>&)>;

struct Derivative {
  std::string name;         // "torch_aclnn::elu"
  std::vector<Keep> keep;   // per schema argument (tensor arguments only matter)
  Formula grad;
  // Per schema result, for an operator with several: Keep::value where the
  // formula reads the result (empty: one result, not read).
  std::vector<Keep> results = {};
  // Filled at import (resolve_derivatives): the operator, and per schema
  // argument whether it is a Tensor, or a list.
  std::optional<c10::OperatorHandle> handle;
  std::vector<bool> is_tensor;
  std::vector<bool> is_list;  // a (non-optional) list argument
  // The recording node's name (grad_fn.name()): "torch_aclnn::EluBackward".
  std::string node_name;
};

// The operator's derivative, or nullptr.
const Derivative* find_derivative(const std::string& qualname);

// Registers the derivative and the operator's Autograd kernel. Called at
// load time, by the TORCH_ACLNN_DERIVATIVE lines.
bool add_derivative(Derivative derivative);

// TORCH_ACLNN_DERIVATIVE(elu, {Keep::value, Keep::none, ...}, formula);
// TORCH_ACLNN_DERIVATIVE(op_with_two_results, {...}, formula, {Keep::none, Keep::value});
#define TORCH_ACLNN_DERIVATIVE(name, ...)                                                     \
  static const bool torch_aclnn_derivative_##name =                                          \
      ::torch_aclnn::autograd::add_derivative({"torch_aclnn::" #name, __VA_ARGS__})

// ---------------------------------------------------------------------------
// Helpers for the formulas.

// torch_aclnn::<op>(args...) through the dispatcher (boxed: the arguments as
// the schema takes them).
at::Tensor call(const char* op, std::vector<c10::IValue> args);

// x summed over the dimensions that were broadcast to reach it from `like`,
// in like's dtype (the gradient of a broadcast input).
at::Tensor sum_to_like(const at::Tensor& x, const at::Tensor& like);

// t's sizes as the IValue a `SymInt[]` argument takes.
c10::IValue sizes_of(const at::Tensor& t);

// The gradient for argument i when it is wanted, else undefined.
template <typename F>
at::Tensor if_needed(const std::vector<bool>& needs, size_t i, F&& f) {
  return needs[i] ? f() : at::Tensor();
}

}  // namespace torch_aclnn::autograd
