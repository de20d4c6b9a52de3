// The Autograd kernels of every torch_aclnn operator: what they do per call
// and for the out= overloads is told in autograd/kernel.h.
#include "autograd/kernel.h"

#include "autograd/derivative.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/functorch/DynamicLayer.h>
#include <c10/core/AutogradState.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/dynamo/compiled_autograd.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/library.h>

#include <cctype>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace torch_aclnn::autograd {
namespace {

// qualified name -> derivative (csrc/autograd/<family>.cpp), filled at load
// time and read-only afterwards.
std::unordered_map<std::string, Derivative>& derivatives() {
  static auto* d = new std::unordered_map<std::string, Derivative>();
  return *d;
}

void autograd_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keyset, torch::jit::Stack* stack);

// "torch_aclnn::max_pool3d_with_indices" -> "torch_aclnn::MaxPool3dWithIndicesBackward"
// (as aten names its nodes: MaxPool3DWithIndicesBackward0).
std::string node_name(const std::string& qualname) {
  const size_t pos = qualname.rfind("::") + 2;
  std::string out = qualname.substr(0, pos);
  bool upper = true;
  for (const char c : qualname.substr(pos)) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "Backward";
}

}  // namespace

const Derivative* find_derivative(const std::string& qualname) {
  const auto& d = derivatives();
  const auto it = d.find(qualname);
  return it == d.end() ? nullptr : &it->second;
}

bool add_derivative(Derivative derivative) {
  // The operator's Autograd kernel. Never destroyed, like the registrations
  // of a TORCH_LIBRARY_IMPL block.
  static auto* library =
      new torch::Library(torch::Library::IMPL, "torch_aclnn", c10::DispatchKey::Autograd, __FILE__, __LINE__);
  const std::string ns = "torch_aclnn::";
  TORCH_INTERNAL_ASSERT(derivative.name.rfind(ns, 0) == 0, derivative.name);
  library->impl(derivative.name.substr(ns.size()).c_str(),
                torch::CppFunction::makeFromBoxedFunction<&autograd_kernel>());
  const std::string name = derivative.name;
  derivative.node_name = node_name(name);
  TORCH_INTERNAL_ASSERT(derivatives().emplace(name, std::move(derivative)).second, "two derivatives of ", name);
  return true;
}

void resolve_derivatives() {
  for (auto& [name, d] : derivatives()) {
    d.handle = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "");
    const auto& arguments = d.handle->schema().arguments();
    TORCH_INTERNAL_ASSERT(arguments.size() == d.keep.size(), name, ": one Keep per schema argument expected");
    const size_t nresults = d.handle->schema().returns().size();
    TORCH_INTERNAL_ASSERT(nresults == 1 ? d.results.empty() : d.results.size() == nresults, name,
                          ": one Keep per schema result expected for an operator with several results");
    d.is_tensor.clear();
    d.is_list.clear();
    for (const auto& a : arguments) {
      d.is_list.push_back(a.type()->kind() == c10::ListType::Kind);  // (int[], SymInt[]: not optional)
      const bool tensor = a.type()->kind() == c10::TensorType::Kind;
      TORCH_INTERNAL_ASSERT(tensor || a.type()->str().find("Tensor") == std::string::npos, name, ": argument ",
                            a.name(), " is ", a.type()->str(), " (Tensor? and Tensor[] need a per-call test)");
      d.is_tensor.push_back(tensor);
    }
  }
}

at::Tensor call(const char* op, std::vector<c10::IValue> args) {
  // The formulas name their operators with string literals: the handle is
  // looked up once per literal (the dispatcher's lookup builds the name's
  // strings and hashes them, on every backward otherwise).
  static auto* mutex = new std::mutex();
  static auto* handles = new std::unordered_map<const char*, c10::OperatorHandle>();
  const c10::OperatorHandle* handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(*mutex);
    auto it = handles->find(op);
    if (it == handles->end()) {
      it = handles->emplace(op, c10::Dispatcher::singleton().findSchemaOrThrow(
                                    (std::string("torch_aclnn::") + op).c_str(), "")).first;
    }
    handle = &it->second;  // (unordered_map nodes are stable)
  }
  torch::jit::Stack stack = std::move(args);
  handle->callBoxed(stack);
  return stack.back().toTensor();
}

