// Small helpers shared by the CPU kernels.
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

namespace torch_aclnn::cpu {

// Elements of work one at::parallel_for chunk should at least hold (aten's
// at::internal::GRAIN_SIZE).
constexpr int64_t kGrainSize = 32768;

// A grain for parallel_for over items that each cost `cost` elements of work.
inline int64_t grain_for(int64_t cost) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, cost)); }

// Splits a flat index over `sizes` (row-major) into per-dim indices.
template <int nd>
inline void unravel(int64_t flat, const int64_t (&sizes)[nd], int64_t (&idx)[nd]) {
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = flat % sizes[d];
    flat /= sizes[d];
  }
}

// Steps per-dim indices to the next flat index (row-major).
template <int nd>
inline void advance(const int64_t (&sizes)[nd], int64_t (&idx)[nd]) {
  for (int d = nd - 1; d >= 0; --d) {
    if (++idx[d] < sizes[d]) return;
    idx[d] = 0;
  }
}

}  // namespace torch_aclnn::cpu
