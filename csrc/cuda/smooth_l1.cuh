// The per-element functors of the SmoothL1 CUDA kernels
// (csrc/cuda/smooth_l1.cu). C10_HOST_DEVICE, so
// tests/test_cuda_host_*.py run them on the host against the CPU
// kernels: they do the CPU kernels' operations in the same order, in the
// same opmath type, with the same host-formed coefficients, so the
// elementwise results (the 'none' loss, grad_input) are bitwise equal.
#pragma once

#include "contracts/smooth_l1.h"
#include "cuda/opmath.cuh"

#include <ATen/OpMathType.h>
#include <c10/macros/Macros.h>

#include <cmath>

namespace torch_aclnn::smooth_l1::kernels {

// z = |a - b|;  z < beta ? 0.5 * z * z / beta : z - 0.5 * beta, in opmath T.
template <typename T>
struct Loss {
  T beta, half_beta;
  explicit Loss(double b) : beta(static_cast<T>(b)), half_beta(static_cast<T>(0.5) * static_cast<T>(b)) {}
  C10_HOST_DEVICE T operator()(T a, T b) const {
    const T z = std::abs(a - b);
    return z < beta ? static_cast<T>(0.5) * z * z / beta : z - half_beta;
  }
};

// The 'none' loss of scalar_t operands, rounded once.
template <typename scalar_t>
using LossNone = cuda::InOpmath<scalar_t, Loss<at::opmath_type<scalar_t>>>;

// d = a - b;  r = |d| >= beta ? sign(d) : d / beta  (sign(0) = 0; a NaN d
// fails the test and gives d / beta = NaN);  grad = norm * r * g.
template <typename scalar_t>
struct Grad {
  using T = at::opmath_type<scalar_t>;
  T beta, norm;
  Grad(double b, double n) : beta(static_cast<T>(b)), norm(static_cast<T>(n)) {}
  C10_HOST_DEVICE scalar_t operator()(scalar_t gs, scalar_t as, scalar_t bs) const {
    const T g = static_cast<T>(gs);
    const T d = static_cast<T>(as) - static_cast<T>(bs);
    const T sign = d > T(0) ? T(1) : (d < T(0) ? T(-1) : T(0));
    const T r = std::abs(d) >= beta ? sign : d / beta;
    return static_cast<scalar_t>(norm * r * g);
  }
};

}  // namespace torch_aclnn::smooth_l1::kernels