at::Tensor sum_to_like(const at::Tensor& x, const at::Tensor& like) {
  return at::sum_to(x, like.sym_sizes()).to(like.scalar_type());
}

c10::IValue sizes_of(const at::Tensor& t) {
  if (const auto sizes = c10::asIntArrayRefSlowOpt(t.sym_sizes())) return c10::IValue(sizes->vec());
  return c10::IValue(t.sym_sizes());
}

namespace {

// Keep::like: what a stand-in for `t` needs (its sizes, dtype and device),
// kept as values rather than as a tensor, so that the recorded call saves
// the same tensors as aten's would (torch.utils.checkpoint compares the
// counts when a recomputation runs the same block without torch_aclnn).
c10::IValue like_of(const at::Tensor& t) {
  // [sizes, [dtype, device type, device index]]: lists of ints only (compiled
  // autograd passes saved_data to its graph, whose lists must be of one type)
  c10::impl::GenericList meta(c10::AnyType::get());
  meta.push_back(sizes_of(t));
  meta.push_back(std::vector<int64_t>{static_cast<int64_t>(t.scalar_type()), static_cast<int64_t>(t.device().type()),
                                      t.device().index()});
  return meta;
}

// The stand-in: one uninitialised element, expanded (no kernel runs).
at::Tensor stand_in(const c10::IValue& like) {
  const c10::List<c10::IValue> meta = like.toList();
  std::vector<c10::SymInt> sizes;
  for (const c10::IValue& e : meta.get(0).toListRef()) sizes.push_back(e.toSymInt());
  const std::vector<int64_t> type = meta.get(1).toIntVector();
  const auto options =
      at::TensorOptions()
          .dtype(static_cast<at::ScalarType>(type.at(0)))
          .device(c10::Device(static_cast<c10::DeviceType>(type.at(1)), static_cast<c10::DeviceIndex>(type.at(2))));
  return at::empty({}, options).expand_symint(sizes);
}

}  // namespace

// ---------------------------------------------------------------------------
// The plain-autograd path: one node per recorded call (OpNode), made as
// aten's generated autograd kernels make theirs: the next edges, the result's
// gradient edge and the saved variables, nothing else (a
// torch::autograd::Function's general bookkeeping cost more than the kernel
// of a small call). Compiled autograd runs the same backward as a function it
// binds (apply_with_saved, as torch::autograd::Function's node does).

namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;
using torch::dynamo::autograd::CompiledNodeArgs;
using torch::dynamo::autograd::SwapSavedVariables;

// The gradients of one recorded call, one per tensor argument in schema
// order: the operator's formula, given the node's saved arguments (see
// OpNode::args), its kept tensors (the Keep::value arguments, then the
// Keep::value results) and, per tensor argument, whether its gradient is
// needed. An undefined incoming gradient (zero) gives undefined gradients,
// as in aten's nodes.
variable_list backward(const Derivative& d, const c10::List<c10::IValue>& saved, const variable_list& kept,
                       const std::vector<bool>& needs_input, const at::Tensor& grad) {
  Args args;
  std::vector<bool> needs;
  size_t k = 0, tensor = 0;
  for (size_t i = 0; i < saved.size(); ++i) {
    if (!d.is_tensor[i]) {
      const c10::IValue v = saved.get(i);
      args.push_back(d.is_list[i] && v.isNone() ? c10::IValue(c10::List<int64_t>()) : v);
      needs.push_back(false);
      continue;
    }
    const Keep keep = d.keep[i];
    args.push_back(keep == Keep::value ? c10::IValue(kept.at(k++))
                   : keep == Keep::like ? c10::IValue(stand_in(saved.get(i)))
                                        : c10::IValue(at::Tensor()));
    needs.push_back(grad.defined() && needs_input.at(tensor++));
  }
  for (const Keep keep : d.results) {
    args.push_back(keep == Keep::value ? c10::IValue(kept.at(k++)) : c10::IValue(at::Tensor()));
  }
  std::vector<at::Tensor> result;
  if (grad.defined()) result = d.grad(args, grad, needs);
  variable_list out;
  for (size_t i = 0; i < saved.size(); ++i) {
    if (d.is_tensor[i]) out.push_back(needs[i] ? result.at(i) : at::Tensor());
  }
  return out;
}

