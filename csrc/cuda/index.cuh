// Index math shared by the CUDA kernels: the choice between 32- and 64-bit
// indexing and the flat-index -> coordinates split. The device-side parts
// are C10_HOST_DEVICE (see tests/test_cuda_host_*.py).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/cuda/detail/IntegerDivider.cuh>
#include <c10/macros/Macros.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <type_traits>

namespace torch_aclnn::cuda {

// One past the largest element offset a (non-empty) strided tensor reaches.
inline int64_t extent(const at::Tensor& t) {
  int64_t e = 1;
  for (int64_t d = 0; d < t.dim(); ++d) e += (t.size(d) - 1) * t.stride(d);
  return e;
}

// Whether 32-bit index math addresses every element of these tensors: every
// flat index, every offset and every partial sum of an offset stays below
// 2^31. (IntDivider<unsigned int> needs dividends below 2^31, and a
// grid-stride step, at most 2^24 (launch.cuh), then cannot wrap around 2^32.)
// Larger tensors take the 64-bit instantiation of a kernel.
inline bool fits_32bit(std::initializer_list<const at::Tensor*> ts) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  for (const at::Tensor* t : ts) {
    if (t->numel() > kMax || (t->numel() > 0 && extent(*t) > kMax)) return false;
  }
  return true;
}

// Calls f with the index type: uint32_t (fast division by invariant
// integers) when use_32bit, uint64_t otherwise.
template <typename F>
inline void with_index_type(bool use_32bit, F&& f) {
  if (use_32bit) {
    f(uint32_t{});
  } else {
    f(uint64_t{});
  }
}

// Calls f(std::true_type{}) or f(std::false_type{}): a runtime flag as a
// compile-time one (a kernel variant per layout).
template <typename F>
inline void with_bool(bool b, F&& f) {
  if (b) {
    f(std::true_type{});
  } else {
    f(std::false_type{});
  }
}

// vec elements read or written as one vector access (at most 16 bytes).
template <typename scalar_t, int vec>
struct alignas(sizeof(scalar_t) * vec) Pack {
  scalar_t v[vec];
};

// Whether p lies on a multiple of `bytes` (host side: a vector access's
// alignment, checked before a launch picks a packed kernel).
inline bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// A vector access (a pack of elements read or written at once) at p. On the
// host, where the CUDA kernels' element code runs in tests
// (tests/test_cuda_host_*.py), the address is checked for the
// alignment the device needs: x86 reads a misaligned pack without complaint,
// a GPU does not.
template <typename P, typename T>
C10_HOST_DEVICE inline P* as_pack(T* p) {
#if !defined(__CUDA_ARCH__)
  TORCH_INTERNAL_ASSERT(aligned(p, alignof(P)), "misaligned ", sizeof(P), "-byte pack access");
#endif
  return reinterpret_cast<P*>(p);
}

template <typename index_t>
using Divider = at::cuda::detail::IntDivider<index_t>;

// Splits a flat row-major index over five dimensions into its five indices.
// Holds dividers for dimensions 1..4 (dimension 0 needs none).
template <typename index_t>
struct Unravel5 {
  Divider<index_t> div[4];

  Unravel5() = default;
  explicit Unravel5(const int64_t (&sizes)[5]) {
    for (int d = 0; d < 4; ++d) div[d] = Divider<index_t>(static_cast<index_t>(sizes[d + 1]));
  }

  C10_HOST_DEVICE inline void operator()(index_t flat, index_t (&idx)[5]) const {
#pragma unroll
    for (int d = 3; d >= 0; --d) {
      const auto qr = div[d].divmod(flat);
      idx[d + 1] = qr.mod;
      flat = qr.div;
    }
    idx[0] = flat;
  }
};

}  // namespace torch_aclnn::cuda
