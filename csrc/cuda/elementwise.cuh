// The elementwise driver of the CUDA kernels (elu, smooth_l1_loss): runs a
// functor over an at::TensorIterator whose operands all have one dtype.
//
// Two paths:
//   - contiguous: every operand is one dense run in the same order (the
//     iterator has coalesced them; this covers contiguous and, e.g., all
//     channels_last tensors with equal strides), except inputs broadcast
//     from a single element (the 0-dim grad_output of a 'mean'/'sum'
//     backward), which each thread reads once. Each thread moves 128 bits
//     per operand per step (4 float, 2 double, 8 half/bfloat16) with vector
//     loads and stores, flat 64-bit indexing (no division). Pointers that are
//     not 16-byte aligned (views with an odd storage offset) take the same
//     kernel one element at a time.
//   - strided (permuted, sliced, broadcast/expanded): aten's OffsetCalculator
//     over the iterator's coalesced dims, 32-bit (fast division); larger
//     iterators are split with with_32bit_indexing().
// Both apply the very same functor to every element, so a result never
// depends on the layout or the path.
#pragma once

#include "common/contract.h"
#include "cuda/index.cuh"
#include "cuda/launch.cuh"

#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/Array.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/detail/OffsetCalculator.cuh>

#include <cstdint>
#include <utility>

namespace torch_aclnn::cuda {

template <typename Op, typename scalar_t, int nin, size_t... Is>
C10_DEVICE inline scalar_t invoke(const Op& op, const scalar_t (&x)[nin], std::index_sequence<Is...>) {
  return op(x[Is]...);
}

// Input k is broadcast from in[k][0] when bit k of `scalars` is set.
template <int nin, int vec, typename scalar_t, typename Op>
__global__ void __launch_bounds__(kThreads)
contiguous_kernel(int64_t n, scalar_t* __restrict__ out, at::detail::Array<const scalar_t*, nin> in,
                  uint32_t scalars, Op op) {
  using P = Pack<scalar_t, vec>;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t nvec = n / vec;
  scalar_t one[nin];  // the broadcast inputs' values
#pragma unroll
  for (int k = 0; k < nin; ++k) one[k] = (scalars >> k & 1) ? in[k][0] : scalar_t(0);  // n > 0 here
  for (int64_t i = first; i < nvec; i += step) {
    P a[nin];
#pragma unroll
    for (int k = 0; k < nin; ++k) {
      if (scalars >> k & 1) {
#pragma unroll
        for (int j = 0; j < vec; ++j) a[k].v[j] = one[k];
      } else {
        a[k] = reinterpret_cast<const P*>(in[k])[i];
      }
    }
    P r;
#pragma unroll
    for (int j = 0; j < vec; ++j) {
      scalar_t x[nin];
#pragma unroll
      for (int k = 0; k < nin; ++k) x[k] = a[k].v[j];
      r.v[j] = invoke(op, x, std::make_index_sequence<nin>{});
    }
    reinterpret_cast<P*>(out)[i] = r;
  }
  // The last n % vec elements.
  for (int64_t i = nvec * vec + first; i < n; i += step) {
    scalar_t x[nin];
#pragma unroll
    for (int k = 0; k < nin; ++k) x[k] = (scalars >> k & 1) ? one[k] : in[k][i];
    out[i] = invoke(op, x, std::make_index_sequence<nin>{});
  }
}

// Whether every operand of iter is one dense run in the same order, but for
// inputs broadcast from a single element (byte stride 0 once coalesced),
// returned in `scalars` (input k as bit k).
inline bool dense_but_scalars(const at::TensorIteratorBase& iter, int64_t elem, uint32_t& scalars) {
  scalars = 0;
  if (iter.is_contiguous()) return true;
  if (iter.ndim() != 1 || iter.strides(0)[0] != elem) return false;
  for (int k = 1; k < iter.ntensors(); ++k) {
    const int64_t s = iter.strides(k)[0];
    if (s == 0) {
      scalars |= 1u << (k - 1);
    } else if (s != elem) {
      return false;
    }
  }
  return true;
}

template <int nin, typename scalar_t, typename Op>
__global__ void __launch_bounds__(kThreads)
strided_kernel(uint32_t n, char* out, at::detail::Array<const char*, nin> in,
               OffsetCalculator<nin + 1, uint32_t> offsets, Op op) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(uint32_t, i, n) {
    const auto off = offsets.get(i);  // bytes; off[0] is the output's
    scalar_t x[nin];
#pragma unroll
    for (int k = 0; k < nin; ++k) x[k] = *reinterpret_cast<const scalar_t*>(in[k] + off[k + 1]);
    *reinterpret_cast<scalar_t*>(out + off[0]) = invoke(op, x, std::make_index_sequence<nin>{});
  }
}

// Runs op over iter: output 0, inputs 1..nin, all of dtype scalar_t, on the
// current stream of iter's device.
template <int nin, typename scalar_t, typename Op>
void launch_elementwise(at::TensorIteratorBase& iter, const Op& op) {
  TORCH_INTERNAL_ASSERT(iter.ntensors() == nin + 1 && iter.noutputs() == 1);
  const int64_t n = iter.numel();
  if (n == 0) return;
  c10::cuda::CUDAGuard guard(iter.device());
  const auto stream = c10::cuda::getCurrentCUDAStream();
  uint32_t scalars = 0;
  if (dense_but_scalars(iter, sizeof(scalar_t), scalars)) {
    auto* out = static_cast<scalar_t*>(iter.data_ptr(0));
    at::detail::Array<const scalar_t*, nin> in;
    constexpr int vec = 16 / sizeof(scalar_t);
    bool whole = aligned(out, 16);
    for (int k = 0; k < nin; ++k) {
      in[k] = static_cast<const scalar_t*>(iter.data_ptr(k + 1));
      whole = whole && ((scalars >> k & 1) || aligned(in[k], 16));
    }
    if (whole) {
      contiguous_kernel<nin, vec><<<blocks_for((n + vec - 1) / vec), kThreads, 0, stream>>>(n, out, in, scalars, op);
    } else {
      contiguous_kernel<nin, 1><<<blocks_for(n), kThreads, 0, stream>>>(n, out, in, scalars, op);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  if (!iter.can_use_32bit_indexing()) {
    for (auto& sub : iter.with_32bit_indexing()) launch_elementwise<nin, scalar_t>(sub, op);
    return;
  }
  at::detail::Array<const char*, nin> in;
  for (int k = 0; k < nin; ++k) in[k] = static_cast<const char*>(iter.data_ptr(k + 1));
  strided_kernel<nin, scalar_t><<<blocks_for(n), kThreads, 0, stream>>>(
      static_cast<uint32_t>(n), static_cast<char*>(iter.data_ptr(0)), in, make_offset_calculator<nin + 1>(iter), op);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// out = op(inputs...) element by element: out (any strides, not resized)
// and the inputs all of dtype scalar_t and out's shape; a 0-dim CPU input is
// read from a copy on out's device.
template <typename scalar_t, typename Op, typename... Inputs>
void map_into(at::Tensor& out, const Op& op, const Inputs&... inputs) {
  const at::Tensor on_out_device[] = {on_device(inputs, out.device())...};
  at::TensorIteratorConfig config;
  config.resize_outputs(false).add_output(out);
  for (const at::Tensor& t : on_out_device) config.add_const_input(t);
  auto iter = config.build();
  launch_elementwise<sizeof...(Inputs), scalar_t>(iter, op);
}

}  // namespace torch_aclnn::cuda