// Compiled autograd's form of OpNode::apply: (incoming gradients,
// [operator name, saved arguments, kept tensors, needs per tensor argument]).
variable_list apply_functional(const variable_list& grads, const std::vector<c10::IValue>& packed) {
  TORCH_INTERNAL_ASSERT(packed.size() == 4 && grads.size() == 1);
  const Derivative* d = find_derivative(packed[0].toStringRef());
  TORCH_INTERNAL_ASSERT(d != nullptr, packed[0].toStringRef());
  std::vector<bool> needs;
  for (const c10::IValue& b : packed[3].toListRef()) needs.push_back(b.toBool());
  return backward(*d, packed[1].toList(), packed[2].toTensorVector(), needs, grads[0]);
}

// The pointer type of autograd nodes: std::shared_ptr<Node> or, in newer
// torch, c10::intrusive_ptr<Node>.
using NodeRef = decltype(torch::autograd::Edge::function);

struct OpNode final : Node {
  explicit OpNode(const Derivative* derivative) : derivative(derivative) {}

  const Derivative* derivative;
  // The call's arguments in schema order: every non-tensor argument as
  // given (an empty list as None: compiled autograd cannot type an empty
  // list), each tensor as None or, for Keep::like, its like_of(). One list,
  // which compiled autograd hashes into its cache key: these are constants of
  // the backward it traces.
  c10::IValue args;
  // The Keep::value arguments (the first kept_arguments), then the
  // Keep::value results.
  std::vector<SavedVariable> kept;
  size_t kept_arguments = 0;

  std::string name() const override {
    return derivative->node_name;
  }

  void release_variables() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (SavedVariable& v : kept) v.reset_data();
  }

  void compiled_args(CompiledNodeArgs& a) const override {
    a.collect(derivative->name);
    a.collect(args);
    for (size_t i = 0; i < kept.size(); ++i) a.collect(kept[i], /*is_output=*/i >= kept_arguments);
  }

  variable_list apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) override {
    saved.before(args);
    saved.before(kept);
    c10::List<bool> needs;
    for (const bool b : needs_input_grad()) needs.push_back(b);
    const std::vector<c10::IValue> packed = {c10::IValue(derivative->name), args, c10::IValue(unpack()),
                                             c10::IValue(needs)};
    std::vector<at::TypePtr> schema;
    for (const c10::IValue& v : packed) schema.push_back(v.isTensor() ? at::TensorType::get() : v.type());
    const auto& py = torch::dynamo::autograd::getPyCompilerInterface();
    // A new binding per call, as for a torch::autograd::Function's node: the
    // schema can differ between cache misses.
    std::string binding = name();  // (a Python identifier: "torch_aclnn_EluBackward")
    binding.replace(binding.find("::"), 2, "_");
    const std::string fn = py->bind_function(saved.get_py_compiler(), binding, apply_functional, schema,
                                             /*is_custom_function=*/true, /*is_traceable=*/true);
    const c10::IValue output_metadata =
        torch::dynamo::autograd::IValuePacker<std::vector<std::optional<torch::autograd::InputMetadata>>>::pack(
            torch::dynamo::autograd::get_input_metadata(next_edges()));
    variable_list results =
        py->call_function(saved.get_py_compiler(), "apply_functional", fn, grads, packed, output_metadata);
    saved.after(kept);
    saved.after(args);
    return results;
  }

 protected:
  variable_list apply(variable_list&& grads) override {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(grads.size() == 1, name(), " takes one gradient, got ", grads.size());
    return backward(*derivative, args.toList(), unpack(), needs_input_grad(), grads[0]);
  }

 private:
  variable_list unpack() {
    variable_list out;
    // (an argument is unpacked as aten's nodes unpack theirs, a result with this node as its grad_fn)
    for (size_t i = 0; i < kept.size(); ++i) out.push_back(kept[i].unpack(i < kept_arguments ? NodeRef() : getptr()));
    return out;
  }

  std::vector<bool> needs_input_grad() const {
    std::vector<bool> needs;
    for (size_t i = 0; i < num_outputs(); ++i) needs.push_back(task_should_compute_output(i));
    return needs;
  }
};

template <class N>
void delete_node(N* node) {
  deleteNode(node);  // torch::autograd::deleteNode (argument-dependent lookup), where nodes are shared_ptrs
}

