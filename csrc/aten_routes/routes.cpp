// patch(level="dispatcher"): the drop-in rule (docs/spec.md §8) one level
// below torch.nn.functional, in C++, so that no torch call pays anything for
// it but the routed ones, and those no Python.
//
// Each route replaces aten's CPU or CUDA kernel of one aten operator whose
// schema torch_aclnn's operator of the same name mirrors (aten::elu,
// aten::upsample_nearest3d_backward, ...): the aten operators that the
// routed torch.nn.functional calls and aten's autograd formulas for them
// reach. The replacement computes a call with torch_aclnn's kernel when the
// call is inside the contract, else with aten's own kernel, fetched before
// it is replaced:
//   * what the contract accepts but aten computes otherwise is checked here
//     first: each route's rule, made of rules.h's tensor rules (which
//     torch_aclnn/_dropin.py applies to torch.nn.functional's arguments);
//   * the rest is the kernel's contract: a contract error (TypeError,
//     ValueError, IndexError: common/contract.h's is_contract_error) hands
//     the call to aten, as _dropin.decide does, except an IndexError on CUDA
//     (aten's kernel would stop the process).
// aten's autograd formulas stay in place: they call the replaced kernels
// below the Autograd key, and so torch_aclnn's kernels, for the backward too.
//
// A kernel is registered the first time its route is switched on and stays
// registered: switching routes off and on only flips an atomic flag per
// route and backend, which the kernel reads first (off: straight to aten's
// kernel). Removing a registration while another thread may be running the
// kernel would free it under that thread.
#include "aten_routes/routes.h"

#include "aten_routes/rules.h"
#include "common/contract.h"

#include <ATen/core/Formatting.h>  // (operator<< for the Scalars in messages)
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/Exception.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/library.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

// SafeKernelFunction (aten's kernel for a dispatch key, callable after it is
// overridden) arrived in torch 2.9.
#define TORCH_ACLNN_HAS_SAFE_KERNEL (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9))

