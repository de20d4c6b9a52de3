// The per-element functors of the LeakyReLU CUDA kernels (csrc/cuda/leaky_relu.cu).
// C10_HOST_DEVICE, so tests/test_cuda_host_*.py can run them on the
// host against the CPU kernels.
#pragma once

#include "contracts/leaky_relu.h"
#include "cuda/opmath.cuh"

#include <ATen/OpMathType.h>
#include <c10/macros/Macros.h>

namespace torch_aclnn::leaky_relu::kernels {

// negative_slope in the opmath type T, rounded on the host as aten rounds it.
template <typename scalar_t>
struct Slope {
  using T = at::opmath_type<scalar_t>;
  T slope;
  explicit Slope(const Params& p) : slope(static_cast<T>(p.negative_slope)) {}
};

// x > 0 ? x : x * negative_slope, in T (InOpmath widens x and rounds the
// result once; x * 1 == x: the CPU kernel's x * (x > 0 ? 1 : negative_slope),
// bit for bit).
template <typename scalar_t>
struct ForwardFormula {
  using T = at::opmath_type<scalar_t>;
  Slope<scalar_t> s;
  C10_HOST_DEVICE T operator()(T x) const { return x > T(0) ? x : x * s.slope; }
};

// x > 0 ? g : g * negative_slope (x is self, or the forward's result).
template <typename scalar_t>
struct BackwardFormula {
  using T = at::opmath_type<scalar_t>;
  Slope<scalar_t> s;
  C10_HOST_DEVICE T operator()(T g, T x) const { return x > T(0) ? g : g * s.slope; }
};

template <typename scalar_t>
using Forward = cuda::InOpmath<scalar_t, ForwardFormula<scalar_t>>;
template <typename scalar_t>
using Backward = cuda::InOpmath<scalar_t, BackwardFormula<scalar_t>>;

}  // namespace torch_aclnn::leaky_relu::kernels