// A new node of type N.
template <class N, class... A>
NodeRef make_node(A&&... a) {
  if constexpr (std::is_same_v<NodeRef, std::shared_ptr<Node>>) {
    return NodeRef(new N(std::forward<A>(a)...), &delete_node<N>);
  } else {
    return c10::make_intrusive<N>(std::forward<A>(a)...);
  }
}

// Runs the call below autograd and records it: the results, its arguments'
// gradients as the derivative gives them. The node keeps the tensors the
// derivative keeps (Keep::value) as saved variables, so that the recorded
// call saves the same tensors as aten's would (torch.utils.checkpoint
// compares the counts when a recomputation runs the same block without
// torch_aclnn). Which arguments are tensors is the operator's
// (Derivative::is_tensor), not the call's.
void record(const Derivative& d, const c10::OperatorHandle& op, c10::DispatchKeySet keyset,
            torch::jit::Stack* stack, size_t nargs) {
  NodeRef node = make_node<OpNode>(&d);
  auto* n = static_cast<OpNode*>(node.get());
  c10::impl::GenericList args(c10::AnyType::get());
  args.reserve(nargs);
  std::vector<at::Tensor> inputs;  // the tensor arguments
  // The kept arguments are saved before the kernel runs, as aten's kernels
  // save theirs (a tensor that cannot be saved raises before any work).
  for (size_t i = stack->size() - nargs, a = 0; a < nargs; ++i, ++a) {
    const c10::IValue& v = (*stack)[i];
    if (!d.is_tensor[a]) {
      args.push_back(d.is_list[a] && v.toListRef().empty() ? c10::IValue() : v);
      continue;
    }
    const Keep keep = d.keep[a];
    args.push_back(keep == Keep::like ? like_of(v.toTensor()) : c10::IValue());
    inputs.push_back(v.toTensor());
    if (keep == Keep::value) n->kept.emplace_back(v.toTensor(), /*is_output=*/false);
  }
  n->kept_arguments = n->kept.size();
  n->args = std::move(args);
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  {
    at::AutoDispatchBelowAutograd below;
    op.redispatchBoxed(keyset & c10::after_autograd_keyset, stack);
  }
  const size_t nresults = std::max<size_t>(1, d.results.size());
  const size_t first = stack->size() - nresults;
  // The other results are integer tensors, which autograd never
  // differentiates: they get no gradient edge.
  for (size_t r = 1; r < nresults; ++r) {
    TORCH_INTERNAL_ASSERT(!torch::autograd::isDifferentiableType((*stack)[first + r].toTensor().scalar_type()),
                          d.name, ": only the first result may be differentiable");
  }
  at::Tensor result = (*stack)[first].toTensor();
  torch::autograd::create_gradient_edge(result, node);
  for (size_t r = 0; r < d.results.size(); ++r) {
    if (d.results[r] == Keep::value) n->kept.emplace_back((*stack)[first + r].toTensor(), /*is_output=*/true);
  }
}

}  // namespace

namespace {

// name -> the operator's autograd.Function's apply (Python). Never destroyed: the callables must outlive any
// call, and Python objects cannot be released after the interpreter is gone.
struct Formulas {
  std::mutex mutex;
  std::unordered_map<std::string, PyObject*> by_name;
};

Formulas& formulas() {
  static auto* f = new Formulas();
  return *f;
}

PyObject* lookup(const std::string& name) {
  auto& f = formulas();
  std::lock_guard<std::mutex> lock(f.mutex);
  const auto it = f.by_name.find(name);
  return it == f.by_name.end() ? nullptr : it->second;
}

// What a call's derivatives need: a gradient (torch.library's test,
// torch._C._any_requires_grad: grad mode on and a tensor argument that
// requires grad) and a forward-mode tangent (a tensor argument with one, as
// aten's kernels test it: isFwGradDefined, torch has one forward AD level, 0;
// _fw_grad is undefined while forward grad mode is off, inside an
// autograd.Function's forward for one). Both live in a tensor's autograd
// metadata: a tensor without any is skipped at once. One pass, with tag
// checks only (no type comparisons), as it runs on every call.
struct Needs {
  bool grad = false;
  bool tangent = false;
};

Needs derivatives_needed(const torch::jit::Stack& stack, size_t nargs) {
  Needs needs;
  const bool grad_mode = at::GradMode::is_enabled();
  const bool fw_grad_mode = c10::AutogradState::get_tls_state().get_fw_grad_mode();
  if (!grad_mode && !fw_grad_mode) return needs;
  const auto visit = [&](const at::Tensor& t) {
    if (!t.defined() || t.unsafeGetTensorImpl()->autograd_meta() == nullptr) return;
    needs.grad = needs.grad || (grad_mode && t.requires_grad());
    needs.tangent = needs.tangent || (fw_grad_mode && t._fw_grad(0).defined());
  };
  for (size_t i = stack.size() - nargs; i < stack.size(); ++i) {
    const c10::IValue& v = stack[i];
    if (v.isTensor()) {
      visit(v.toTensor());
    } else if (v.isList()) {  // Tensor[], Tensor?[]
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor()) visit(e.toTensor());
      }
    }
  }
  return needs;
}