namespace torch_aclnn::aten_routes {

namespace py = pybind11;

namespace {

using Args = c10::ArrayRef<c10::IValue>;  // a call's arguments, in aten's schema order

bool floating(const c10::IValue& v) { return v.isTensor() && routed(v.toTensor()); }

bool input(const InputRule& rule, const c10::IValue& v) { return v.isTensor() && takes_input(rule, v.toTensor()); }

constexpr const InputRule& kElementwise = *input_rule("elementwise");
constexpr const InputRule& kUpsample = *input_rule("upsample");
constexpr const InputRule& kMaxPool = *input_rule("max_pool");
constexpr const InputRule& kAvgPool = *input_rule("avg_pool");
constexpr const InputRule& kAdaptivePool = *input_rule("adaptive_pool");

// The Scalars a[i] of a call on tensor t (rules.h: scalar_fits).
bool scalars_fit(const at::Tensor& t, Args a, std::initializer_list<size_t> scalars) {
  for (size_t i : scalars) {
    if (!a[i].isScalar()) return false;
    const c10::Scalar s = a[i].toScalar();
    if (s.isComplex() || s.isBoolean() || !scalar_fits(t.scalar_type(), s.toDouble())) return false;
  }
  return true;
}

// elu(self, alpha, scale, input_scale)
bool elu_rule(Args a) { return input(kElementwise, a[0]) && scalars_fit(a[0].toTensor(), a, {1, 2, 3}); }

// grad_output and self_or_result of an elementwise backward in one dense
// layout (torch_aclnn's result takes grad_output's layout; aten's follows
// both, e.g. self's where the gradient is expanded).
bool one_dense_layout(const c10::IValue& grad, const c10::IValue& self) {
  if (!floating(grad)) return false;
  const at::Tensor& g = grad.toTensor();
  return g.strides() == self.toTensor().strides() && g.is_non_overlapping_and_dense();
}

// elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result):
// with is_result, alpha >= 0 (aten raises for a NaN alpha too, as _dropin
// leaves in-place ELU with such an alpha to torch).
bool elu_backward_rule(Args a) {
  if (!input(kElementwise, a[5]) || !scalars_fit(a[5].toTensor(), a, {1, 2, 3})) return false;
  if (a[4].isBool() && a[4].toBool() && !(a[1].toScalar().toDouble() >= 0)) return false;
  return one_dense_layout(a[0], a[5]);
}

// leaky_relu(self, negative_slope)
bool leaky_relu_rule(Args a) { return input(kElementwise, a[0]) && scalars_fit(a[0].toTensor(), a, {1}); }

// leaky_relu_backward(grad_output, self, negative_slope, self_is_result): as
// elu_backward's rule (aten raises for a NaN slope too).
bool leaky_relu_backward_rule(Args a) {
  if (!input(kElementwise, a[1]) || !scalars_fit(a[1].toTensor(), a, {2})) return false;
  if (a[3].isBool() && a[3].toBool() && !(a[2].toScalar().toDouble() >= 0)) return false;
  return one_dense_layout(a[0], a[1]);
}

// The scales at a[first..first+2]: none given, or all three given and > 0
// (the contract reads them as a set and ignores all three unless each is
// > 0; aten takes each axis's alone, and the sizes where one is missing or
// <= 0).
bool scales_as_a_set(Args a, size_t first) {
  const bool given = !a[first].isNone();
  for (size_t i = first; i < first + 3; ++i) {
    if (a[i].isNone() == given) return false;
    if (given && !(a[i].toDouble() > 0)) return false;  // (NaN too)
  }
  return true;
}

// upsample_nearest3d / _upsample_nearest_exact3d(self, output_size, scales_d, scales_h, scales_w)
bool upsample_rule(Args a) { return input(kUpsample, a[0]) && scales_as_a_set(a, 2); }

// the backwards (grad_output, output_size, input_size, scales_d, scales_h, scales_w);
// their result is made contiguous, as aten's is in every layout
bool upsample_backward_rule(Args a) { return floating(a[0]) && scales_as_a_set(a, 3); }

// smooth_l1_loss(self, target, reduction, beta): rules.h's takes_loss; beta
// == 0 stays aten's (F.smooth_l1_loss sends it to l1_loss before aten; only a
// direct call gets here, and aten's gradient at d == 0 is not the spec's).
bool loss_rule(const c10::IValue& self, const c10::IValue& target, const c10::IValue& reduction,
               const c10::IValue& beta) {
  return self.isTensor() && target.isTensor() && reduction.isInt() && beta.isDouble() && beta.toDouble() != 0 &&
         takes_loss(self.toTensor(), target.toTensor(), reduction.toInt(), beta.toDouble());
}

bool smooth_l1_rule(Args a) { return loss_rule(a[0], a[1], a[2], a[3]); }

// smooth_l1_loss_backward(grad_output, self, target, reduction, beta): self
// and target of one dtype and shape (aten's gradient keeps self's dtype, and
// resizes itself to a target that broadcasts self).
bool smooth_l1_backward_rule(Args a) {
  if (!floating(a[0]) || !loss_rule(a[1], a[2], a[3], a[4])) return false;
  const at::Tensor& x = a[1].toTensor();
  const at::Tensor& y = a[2].toTensor();
  return a[0].toTensor().scalar_type() == x.scalar_type() && y.scalar_type() == x.scalar_type() &&
         y.sizes() == x.sizes();
}

// max_unpool3d(self, indices, output_size, stride, padding)
bool max_unpool_rule(Args a) { return floating(a[0]); }

// max_pool3d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
bool max_pool_rule(Args a) { return input(kMaxPool, a[0]); }

// max_pool3d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
// int64 indices (the contract takes int32 too; aten refuses them)
bool max_pool_backward_rule(Args a) {
  return floating(a[0]) && input(kMaxPool, a[1]) && a[0].toTensor().scalar_type() == a[1].toTensor().scalar_type() &&
         a[7].isTensor() && a[7].toTensor().scalar_type() == at::kLong;
}

// aten's argument order -> torch_aclnn's: indices third.
void max_pool_backward_order(torch::jit::Stack& s) { std::rotate(s.begin() + 2, s.begin() + 7, s.begin() + 8); }

// upsample_trilinear3d(self, output_size, align_corners, scales_d, scales_h, scales_w): aten takes each
// axis's scale alone, as the contract does (§10).
bool upsample_trilinear_rule(Args a) { return input(kUpsample, a[0]); }

// upsample_trilinear3d_backward(grad_output, output_size, input_size, align_corners, scales_d, scales_h,
// scales_w): aten's result follows grad_output's layout, as the contract's does
bool upsample_trilinear_backward_rule(Args a) { return floating(a[0]); }

// avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
bool avg_pool_rule(Args a) { return input(kAvgPool, a[0]); }

// avg_pool3d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
//                     divisor_override)
bool avg_pool_backward_rule(Args a) {
  return floating(a[0]) && input(kAvgPool, a[1]) && a[0].toTensor().scalar_type() == a[1].toTensor().scalar_type();
}

// _adaptive_avg_pool3d(self, output_size): an output size of 1 never gets
// here: aten::adaptive_avg_pool3d computes it as a mean; one of 0 is the
// contract's error, so aten's. Its result is made contiguous, as aten's is in
// every layout.
bool adaptive_avg_pool_rule(Args a) { return input(kAdaptivePool, a[0]); }

// _adaptive_avg_pool3d_backward(grad_output, self): one dtype; the result is
// made contiguous, as aten's is in every layout.
bool adaptive_avg_pool_backward_rule(Args a) {
  return floating(a[0]) && input(kAdaptivePool, a[1]) &&
         a[0].toTensor().scalar_type() == a[1].toTensor().scalar_type();
}

enum Backend { kCPU, kCUDA, kBackends };

struct Route {
  const char* aten;                                 // aten::<aten>
  const char* ours;                                 // torch_aclnn::<ours>, the same schema
  bool (*rule)(Args);                               // the call may go to torch_aclnn (then the contract decides)
  void (*to_ours)(torch::jit::Stack&) = nullptr;    // reorders aten's arguments, where they differ
  bool contiguous = false;                          // aten's result is contiguous in every layout
  bool aten_checks_indices = true;                  // aten's kernels check an index before using it
  std::atomic<int64_t> routed{0};
  std::atomic<int64_t> passed{0};
  std::atomic<bool> on[kBackends] = {};             // switched on, per backend
  bool registered[kBackends] = {};                  // its kernel is registered (under g_mutex)
};

Route g_routes[] = {
    {"elu", "elu", elu_rule},
    {"elu_backward", "elu_backward", elu_backward_rule},
    {"upsample_nearest3d", "upsample_nearest3d", upsample_rule},
    {"upsample_nearest3d_backward", "upsample_nearest3d_backward", upsample_backward_rule, nullptr, true},
    {"_upsample_nearest_exact3d", "upsample_nearest_exact3d", upsample_rule},
    {"_upsample_nearest_exact3d_backward", "upsample_nearest_exact3d_backward", upsample_backward_rule, nullptr,
     true},
    {"smooth_l1_loss", "smooth_l1_loss", smooth_l1_rule},
    {"smooth_l1_loss_backward", "smooth_l1_loss_backward", smooth_l1_backward_rule},
    {"max_unpool3d", "max_unpool3d", max_unpool_rule, nullptr, true},
    {"max_pool3d_with_indices", "max_pool3d_with_indices", max_pool_rule},
    {"max_pool3d_with_indices_backward", "max_pool3d_with_indices_backward", max_pool_backward_rule,
     max_pool_backward_order, false, /*aten_checks_indices=*/false},
    {"leaky_relu", "leaky_relu", leaky_relu_rule},
    {"leaky_relu_backward", "leaky_relu_backward", leaky_relu_backward_rule},
    {"upsample_trilinear3d", "upsample_trilinear3d", upsample_trilinear_rule},
    {"upsample_trilinear3d_backward", "upsample_trilinear3d_backward", upsample_trilinear_backward_rule},
    {"avg_pool3d", "avg_pool3d", avg_pool_rule, nullptr, true},
    {"avg_pool3d_backward", "avg_pool3d_backward", avg_pool_backward_rule, nullptr, true},
    {"_adaptive_avg_pool3d", "adaptive_avg_pool3d", adaptive_avg_pool_rule, nullptr, true},
    {"_adaptive_avg_pool3d_backward", "adaptive_avg_pool3d_backward", adaptive_avg_pool_backward_rule, nullptr,
     true},
};

bool on_cuda(Args a) {
  return std::any_of(a.begin(), a.end(), [](const c10::IValue& v) { return v.isTensor() && v.toTensor().is_cuda(); });
}

// Whether torch_aclnn's contract error `e` hands the call to aten's kernel:
// not an IndexError that aten's kernel would not catch (its CUDA kernels stop
// the process on one, its CPU max_pool3d backward reads out of range), nor a
// RuntimeError (tensors on several devices: aten's error too).
bool handed_to_aten(const c10::Error& e, Args a, const Route& route) {
  if (!is_contract_error(e)) return false;
  if (dynamic_cast<const c10::IndexError*>(&e) != nullptr) return !on_cuda(a) && route.aten_checks_indices;
  return dynamic_cast<const c10::TypeError*>(&e) != nullptr || dynamic_cast<const c10::ValueError*>(&e) != nullptr;
}

// The results of routed calls that autograd records (grad mode on, an input
// requiring grad), weakly: while one is alive, a graph recorded while the
// routes were on may be too, and its backward, run after they are switched
// off, runs aten's kernels (uninstall() says how many). Expired ones are
// dropped as the list grows.
std::mutex g_recorded_mutex;
std::vector<c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>> g_recorded;
size_t g_recorded_compact_at = 64;

void remember_recorded(Args args, const torch::jit::Stack& results) {
  if (!at::GradMode::is_enabled() ||
      std::none_of(args.begin(), args.end(),
                   [](const c10::IValue& v) { return v.isTensor() && v.toTensor().requires_grad(); })) {
    return;
  }
  std::lock_guard<std::mutex> lock(g_recorded_mutex);
  for (const c10::IValue& result : results) {
    if (result.isTensor() && result.toTensor().is_floating_point()) {
      g_recorded.emplace_back(result.toTensor().getIntrusivePtr());
    }
  }
  if (g_recorded.size() >= g_recorded_compact_at) {
    g_recorded.erase(std::remove_if(g_recorded.begin(), g_recorded.end(), [](const auto& w) { return w.expired(); }),
                     g_recorded.end());
    g_recorded_compact_at = std::max<size_t>(64, 2 * g_recorded.size());
  }
}

// How many of those are alive, still attached to a graph; forgets them all.
int64_t forget_recorded() {
  std::lock_guard<std::mutex> lock(g_recorded_mutex);
  int64_t alive = 0;
  for (const auto& w : g_recorded) {
    auto impl = w.lock();
    if (impl && at::Tensor(std::move(impl)).grad_fn() != nullptr) ++alive;
  }
  g_recorded.clear();
  g_recorded_compact_at = 64;
  return alive;
}

#if TORCH_ACLNN_HAS_SAFE_KERNEL

class RouteKernel final : public c10::OperatorKernel {
 public:
  RouteKernel(Route& route, Backend backend, c10::OperatorHandle ours, c10::DispatchKey key,
              c10::SafeKernelFunction aten)
      : route_(route), on_(route.on[backend]), ours_(std::move(ours)), key_(key), aten_(std::move(aten)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    if (!on_.load(std::memory_order_relaxed)) {
      aten_.callBoxed(op, ks, stack);
      return;
    }
    const size_t n = op.schema().arguments().size();
    const Args args(stack->data() + stack->size() - n, n);
    if (route_.rule(args)) {
      torch::jit::Stack call(args.begin(), args.end());
      if (route_.to_ours != nullptr) route_.to_ours(call);
      if (ours(call, args)) {
        torch::jit::drop(*stack, n);
        if (route_.contiguous) call[0] = call[0].toTensor().contiguous();
        remember_recorded(args, call);
        for (c10::IValue& result : call) stack->push_back(std::move(result));
        route_.routed.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    route_.passed.fetch_add(1, std::memory_order_relaxed);
    aten_.callBoxed(op, ks, stack);
  }

 private:
  // torch_aclnn's kernel for this backend on `call` (its results replace the
  // arguments); false if its contract hands the call to aten.
  bool ours(torch::jit::Stack& call, Args args) {
    try {
      ours_.redispatchBoxed(c10::DispatchKeySet(key_), &call);
      return true;
    } catch (const c10::Error& e) {
      if (!handed_to_aten(e, args, route_)) throw;
      return false;
    }
  }

  Route& route_;
  const std::atomic<bool>& on_;
  c10::OperatorHandle ours_;
  c10::DispatchKey key_;
  c10::SafeKernelFunction aten_;
};

#endif

std::mutex g_mutex;
std::unique_ptr<torch::Library> g_library;  // every kernel registered so far (never removed)

// Drops torch's warning that a kernel overrides aten's: that is the point.
class Silent final : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

Route& find_route(const std::string& aten) {
  Route* found = nullptr;
  for (Route& r : g_routes) {
    if (aten == r.aten) found = &r;
  }
  TORCH_CHECK_VALUE(found != nullptr, "[torch_aclnn] no route for aten::", aten);
  return *found;
}

}  // namespace

PyObject* routes(PyObject* /*self*/, PyObject* /*args*/) {
#if TORCH_ACLNN_HAS_SAFE_KERNEL
  const size_t n = std::size(g_routes);
#else
  const size_t n = 0;  // (none can be switched on)
#endif
  PyObject* out = PyTuple_New(n);
  if (out == nullptr) return nullptr;
  for (size_t i = 0; i < n; ++i) {
    PyObject* pair = Py_BuildValue("(ss)", g_routes[i].aten, g_routes[i].ours);
    if (pair == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    PyTuple_SET_ITEM(out, i, pair);
  }
  return out;
}

PyObject* counts(PyObject* /*self*/, PyObject* /*args*/) {
  PyObject* out = PyTuple_New(std::size(g_routes));
  if (out == nullptr) return nullptr;
  for (size_t i = 0; i < std::size(g_routes); ++i) {
    PyObject* pair = Py_BuildValue("(LL)", static_cast<long long>(g_routes[i].routed.load()),
                                   static_cast<long long>(g_routes[i].passed.load()));
    if (pair == nullptr) {
      Py_DECREF(out);
      return nullptr;
    }
    PyTuple_SET_ITEM(out, i, pair);
  }
  return out;
}

PyObject* install(PyObject* /*self*/, PyObject* args) {
  HANDLE_TH_ERRORS
  PyObject* keys = nullptr;
  if (!PyArg_ParseTuple(args, "O", &keys)) return nullptr;
  std::vector<std::pair<std::string, std::string>> wanted;
  PyObject* seq = PySequence_Fast(keys, "_route_aten(keys): a sequence of (aten operator, dispatch key)");
  if (seq == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    const char* name = nullptr;
    const char* key = nullptr;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ss", &name, &key)) {
      Py_DECREF(seq);
      return nullptr;
    }
    wanted.emplace_back(name, key);
  }
  Py_DECREF(seq);
#if TORCH_ACLNN_HAS_SAFE_KERNEL
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<std::pair<Route*, Backend>> on;
  for (const auto& [name, key_name] : wanted) {
    TORCH_CHECK_VALUE(key_name == "CPU" || key_name == "CUDA", "[torch_aclnn] routes are for CPU and CUDA, got ",
                      key_name);
    on.emplace_back(&find_route(name), key_name == "CPU" ? kCPU : kCUDA);
  }
  auto& dispatcher = c10::Dispatcher::singleton();
  Silent silent;
  c10::WarningUtils::WarningHandlerGuard guard(&silent);
  for (const auto& [route, backend] : on) {
    if (route->registered[backend]) continue;
    if (!g_library) {
      g_library = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", std::nullopt, __FILE__, __LINE__);
    }
    const c10::DispatchKey key = backend == kCPU ? c10::DispatchKey::CPU : c10::DispatchKey::CUDA;
    const c10::OperatorHandle aten = dispatcher.findSchemaOrThrow((std::string("aten::") + route->aten).c_str(), "");
    c10::OperatorHandle ours = dispatcher.findSchemaOrThrow((std::string("torch_aclnn::") + route->ours).c_str(), "");
    g_library->impl(route->aten, torch::dispatch(key, torch::CppFunction::makeFromBoxedFunctor(std::make_unique<RouteKernel>(
                                                          *route, backend, std::move(ours), key,
                                                          aten.getComputedKernelForDispatchKey(key)))));
    route->registered[backend] = true;
  }
  for (Route& r : g_routes) {  // (each flag set once, to its new value: no call sees a route off in between)
    for (int b = 0; b < kBackends; ++b) {
      const bool want = std::any_of(on.begin(), on.end(), [&](const auto& o) { return o.first == &r && o.second == b; });
      r.on[b].store(want);
    }
  }
#else
  TORCH_CHECK(false, "[torch_aclnn] patch(level='dispatcher') needs torch >= 2.9 (to call aten's own kernel for "
              "the calls it does not route); this is torch ", TORCH_VERSION, ". Use patch()");
#endif
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

PyObject* uninstall(PyObject* /*self*/, PyObject* /*args*/) {
  HANDLE_TH_ERRORS
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Route& r : g_routes) {
    for (int b = 0; b < kBackends; ++b) r.on[b].store(false);
  }
  return PyLong_FromLongLong(forget_recorded());
  END_HANDLE_TH_ERRORS
}

PyObject* rules(PyObject* /*self*/, PyObject* /*args*/) {
  HANDLE_TH_ERRORS
  py::tuple dtypes(std::size(kRoutedDtypes));
  for (size_t i = 0; i < std::size(kRoutedDtypes); ++i) {
    dtypes[i] = py::make_tuple(kRoutedDtypes[i].name, kRoutedDtypes[i].max);
  }
  py::dict inputs;
  for (const InputRule& r : kInputRules) {
    py::tuple nonempty_from(std::size(r.nonempty_from));
    for (size_t i = 0; i < std::size(r.nonempty_from); ++i) nonempty_from[i] = static_cast<int>(r.nonempty_from[i]);
    inputs[r.name] = py::make_tuple(nonempty_from, r.w_fastest_4d);
  }
  py::dict out;
  out["dtypes"] = dtypes;
  out["scalar_limit"] = kScalarLimit;
  out["inputs"] = inputs;
  return out.release().ptr();
  END_HANDLE_TH_ERRORS
}

PyObject* takes(PyObject* /*self*/, PyObject* args) {
  HANDLE_TH_ERRORS
  const py::tuple a = py::reinterpret_borrow<py::tuple>(args);
  TORCH_CHECK_VALUE(a.size() >= 2 && py::isinstance<py::str>(a[0]), "[torch_aclnn] _route_takes(rule, tensors...)");
  const std::string name = a[0].cast<std::string>();
  if (name == "loss") {
    TORCH_CHECK_VALUE(a.size() == 5, "[torch_aclnn] _route_takes('loss', self, target, reduction, beta)");
    return py::bool_(takes_loss(a[1].cast<at::Tensor>(), a[2].cast<at::Tensor>(), a[3].cast<int64_t>(),
                                a[4].cast<double>()))
        .release()
        .ptr();
  }
  if (name == "scalar") {
    TORCH_CHECK_VALUE(a.size() == 3, "[torch_aclnn] _route_takes('scalar', tensor, value)");
    return py::bool_(scalar_fits(a[1].cast<at::Tensor>().scalar_type(), a[2].cast<double>())).release().ptr();
  }
  const InputRule* rule = input_rule(name);
  TORCH_CHECK_VALUE(rule != nullptr && a.size() == 2, "[torch_aclnn] _route_takes(rule, tensor): no input rule ",
                    name);
  return py::bool_(takes_input(*rule, a[1].cast<at::Tensor>())).release().ptr();
  END_HANDLE_TH_ERRORS
}

}  // namespace torch_aclnn::aten_routes
