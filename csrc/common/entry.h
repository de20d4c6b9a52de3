// The one entry of every operator on every backend, after aten's structured
// kernels. An operator's contract (csrc/contracts/<family>.h) checks a call,
// the one-device rule first, and returns its Plan: the result's spec
// (common/contract.h: Result) and whatever its kernels need. A backend brings
// an allocator and a device guard (a Backend below, cpu::Backend,
// cuda::Backend) and one kernel per operator,
//   into(at::Tensor& result, const Plan& plan, <the operator's arguments>),
// which computes into a tensor of the result's spec or into the caller's
// out= tensor. Two templates do the steps for Meta, CPU and CUDA alike:
//   Entry::functional  check, allocate, compute into the result
//   Entry::out         check (the out= tensor included), then compute straight
//                      into out where that is safe (writes_in_place), else
//                      into a temporary of the result's spec copied into it
// Meta has no kernel: its entries only check and allocate. A backend file
// registers its kernels with one line per operator (and its out= overload):
//   entry::impl<cpu::Backend, check_backward, backward_into>(m, "elu_backward");
#pragma once

#include "common/contract.h"
#include "common/out.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <type_traits>

namespace torch_aclnn::entry {

// The result through the dispatcher (Meta, CUDA): empty_like(*like) on the
// call's device with its layout, or empty of the spec's sizes (symbolic on
// Meta) in its memory format.
inline at::Tensor empty(const Result& r) {
  if (r.like != nullptr) {
    return at::empty_like(*r.like, r.like->options().device(r.device), c10::MemoryFormat::Preserve);
  }
  return at::empty_symint(r.sizes, r.options());
}

struct NoGuard {
  explicit NoGuard(c10::Device) {}
};

// The Meta backend (fake tensors, torch.compile): the contract and the
// result's spec, nothing computed.
struct Meta {
  static constexpr bool kComputes = false;
  using Guard = NoGuard;
  static at::Tensor empty(const Result& r) { return entry::empty(r); }
};

// Whether the kernel can write `out` directly: it has the result's dtype
// (out= of a wider dtype gets the values through a temporary, widened
// exactly by the copy), a layout the kernel writes (any strides, or dense in
// the result's memory format or the other 5-D one), and no memory shared
// with an input it reads (elementwise kernels: or exactly that input).
inline bool writes_in_place(const Result& r, const at::Tensor& out) {
  if (out.scalar_type() != r.dtype) return false;
  if (r.out_dense && !out.is_contiguous(dense_format_5d(out, r.format))) return false;
  for (const at::Tensor* t : r.reads) {
    if (r.out_elementwise ? !elementwise_safe_to_write(out, *t) : !shares_no_memory(out, {t})) return false;
  }
  return true;
}

// A contract's parameters: the operator's arguments (Args), then, for an
// operator with an out= overload, the Out it checks.
template <class... Ts>
struct Types {};

template <class Seen, class... Rest>
struct Split;
template <class... Seen>
struct Split<Types<Seen...>> {
  using Args = Types<Seen...>;
  static constexpr bool kOut = false;
};
template <class... Seen>
struct Split<Types<Seen...>, Out> {
  using Args = Types<Seen...>;
  static constexpr bool kOut = true;
};
template <class... Seen, class T, class... Rest>
struct Split<Types<Seen...>, T, Rest...> : Split<Types<Seen..., T>, Rest...> {};

template <class F>
struct ContractOf;
template <class Plan, class... Ps>
struct ContractOf<Plan (*)(Ps...)> : Split<Types<>, Ps...> {};

template <class Backend, auto contract, auto into, class Args = typename ContractOf<decltype(contract)>::Args>
struct Entry;

template <class Backend, auto contract, auto into, class... Args>
struct Entry<Backend, contract, into, Types<Args...>> {
  static constexpr bool kOut = ContractOf<decltype(contract)>::kOut;

  static auto check(Args... args) {
    if constexpr (kOut) {
      return contract(args..., Out());
    } else {
      return contract(args...);
    }
  }

  static at::Tensor functional(Args... args) {
    const auto plan = check(args...);
    typename Backend::Guard guard(plan.result.device);
    at::Tensor result = Backend::empty(plan.result);
    if constexpr (Backend::kComputes) {
      if (result.numel() > 0) into(result, plan, args...);
    }
    return result;
  }

  static void out(Args... args, at::Tensor& out) {
    const auto plan = contract(args..., Out(out));
    if constexpr (Backend::kComputes) {
      at::assert_no_internal_overlap(out);
      if (out.numel() == 0) return;
      typename Backend::Guard guard(plan.result.device);
      write_out(
          out, writes_in_place(plan.result, out), [&] { return Backend::empty(plan.result); },
          [&](at::Tensor& dst) { into(dst, plan, args...); });
    }
  }
};

// An operator with two results (a contract returning a Plan2: values and
// their indices): both allocated in their specs, computed by
//   into(at::Tensor& result, at::Tensor& second, const Plan2& plan, <the operator's arguments>).
// No out= overload.
template <class Backend, auto contract, auto into, class Args = typename ContractOf<decltype(contract)>::Args>
struct Entry2;

template <class Backend, auto contract, auto into, class... Args>
struct Entry2<Backend, contract, into, Types<Args...>> {
  static std::tuple<at::Tensor, at::Tensor> functional(Args... args) {
    const auto plan = contract(args...);
    typename Backend::Guard guard(plan.result.device);
    at::Tensor result = Backend::empty(plan.result);
    at::Tensor second = Backend::empty(plan.second);
    if constexpr (Backend::kComputes) {
      if (result.numel() > 0) into(result, second, plan, args...);
    }
    return {std::move(result), std::move(second)};
  }
};

template <class F>
struct PlanOf;
template <class Plan, class... Ps>
struct PlanOf<Plan (*)(Ps...)> {
  using type = Plan;
};

// Whether a contract's operator has two results (its Plan is a Plan2). In
// two steps: nvcc 13.0's front end evaluates a requires-expression whose
// parameter type depends on an auto template parameter to false.
template <class Plan>
inline constexpr bool kHasSecond = requires(const Plan& p) { p.second; };
template <auto contract>
inline constexpr bool kTwoResults = kHasSecond<typename PlanOf<decltype(contract)>::type>;

// The kernels to register: entry::functional<Backend, contract, into> for
// an operator, entry::out<...> for its out= overload (Meta: no into).
template <class Backend, auto contract, auto into = nullptr>
inline constexpr auto functional = &Entry<Backend, contract, into>::functional;
template <class Backend, auto contract, auto into = nullptr>
inline constexpr auto out = &Entry<Backend, contract, into>::out;

// Registers operator `name` on the library's backend (an operator with two
// results through Entry2), and its .grad_input overload when the contract
// checks an out= tensor.
template <class Backend, auto contract, auto into = nullptr>
void impl(torch::Library& m, const char* name) {
  if constexpr (kTwoResults<contract>) {
    m.impl(name, &Entry2<Backend, contract, into>::functional);
  } else {
    m.impl(name, functional<Backend, contract, into>);
    if constexpr (Entry<Backend, contract, into>::kOut) {
      m.impl((std::string(name) + ".grad_input").c_str(), out<Backend, contract, into>);
    }
  }
}

}  // namespace torch_aclnn::entry