// The operator's name as aten's messages spell it: "elu_backward".
std::string base_name(const c10::FunctionSchema& schema) {
  const std::string& name = schema.name();
  const auto pos = name.rfind("::");
  return pos == std::string::npos ? name : name.substr(pos + 2);
}

// Within a torch.func transform's processing of a call (grad, vjp, jvp and
// the transforms built on them), for as long as it lives: outside it again.
// The transform saved the dispatch key set it took the call with and
// excluded its own keys; this guard restores that key set and clears the
// transform's record of it, so that the autograd.Function (and the jvp and
// the operators it calls at the same level) go through functorch as when
// called from Python, and puts both back on exit.
class LeaveTransformProcessing {
 public:
  LeaveTransformProcessing() {
    if (!c10::impl::tls_is_dispatch_key_excluded(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
        !at::functorch::maybeCurrentDynamicLayer().has_value()) {
      return;
    }
    at::functorch::DynamicLayer layer = at::functorch::popDynamicLayer();
    try {
      saved_ = layer.interpreter().getSavedLocalDispatchKeySet();
      layer.interpreter().clearSavedLocalDispatchKeySet();
    } catch (const c10::Error&) {  // the transform is not processing a call: nothing to leave
    }
    at::functorch::pushDynamicLayer(std::move(layer));
    if (saved_.has_value()) c10::impl::_force_tls_local_dispatch_key_set(*saved_);
  }
  ~LeaveTransformProcessing() {
    if (!saved_.has_value()) return;
    c10::impl::_force_tls_local_dispatch_key_set(inside_);
    at::functorch::DynamicLayer layer = at::functorch::popDynamicLayer();
    layer.interpreter().saveLocalDispatchKeySet(*saved_);
    at::functorch::pushDynamicLayer(std::move(layer));
  }
  LeaveTransformProcessing(const LeaveTransformProcessing&) = delete;
  LeaveTransformProcessing& operator=(const LeaveTransformProcessing&) = delete;

 private:
  std::optional<c10::impl::LocalDispatchKeySet> saved_;
  c10::impl::LocalDispatchKeySet inside_ = c10::impl::tls_local_dispatch_key_set();
};

void autograd_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keyset, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const Needs needs = derivatives_needed(*stack, nargs);
  if (!needs.grad && !needs.tangent) {
    at::AutoDispatchBelowAutograd below;
    op.redispatchBoxed(keyset & c10::after_autograd_keyset, stack);
    return;
  }
  if (!needs.tangent && !at::functorch::maybeCurrentDynamicLayer().has_value()) {
    const Derivative* derivative = find_derivative(schema.name());
    TORCH_INTERNAL_ASSERT(derivative != nullptr && derivative->keep.size() == nargs &&
                              derivative->is_tensor.size() == nargs,
                          schema.name());
    record(*derivative, op, keyset, stack, nargs);
    return;
  }
  PyObject* formula = lookup(schema.name());
  TORCH_CHECK(formula != nullptr, schema.name(), ": no autograd formula is registered (import torch_aclnn)");
  LeaveTransformProcessing leave;  // see the top
  pybind11::gil_scoped_acquire gil;
  pybind11::tuple args(nargs);
  for (size_t i = 0; i < nargs; ++i) {
    args[i] = torch::jit::toPyObject(std::move((*stack)[stack->size() - nargs + i]));
  }
  torch::jit::drop(*stack, nargs);
  pybind11::object result = pybind11::reinterpret_borrow<pybind11::object>(formula)(*args);
  const auto& returns = schema.returns();
  if (returns.size() == 1) {
    stack->push_back(torch::jit::toIValue(result, returns[0].type()));
    return;
  }
  const pybind11::tuple results = pybind11::reinterpret_borrow<pybind11::tuple>(result);
  TORCH_INTERNAL_ASSERT(results.size() == returns.size(), schema.name(), ": ", returns.size(), " results expected");
  for (size_t r = 0; r < returns.size(); ++r) stack->push_back(torch::jit::toIValue(results[r], returns[r].type()));
}

