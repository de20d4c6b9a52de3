// The per-element functors of the ELU CUDA kernels (csrc/cuda/elu.cu).
// C10_HOST_DEVICE, so tests/test_cuda_host_emulation.py can run them on the
// host against aten's scalar CPU formula (the same glibc/CUDA exp family).
#pragma once

#include "contracts/elu.h"

#include <ATen/OpMathType.h>
#include <c10/macros/Macros.h>

#include <cmath>

namespace torch_aclnn::elu::kernels {

// The coefficients in the opmath type T, formed on the host as aten forms them.
template <typename scalar_t>
struct Coefs {
  using T = at::opmath_type<scalar_t>;
  T poscoef, negcoef, negiptcoef;
  explicit Coefs(const Params& p)
      : poscoef(static_cast<T>(p.scale)),
        negcoef(static_cast<T>(p.alpha) * static_cast<T>(p.scale)),  // rounded in T, as aten forms it
        negiptcoef(static_cast<T>(p.input_scale)) {}
};

template <typename scalar_t>
struct Forward {
  using T = at::opmath_type<scalar_t>;
  Coefs<scalar_t> c;
  C10_HOST_DEVICE scalar_t operator()(scalar_t xs) const {
    const T x = static_cast<T>(xs);
    // x = +-0 takes the positive branch (aten's CPU rule; aten's CUDA kernel takes x > 0)
    return static_cast<scalar_t>(x >= T(0) ? x * c.poscoef : std::expm1(x * c.negiptcoef) * c.negcoef);
  }
};

template <typename scalar_t, bool is_result>
struct Backward {
  using T = at::opmath_type<scalar_t>;
  Coefs<scalar_t> c;
  C10_HOST_DEVICE scalar_t operator()(scalar_t gs, scalar_t xs) const {
    const T g = static_cast<T>(gs), x = static_cast<T>(xs);
    if (x > T(0)) return static_cast<scalar_t>(g * c.poscoef);
    if constexpr (is_result) {
      return static_cast<scalar_t>(g * c.negiptcoef * (x + c.negcoef));
    } else {
      return static_cast<scalar_t>(g * c.negiptcoef * c.negcoef * std::exp(x * c.negiptcoef));
    }
  }
};

}  // namespace torch_aclnn::elu::kernels
