// The elementwise CUDA functors (csrc/cuda/elu.cuh, leaky_relu.cuh,
// smooth_l1.cuh) applied on the host, element after element, as the CUDA
// elementwise driver applies them (tests/cuda_host/<family>.h).
#pragma once

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <array>
#include <cstdint>
#include <utility>

namespace host_elementwise {

template <typename scalar_t, typename F, size_t... K>
void apply(const F& f, scalar_t* out, const std::array<const scalar_t*, sizeof...(K)>& in, int64_t n,
           std::index_sequence<K...>) {
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[K][i]...);
}

// out[i] = f(inputs[i]...) over contiguous copies of the inputs (one shape,
// one floating dtype); make_f(scalar_t{}) makes the functor for the dtype.
// out: empty_like the first input's copy.
template <typename MakeF, typename... Tensors>
at::Tensor map(const MakeF& make_f, const Tensors&... inputs) {
  const std::array<at::Tensor, sizeof...(Tensors)> in{inputs.contiguous()...};
  at::Tensor out = at::empty_like(in[0]);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, in[0].scalar_type(), "map", [&] {
    std::array<const scalar_t*, sizeof...(Tensors)> p;
    for (size_t k = 0; k < p.size(); ++k) p[k] = in[k].template const_data_ptr<scalar_t>();
    apply(make_f(scalar_t{}), out.mutable_data_ptr<scalar_t>(), p, out.numel(),
          std::index_sequence_for<Tensors...>{});
  });
  return out;
}

}  // namespace host_elementwise