bool writes_an_argument(const c10::FunctionSchema& schema) {
  for (const auto& arg : schema.arguments()) {
    if (arg.alias_info() != nullptr && arg.alias_info()->isWrite()) return true;
  }
  return false;
}

// The tensors the call writes (arguments annotated `(a!)`), before the call
// consumes the stack.
std::vector<at::Tensor> written_tensors(const c10::FunctionSchema& schema, const torch::jit::Stack& stack) {
  const size_t nargs = schema.arguments().size();
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < nargs; ++i) {
    const auto* alias = schema.arguments()[i].alias_info();
    if (alias == nullptr || !alias->isWrite()) continue;
    const c10::IValue& v = stack[stack.size() - nargs + i];
    if (v.isTensor()) {
      out.push_back(v.toTensor());
    } else if (v.isList()) {  // Tensor(a!)[]
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor()) out.push_back(e.toTensor());
      }
    }
  }
  return out;
}

// Autograd kernel of the out= overloads: aten's checks
// (throw_error_out_requires_grad, and forward AD's "out= function" error),
// then the call below autograd. Nothing is recorded.
void out_autograd_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keyset, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t nargs = schema.arguments().size();
  const Needs needs = derivatives_needed(*stack, nargs);
  TORCH_CHECK(!needs.grad, base_name(schema),
              "(): functions with out=... arguments don't support automatic differentiation, but one of the "
              "arguments requires grad.");
  TORCH_CHECK_NOT_IMPLEMENTED(!needs.tangent, "Trying to use forward AD with ", base_name(schema),
                              "_out that does not support it because it is an out= function");
  at::AutoDispatchBelowAutograd below;
  op.redispatchBoxed(keyset & c10::after_autograd_keyset, stack);
}

// ADInplaceOrView kernel of the out= overloads: the write, then the version
// bump of every written tensor (aten's increment_version).
void out_inplace_or_view_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet keyset,
                                torch::jit::Stack* stack) {
  const std::vector<at::Tensor> written = written_tensors(op.schema(), *stack);
  {
    at::AutoDispatchBelowADInplaceOrView below;
    op.redispatchBoxed(keyset & c10::after_ADInplaceOrView_keyset, stack);
  }
  for (const at::Tensor& t : written) {
    if (t.defined()) torch::autograd::impl::bump_version(t);
  }
}

}  // namespace

void register_out_kernels() {
  // Never destroyed, like the registrations of a TORCH_LIBRARY_IMPL block.
  static auto* autograd_lib =
      new torch::Library(torch::Library::IMPL, "torch_aclnn", c10::DispatchKey::Autograd, __FILE__, __LINE__);
  static auto* inplace_lib = new torch::Library(torch::Library::IMPL, "torch_aclnn",
                                                c10::DispatchKey::ADInplaceOrView, __FILE__, __LINE__);
  auto& dispatcher = c10::Dispatcher::singleton();
  for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
    if (name.name.rfind("torch_aclnn::", 0) != 0) continue;
    const auto handle = dispatcher.findSchema(name);
    if (!handle.has_value() || !writes_an_argument(handle->schema())) continue;
    const std::string op = name.name.substr(std::string("torch_aclnn::").size()) +
                           (name.overload_name.empty() ? "" : "." + name.overload_name);
    autograd_lib->impl(op.c_str(), torch::CppFunction::makeFromBoxedFunction<&out_autograd_kernel>());
    inplace_lib->impl(op.c_str(), torch::CppFunction::makeFromBoxedFunction<&out_inplace_or_view_kernel>());
  }
}

