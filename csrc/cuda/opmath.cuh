// The frame of the elementwise functors (csrc/cuda/elu.cuh, leaky_relu.cuh,
// smooth_l1.cuh): a formula of opmath values (float32 for half/bfloat16)
// applied to scalar_t operands, each widened to opmath, its result rounded
// once to scalar_t. C10_HOST_DEVICE with no CUDA built-in, so the host
// emulation (tests/cuda_host/elementwise.h) runs it as the kernels do.
#pragma once

#include <ATen/OpMathType.h>
#include <c10/macros/Macros.h>

#include <type_traits>

namespace torch_aclnn::cuda {

template <typename scalar_t, typename Formula>
struct InOpmath {
  Formula f;
  // scalar_t operands only: the elementwise driver's unqualified
  // invoke(op, x, index_sequence) would otherwise find std::invoke (by ADL)
  // the better match.
  template <typename... X>
    requires(std::is_same_v<X, scalar_t> && ...)
  C10_HOST_DEVICE scalar_t operator()(X... xs) const {
    return static_cast<scalar_t>(f(static_cast<at::opmath_type<scalar_t>>(xs)...));
  }
};

}  // namespace torch_aclnn::cuda
