// The per-element functors of the LeakyReLU CUDA kernels (csrc/cuda/leaky_relu.cu).
// C10_HOST_DEVICE, so tests/test_cuda_host_emulation.py can run them on the
// host against the CPU kernels.
#pragma once

#include "contracts/leaky_relu.h"

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

// x > 0 ? x : x * negative_slope, in opmath, rounded once (x * 1 == x: the
// CPU kernel's x * (x > 0 ? 1 : negative_slope), bit for bit).
template <typename scalar_t>
struct Forward {
  using T = at::opmath_type<scalar_t>;
  Slope<scalar_t> s;
  C10_HOST_DEVICE scalar_t operator()(scalar_t xs) const {
    const T x = static_cast<T>(xs);
    return static_cast<scalar_t>(x > T(0) ? x : x * s.slope);
  }
};

// x > 0 ? g : g * negative_slope (x is self, or the forward's result).
template <typename scalar_t>
struct Backward {
  using T = at::opmath_type<scalar_t>;
  Slope<scalar_t> s;
  C10_HOST_DEVICE scalar_t operator()(scalar_t gs, scalar_t xs) const {
    const T g = static_cast<T>(gs), x = static_cast<T>(xs);
    return static_cast<scalar_t>(x > T(0) ? g : g * s.slope);
  }
};

}  // namespace torch_aclnn::leaky_relu::kernels