PyObject* set_formula(PyObject* /*self*/, PyObject* args) {
  const char* name = nullptr;
  PyObject* fn = nullptr;
  if (!PyArg_ParseTuple(args, "sO", &name, &fn)) return nullptr;
  if (find_derivative(name) == nullptr || !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_ValueError,
                    "_set_autograd_formula(name, fn): a torch_aclnn:: operator with a derivative, and a callable");
    return nullptr;
  }
  auto& f = formulas();
  std::lock_guard<std::mutex> lock(f.mutex);
  PyObject*& slot = f.by_name[name];
  Py_INCREF(fn);
  Py_XDECREF(slot);
  slot = fn;
  Py_RETURN_NONE;
}

namespace {

const Derivative* derivative_arg(const char* name) {
  const Derivative* d = find_derivative(name);
  if (d == nullptr) PyErr_Format(PyExc_ValueError, "%s: not a torch_aclnn operator with a derivative", name);
  return d;
}

}  // namespace

PyObject* derivative_keep(PyObject* /*self*/, PyObject* args) {
  const char* name = nullptr;
  if (!PyArg_ParseTuple(args, "s", &name)) return nullptr;
  const Derivative* d = derivative_arg(name);
  if (d == nullptr) return nullptr;
  std::vector<Keep> keep = d->keep;
  keep.insert(keep.end(), d->results.begin(), d->results.end());
  PyObject* out = PyTuple_New(static_cast<Py_ssize_t>(keep.size()));
  if (out == nullptr) return nullptr;
  for (size_t i = 0; i < keep.size(); ++i) {
    PyObject* v = keep[i] == Keep::value ? PyUnicode_FromString("value")
                  : keep[i] == Keep::like ? PyUnicode_FromString("like")
                                          : (Py_INCREF(Py_None), Py_None);
    PyTuple_SET_ITEM(out, static_cast<Py_ssize_t>(i), v);
  }
  return out;
}

PyObject* derivative(PyObject* /*self*/, PyObject* py_args) {
  const char* name = nullptr;
  PyObject* arguments = nullptr;
  PyObject* needs_input_grad = nullptr;
  PyObject* grad = nullptr;
  if (!PyArg_ParseTuple(py_args, "sOOO", &name, &arguments, &needs_input_grad, &grad)) return nullptr;
  const Derivative* d = derivative_arg(name);
  if (d == nullptr) return nullptr;
  HANDLE_TH_ERRORS
  {
    const auto& schema_args = d->handle->schema().arguments();
    const pybind11::sequence seq = pybind11::reinterpret_borrow<pybind11::sequence>(arguments);
    const pybind11::sequence needs_seq = pybind11::reinterpret_borrow<pybind11::sequence>(needs_input_grad);
    TORCH_CHECK(seq.size() == schema_args.size() + d->results.size() && needs_seq.size() == schema_args.size(),
                name, ": one argument and one needs_input_grad flag per schema argument (and, for an operator "
                "with several results, one entry per result) expected");
    Args args;
    std::vector<bool> needs;
    for (size_t i = 0; i < schema_args.size(); ++i) {
      const pybind11::handle v = seq[i];
      const bool tensor = d->is_tensor[i];
      args.push_back(tensor && v.is_none() ? c10::IValue(at::Tensor())
                                           : torch::jit::toIValue(v, schema_args[i].type()));
      needs.push_back(tensor && pybind11::cast<bool>(needs_seq[i]));
    }
    for (size_t r = 0; r < d->results.size(); ++r) {
      const pybind11::handle v = seq[schema_args.size() + r];
      args.push_back(v.is_none() ? c10::IValue(at::Tensor())
                                 : torch::jit::toIValue(v, c10::TensorType::get()));
    }
    const at::Tensor g = torch::jit::toIValue(pybind11::handle(grad), c10::TensorType::get()).toTensor();
    const std::vector<at::Tensor> result = d->grad(args, g, needs);
    pybind11::tuple out(schema_args.size());
    for (size_t i = 0; i < schema_args.size(); ++i) {
      out[i] = needs[i] && result.at(i).defined() ? torch::jit::toPyObject(c10::IValue(result[i])) : pybind11::none();
    }
    return out.release().ptr();
  }
  END_HANDLE_TH_ERRORS
}

}  // namespace torch_aclnn::autograd
