// Small helpers shared by the CPU kernels.
#pragma once

// GCC 12 flags the _mm512_undefined_*() placeholders inside its own AVX-512
// intrinsics (half<->float conversions inlined through at::vec, saturating
// narrowing moves), as "may be used uninitialized" (GCC bug 105593, fixed in
// GCC 13): silence that one false positive in every CPU kernel.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "common/entry.h"

#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/cpu/vec/vec.h>
#include <ATen/ops/empty_like.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace torch_aclnn::cpu {

// Elements of work one at::parallel_for chunk should at least hold (aten's
// at::internal::GRAIN_SIZE).
constexpr int64_t kGrainSize = 32768;

// A grain for parallel_for over items that each cost `cost` elements of work.
inline int64_t grain_for(int64_t cost) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, cost)); }

// "No bad index seen" for FirstBad.
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

// The smallest logical position of a bad index (a data-dependent contract
// error), gathered over threads, so that the same position is reported
// whatever the thread count.
class FirstBad {
 public:
  void note(int64_t pos) {
    int64_t cur = pos_.load(std::memory_order_relaxed);
    while (pos < cur && !pos_.compare_exchange_weak(cur, pos, std::memory_order_relaxed)) {
    }
  }
  int64_t get() const { return pos_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> pos_{kNone};
};

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

// Sets `bytes` bytes from p to zero (for any floating type: +0.0) with
// vector stores. Not std::memset: glibc clears a run of more than a few KiB
// with `rep stosb`, which on the AMD Zen 4 the benchmarks run on writes at
// well under the bandwidth a loop of vector stores reaches (seen on the
// scale-0.5 upsample backward through halved_rows: a 16 KiB run per zero slice).
inline void zero_bytes(void* p, int64_t bytes) {
  using Vec = at::vec::Vectorized<uint8_t>;
  constexpr int64_t L = Vec::size();
  auto* b = static_cast<uint8_t*>(p);
  const Vec zero(uint8_t(0));
  int64_t k = 0;
  for (; k + 4 * L <= bytes; k += 4 * L) {
    zero.store(b + k);
    zero.store(b + k + L);
    zero.store(b + k + 2 * L);
    zero.store(b + k + 3 * L);
  }
  for (; k + L <= bytes; k += L) zero.store(b + k);
  if (k < bytes) zero.store(b + k, static_cast<int>(bytes - k));
}

// n elements of T from p set to all bits zero (zero_bytes).
template <typename T>
inline void zero_fill(T* p, int64_t n) {
  zero_bytes(p, n * static_cast<int64_t>(sizeof(T)));
}

// The size of the last-level cache (the largest cache level sysfs lists for
// CPU 0), or 32 MiB where it lists none.
inline int64_t last_level_cache_bytes() {
  static const int64_t bytes = [] {
    int64_t best = 0;
    for (int index = 0; index < 8; ++index) {
      std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
      int64_t n = 0;
      char unit = 0;
      if (!(f >> n)) continue;
      if (f >> unit) n *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? int64_t{1} << 30 : 1;
      best = std::max(best, n);
    }
    return best > 0 ? best : int64_t{32} << 20;
  }();
  return bytes;
}

// The size of a transparent huge page (the PMD size: 2 MiB on x86-64), or 0
// when the kernel offers none or TORCH_ACLNN_HUGE_PAGES=0 turns the advice off.
inline size_t huge_page_bytes() {
  static const size_t bytes = [] {
    const char* env = std::getenv("TORCH_ACLNN_HUGE_PAGES");
    if (env != nullptr && std::strcmp(env, "0") == 0) return size_t{0};
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    size_t n = 0;
    return (f >> n) ? n : size_t{0};
  }();
  return bytes;
}

// Whether no base page of [first, first + bytes) is resident: memory not
// written since it was mapped (a fresh mapping, or a heap just grown), whose
// first writes will fault. Memory an allocator hands out again is resident.
#if defined(__linux__) && defined(MADV_HUGEPAGE)
inline bool untouched(uintptr_t first, size_t bytes) {
  static const size_t base = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((bytes + base - 1) / base);
  if (mincore(reinterpret_cast<void*>(first), bytes, resident.data()) != 0) return false;
  return std::none_of(resident.begin(), resident.end(), [](unsigned char r) { return (r & 1) != 0; });
}
#endif

// A freshly allocated output, before its first write. A large allocation is
// often a fresh mapping (glibc maps it afresh above its mmap threshold), so the
// kernel's first write to each 4 KiB page takes a page fault, and for an
// elementwise or upsample kernel those faults cost more than the arithmetic (a
// 128 MiB output: 32768 faults). Advising the whole huge pages inside the allocation as
// MADV_HUGEPAGE lets Linux back them with 2 MiB pages: 64 faults. This is
// advice only (no effect when transparent huge pages are off, errors are
// ignored), and the memory, its size and its lifetime are unchanged; torch's
// own allocator does the same for every allocation under
// THP_MEM_ALLOC_ENABLE=1.
//
// Only outputs of kAdvisedBytes or more whose memory is not yet written (the
// first huge page inside has no resident page) are advised. In a training
// loop an allocator serves most outputs from memory it reuses or from a heap
// it keeps growing and trimming (glibc serves sizes below 32 MiB, its largest
// mmap threshold, from its heap once a chunk of that size has been freed;
// jemalloc and tcmalloc keep their extents): there the advice saves few or no
// faults, splits the heap's mapping, and (with the kernel's default
// defrag=madvise) makes the faults in the advised range compact memory
// synchronously. Advising every output of 4 MiB or more made a training step
// of a 2 x 16 x 32^3 U-Net slower.
constexpr size_t kAdvisedBytes = size_t{32} << 20;
inline at::Tensor with_huge_pages(at::Tensor t) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const size_t page = huge_page_bytes();
  const size_t nbytes = t.storage().nbytes();
  if (page == 0 || nbytes < std::max(kAdvisedBytes, 2 * page) || !t.is_cpu()) return t;
  const auto begin = reinterpret_cast<uintptr_t>(t.storage().data());
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + nbytes) / page * page;
  if (last > first && untouched(first, page)) {
    (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#endif
  return t;
}

// A CPU kernel's result (or out= temporary): at::empty / at::empty_like(t,
// MemoryFormat::Preserve) without the trip through the dispatcher, which is
// a good part of a small call's cost (aten's structured kernels allocate
// their outputs the same way), and with_huge_pages.
inline at::Tensor empty(at::IntArrayRef size, const at::TensorOptions& options) {
  return with_huge_pages(at::detail::empty_cpu(size, options));
}

inline at::Tensor empty_like(const at::Tensor& t) {
  // Preserve keeps a non-overlapping and dense tensor's strides as they are.
  if (t.is_non_overlapping_and_dense()) {
    return with_huge_pages(at::detail::empty_strided_cpu(t.sizes(), t.strides(), t.options()));
  }
  return with_huge_pages(at::empty_like(t, c10::MemoryFormat::Preserve));
}

// The CPU backend of the generic entries (common/entry.h): results allocated
// as above.
struct Backend {
  static constexpr bool kComputes = true;
  using Guard = entry::NoGuard;
  static at::Tensor empty(const Result& r) {
    return r.like != nullptr ? cpu::empty_like(*r.like) : cpu::empty(C10_AS_INTARRAYREF_SLOW(r.sizes), r.options());
  }
};

}  // namespace torch_aclnn::cpu
