// The per-element functors of the ELU CUDA kernels (csrc/cuda/elu.cu).
// C10_HOST_DEVICE, so tests/test_cuda_host_*.py can run them on the
// host against aten's scalar CPU formula (the same glibc/CUDA exp family).
#pragma once

#include "contracts/elu.h"
#include "cuda/opmath.cuh"

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

// The formulas in T (InOpmath widens the operands and rounds the result).
template <typename scalar_t>
struct ForwardFormula {
  using T = at::opmath_type<scalar_t>;
  Coefs<scalar_t> c;
  C10_HOST_DEVICE T operator()(T x) const {
    // x = +-0 takes the positive branch (aten's CPU rule; aten's CUDA kernel takes x > 0)
    return x >= T(0) ? x * c.poscoef : std::expm1(x * c.negiptcoef) * c.negcoef;
  }
};

template <typename scalar_t, bool is_result>
struct BackwardFormula {
  using T = at::opmath_type<scalar_t>;
  Coefs<scalar_t> c;
  C10_HOST_DEVICE T operator()(T g, T x) const {
    if (x > T(0)) return g * c.poscoef;
    if constexpr (is_result) {
      return g * c.negiptcoef * (x + c.negcoef);
    } else {
      return g * c.negiptcoef * c.negcoef * std::exp(x * c.negiptcoef);
    }
  }
};

template <typename scalar_t>
using Forward = cuda::InOpmath<scalar_t, ForwardFormula<scalar_t>>;
template <typename scalar_t, bool is_result>
using Backward = cuda::InOpmath<scalar_t, BackwardFormula<scalar_t, is_result>>;

}  // namespace torch_aclnn::elu::kernels
