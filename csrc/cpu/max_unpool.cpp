// CPU kernels of the MaxUnpool3d family (docs/spec.md §5).
//
// Both operators only move elements, so they dispatch on the element size
// (1, 2, 4 or 8 bytes) and copy bits: every dtype is exact (NaN payloads and
// -0.0 included), and nine dtypes share four instantiations.
//
// A tensor of shape (N, [C,] D, H, W) is seen as N x C planes of S = D*H*W
// elements (C = 1 for 4-D input); element (n, c, k) lives at
// data + n*sN + c*sC + k*sK. Any tensor whose D, H, W axes flatten to one
// strided axis (contiguous, channels_last_3d, sliced in N or C, expanded, ...)
// is used in place; others are copied once.
//
// Forward (scatter): out = zeros(..., oD, oH, oW); out[n][c][indices[n][c][i]]
// = self[n][c][i]. Each (n, c) plane is written by one task in increasing i,
// so for duplicate indices the largest flat input position wins, on any number
// of threads. Tasks are planes (contiguous output) or (n, block of channels)
// pairs (channels_last_3d output, so a pixel's channels are written together);
// each zeroes its part of the output just before scattering into it.
//
// Backward (gather): grad_input[n][c][i] = grad_output[n][c][indices[n][c][i]],
// split over all elements of grad_input in memory order. On AVX-512, 4- and 2-byte
// elements of dense planes whose indices lie in their 2x2x2 windows (a
// stride-2 pooling) are picked from grad_output's rows read in order
// (gather_windows); any other run takes the element gather.
//
// Every index is range-checked before it is used (row 15): an index outside
// [0, oD*oH*oW) is never read through or written through; the first offending
// position in self's logical order is reported, whatever the thread count.
#include "contracts/max_unpool.h"
#include "cpu/cpu_utils.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <torch/library.h>
#if defined(CPU_CAPABILITY_AVX512)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace torch_aclnn::max_unpool {
namespace {

using c10::MemoryFormat;
using cpu::FirstBad;
using cpu::kGrainSize;
using cpu::kNone;

using planes::Planes;
using planes::planes_of;

// Row 15: IndexError naming the value and its position.
void check_indices_found(const char* op, const FirstBad& bad, const Geometry& g, const int64_t* ix, Planes xp,
                         at::IntArrayRef output_size) {
  const int64_t pos = bad.get();
  if (C10_LIKELY(pos == kNone)) return;
  const int64_t n = pos / (g.C * g.S), c = (pos / g.S) % g.C, i = pos % g.S;
  const int64_t value = ix[n * xp.sN + c * xp.sC + i * xp.sK];
  std::vector<int64_t> where = {n};
  if (g.five) where.push_back(c);
  where.insert(where.end(), {i / (g.H * g.W), (i / g.W) % g.H, i % g.W});
  ACLNN_CHECK_INDEX(false, op, "indices", fmt_list(where), " = ", value, " is outside [0, ", g.oS,
                    "), the flattened output_size ", fmt_list(output_size));
}

// Runs kernel(T{}, g, ix, xp, bad), T the unsigned integer of dtype's size,
// over the call's indices (flattenable in fmt), then raises row 15's error
// for the first out-of-range index the kernel noted.
template <typename F>
void unpool(const char* op, const at::Tensor& self, const at::Tensor& indices_, c10::SymIntArrayRef output_size_,
            MemoryFormat fmt, at::ScalarType dtype, const F& kernel) {
  const auto output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  const at::Tensor indices = flattenable(indices_, fmt);
  const Geometry g = geometry(self, output_size);
  const int64_t* ix = indices.const_data_ptr<int64_t>();
  const Planes xp = planes_of(indices);
  FirstBad bad;
  dispatch_by_size(dtype, [&](auto tag) { kernel(tag, g, ix, xp, bad); });
  check_indices_found(op, bad, g, ix, xp, output_size);
}

inline bool out_of_range(int64_t v, int64_t oS) {
  return static_cast<uint64_t>(v) >= static_cast<uint64_t>(oS);
}

// ---------------------------------------------------------------------------
// Forward

// Channels per task when the output keeps a pixel's channels together: a
// cache line's worth, fewer when that leaves threads idle.
template <typename T>
int64_t channel_block(const Geometry& g, const Planes& op) {
  if (op.sC != 1 || g.C == 1) return 1;
  int64_t cb = std::min<int64_t>(g.C, std::max<size_t>(1, 64 / sizeof(T)));
  const int64_t threads = at::get_num_threads();
  while (cb > 1 && g.N * ((g.C + cb - 1) / cb) < threads) cb = (cb + 1) / 2;
  return cb;
}

// Zeroes the part of `out` task (n, channels [c0, c1)) owns, just before it
// scatters into it: one pass over memory that is then still in cache, in
// parallel, instead of a separate fill of the whole output.
template <typename T>
void zero_block(T* on, Planes op, int64_t c0, int64_t c1, int64_t oS) {
  if (op.sK == 1) {  // dense planes (contiguous output)
    for (int64_t c = c0; c < c1; ++c) cpu::zero_fill(on + c * op.sC, oS);
  } else if (op.sC == 1) {  // dense pixels (channels_last_3d output)
    for (int64_t k = 0; k < oS; ++k) cpu::zero_fill(on + k * op.sK + c0, c1 - c0);
  } else {
    for (int64_t c = c0; c < c1; ++c) {
      for (int64_t k = 0; k < oS; ++k) on[c * op.sC + k * op.sK] = T(0);
    }
  }
}

template <typename T>
void scatter_kernel(const T* x, Planes sp, const int64_t* ix, Planes xp, T* out, Planes op, const Geometry& g,
                    FirstBad& bad) {
  const int64_t N = g.N, C = g.C, S = g.S, oS = g.oS;
  const int64_t cb = channel_block<T>(g, op);
  const int64_t blocks = (C + cb - 1) / cb;
  at::parallel_for(0, N * blocks, cpu::grain_for((S + oS) * cb), [&](int64_t b, int64_t e) {
    int64_t first_bad = kNone;
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / blocks, c0 = (t % blocks) * cb, c1 = std::min(C, c0 + cb);
      T* on = out + n * op.sN;
      zero_block(on, op, c0, c1, oS);
      if (c1 - c0 == 1) {
        const T* xs = x + n * sp.sN + c0 * sp.sC;
        const int64_t* is = ix + n * xp.sN + c0 * xp.sC;
        T* os = on + c0 * op.sC;
        const int64_t xK = sp.sK, iK = xp.sK, oK = op.sK;
        for (int64_t i = 0; i < S; ++i) {
          const int64_t v = is[i * iK];
          if (C10_UNLIKELY(out_of_range(v, oS))) {
            first_bad = std::min(first_bad, (n * C + c0) * S + i);
            continue;
          }
          os[v * oK] = xs[i * xK];
        }
      } else {
        const T* xn = x + n * sp.sN;
        const int64_t* in = ix + n * xp.sN;
        for (int64_t i = 0; i < S; ++i) {
          for (int64_t c = c0; c < c1; ++c) {
            const int64_t v = in[c * xp.sC + i * xp.sK];
            if (C10_UNLIKELY(out_of_range(v, oS))) {
              first_bad = std::min(first_bad, (n * C + c) * S + i);
              continue;
            }
            on[c * op.sC + v * op.sK] = xn[c * sp.sC + i * sp.sK];
          }
        }
      }
    }
    if (first_bad != kNone) bad.note(first_bad);
  });
}

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self_, const at::Tensor& indices,
                  c10::SymIntArrayRef output_size, at::IntArrayRef, at::IntArrayRef) {
  const MemoryFormat fmt = p.result.format;
  const at::Tensor self = flattenable(self_, fmt);
  unpool(kForward, self, indices, output_size, fmt, self.scalar_type(),
         [&](auto tag, const Geometry& g, const int64_t* ix, Planes xp, FirstBad& bad) {
           using T = decltype(tag);
           scatter_kernel<T>(static_cast<const T*>(self.const_data_ptr()), planes_of(self), ix, xp,
                             static_cast<T*>(out.mutable_data_ptr()), planes_of(out), g, bad);
         });
}

// ---------------------------------------------------------------------------
// Backward

// Positions [from, to) of one plane, each index checked: an out-of-range
// one is noted (at logical position pos0 + i) and its element zeroed.
template <typename T>
void gather_checked(const T* gs, int64_t gK, const int64_t* is, int64_t iK, T* os, int64_t from, int64_t to,
                    int64_t oS, int64_t pos0, int64_t& first_bad) {
  for (int64_t i = from; i < to; ++i) {
    const int64_t v = is[i * iK];
    if (C10_UNLIKELY(out_of_range(v, oS))) {
      first_bad = std::min(first_bad, pos0 + i);
      os[i] = T(0);
      continue;
    }
    os[i] = gs[v * gK];
  }
}

// Dense planes: check a block of indices with one branch-free reduction,
// then gather it without per-element branches (the compiler vectorises both
// loops); a block holding a bad index goes through gather_checked.
template <typename T>
void gather_dense(const T* gs, const int64_t* is, T* os, int64_t from, int64_t to, int64_t oS, int64_t pos0,
                  int64_t& first_bad) {
  constexpr int64_t kBlock = 256;
  int64_t i = from;
  for (; i + kBlock <= to; i += kBlock) {
    const int64_t* blk = is + i;
    uint64_t hi = 0;
    for (int64_t k = 0; k < kBlock; ++k) hi = std::max(hi, static_cast<uint64_t>(blk[k]));
    if (C10_UNLIKELY(hi >= static_cast<uint64_t>(oS))) {
      gather_checked(gs, 1, is, 1, os, i, i + kBlock, oS, pos0, first_bad);
      continue;
    }
    T* dst = os + i;
    for (int64_t k = 0; k < kBlock; ++k) dst[k] = gs[blk[k]];
  }
  gather_checked(gs, 1, is, 1, os, i, to, oS, pos0, first_bad);
}

#if defined(CPU_CAPABILITY_AVX512)
// 2x2x2 windows (the indices of a stride-2 max pooling): element (d, h, w) of
// a plane almost always takes its value from the window whose corner is
// (2d, 2h, 2w) of the output, i.e. from two adjacent elements in each of four
// rows of grad_output: rows 2h and 2h+1 of planes 2d and 2d+1. For 16
// elements of a row those are 32 consecutive values of each of the four rows:
// reading them in order and picking each element's value with a permute
// streams grad_output instead of gathering it an element at a time.
// 2-byte elements (half, bfloat16, int16) take runs of 32 elements: one
// 16-bit permute of 64 values per row (gather_window_run16).
// Only for 4- and 2-byte elements, outputs at least twice the input in every
// axis (so every row read is inside grad_output), rows of at least one run,
// and planes addressable in int32.
bool windows_apply(const Geometry& g, size_t element_size) {
  const int64_t run = element_size == 4 ? 16 : 32;
  return (element_size == 4 || element_size == 2) && g.oD >= 2 * g.D && g.oH >= 2 * g.H && g.oW >= 2 * g.W &&
         g.W >= run && g.oS <= std::numeric_limits<int32_t>::max() / 2;
}

// The offsets of the indices ix[0..16) from `corner`, saturated to int32 (a
// far index saturates, which matches no window).
C10_ALWAYS_INLINE __m512i window_offsets(const int64_t* ix, const __m512i& corner) {
  const __m256i lo = _mm512_cvtsepi64_epi32(_mm512_sub_epi64(_mm512_loadu_si512(ix), corner));
  const __m256i hi = _mm512_cvtsepi64_epi32(_mm512_sub_epi64(_mm512_loadu_si512(ix + 8), corner));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// Elements w0 .. w0+16V-1 of one row: go points at grad_output's plane,
// `corner` is the flat position of element w0's window corner (element
// w0+j's is corner + 2j). Writes dst[0..16V) and returns true when every index
// lies in its window (and so in [0, oS)); otherwise writes nothing and returns
// false. Each of the four rows is read in order, 2V vectors.
template <int V>
inline bool gather_window_run(const uint32_t* go, int64_t corner, int64_t oW, int64_t oHW, const int64_t* ix,
                             uint32_t* dst) {
  const __m512i c = _mm512_set1_epi64(corner);
  const __m512i lane2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i two = _mm512_set1_epi32(2);
  // The offset of each index from its vector's first corner, saturated to
  // int32 (a far index saturates, which matches no window).
  __m512i off[V], out[V];
  __mmask16 found[V];
  for (int v = 0; v < V; ++v) {
    off[v] = window_offsets(ix + 16 * v, _mm512_add_epi64(c, _mm512_set1_epi64(32 * v)));
    out[v] = _mm512_setzero_si512();
    found[v] = 0;
  }
  const int64_t rows[4] = {0, oW, oHW, oHW + oW};
  for (const int64_t r : rows) {
    const uint32_t* row = go + corner + r;
    __m512i vals[2 * V];
    for (int k = 0; k < 2 * V; ++k) vals[k] = _mm512_loadu_si512(row + 16 * k);
    const __m512i rv = _mm512_set1_epi32(static_cast<int32_t>(r));
    for (int v = 0; v < V; ++v) {
      // idx = 2j + (column within the window) for lanes whose index is in row r.
      const __m512i idx = _mm512_sub_epi32(off[v], rv);
      const __mmask16 in_row = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(idx, lane2), two);
      out[v] = _mm512_mask_mov_epi32(out[v], in_row, _mm512_permutex2var_epi32(vals[2 * v], idx, vals[2 * v + 1]));
      found[v] |= in_row;
    }
  }
  for (int v = 0; v < V; ++v) {
    if (found[v] != 0xFFFF) return false;
  }
  for (int v = 0; v < V; ++v) _mm512_storeu_si512(dst + 16 * v, out[v]);
  return true;
}

// gather_window_run for 2-byte elements, 32 at a time: each row's 64 values
// are two vectors, and one two-source 16-bit permute picks all 32 elements'
// values. The window tests run on the int32 offsets as above (16 lanes per
// half), and the in-row offsets, all below 64, are narrowed to 16 bits for
// the permute.
inline bool gather_window_run16(const uint16_t* go, int64_t corner, int64_t oW, int64_t oHW, const int64_t* ix,
                                uint16_t* dst) {
  const __m512i c = _mm512_set1_epi64(corner);
  const __m512i lane2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i lane2_hi = _mm512_add_epi32(lane2, _mm512_set1_epi32(32));
  const __m512i two = _mm512_set1_epi32(2);
  const __m512i off0 = window_offsets(ix, c), off1 = window_offsets(ix + 16, c);  // both from element 0's corner
  __m512i out = _mm512_setzero_si512();
  __mmask32 found = 0;
  const int64_t rows[4] = {0, oW, oHW, oHW + oW};
  for (const int64_t r : rows) {
    const uint16_t* row = go + corner + r;
    const __m512i a = _mm512_loadu_si512(row), b = _mm512_loadu_si512(row + 32);
    const __m512i rv = _mm512_set1_epi32(static_cast<int32_t>(r));
    const __m512i idx0 = _mm512_sub_epi32(off0, rv), idx1 = _mm512_sub_epi32(off1, rv);
    const __mmask16 in0 = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(idx0, lane2), two);
    const __mmask16 in1 = _mm512_cmplt_epu32_mask(_mm512_sub_epi32(idx1, lane2_hi), two);
    const __mmask32 in_row = _mm512_kunpackw(in1, in0);
    const __m512i idx = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(idx0)),
                                           _mm512_cvtepi32_epi16(idx1), 1);
    out = _mm512_mask_mov_epi16(out, in_row, _mm512_permutex2var_epi16(a, idx, b));
    found |= in_row;
  }
  if (found != 0xFFFFFFFFu) return false;
  _mm512_storeu_si512(dst, out);
  return true;
}

// Positions [from, to) of one dense plane through the window runs, row by
// row (4-byte elements: 32 then 16 at a time; 2-byte: 32 at a time); a row's
// last elements and any run with an index outside its window go through
// gather_checked.
template <typename T>
void gather_windows(const T* gs, const int64_t* is, T* os, int64_t from, int64_t to, const Geometry& g, int64_t pos0,
                    int64_t& first_bad) {
  static_assert(std::is_same_v<T, uint32_t> || std::is_same_v<T, uint16_t>);
  const int64_t oHW = g.oH * g.oW;
  // Elements i .. i+n-1 through `run` (element i's window corner is
  // corner0 + 2i), or through gather_checked when it declines.
  const auto runs = [&](int64_t& i, int64_t end, int64_t corner0, int64_t n, auto run) {
    for (; i + n <= end; i += n) {
      if (C10_UNLIKELY(!run(gs, corner0 + 2 * i, g.oW, oHW, is + i, os + i))) {
        gather_checked(gs, 1, is, 1, os, i, i + n, g.oS, pos0, first_bad);
      }
    }
  };
  for (int64_t i = from; i < to;) {
    const int64_t row = i / g.W, end = std::min(to, (row + 1) * g.W);
    const int64_t d = row / g.H, h = row % g.H;
    const int64_t corner0 = (2 * d * g.oH + 2 * h) * g.oW - 2 * row * g.W;
    if constexpr (sizeof(T) == 4) {
      runs(i, end, corner0, 32, gather_window_run<2>);
      runs(i, end, corner0, 16, gather_window_run<1>);
    } else {
      runs(i, end, corner0, 32, gather_window_run16);
    }
    gather_checked(gs, 1, is, 1, os, i, end, g.oS, pos0, first_bad);
    i = end;
  }
}
#endif

// Positions [i0, i1) of one plane: the element gather, checked (strided
// planes) or by blocks (dense ones), or the window runs where they apply.
template <typename T>
void gather_plane(const T* gs, int64_t gK, const int64_t* is, int64_t iK, T* os, int64_t i0, int64_t i1,
                  const Geometry& g, bool windows, int64_t pos0, int64_t& first_bad) {
  if (gK != 1 || iK != 1) return gather_checked(gs, gK, is, iK, os, i0, i1, g.oS, pos0, first_bad);
#if defined(CPU_CAPABILITY_AVX512)
  if constexpr (sizeof(T) == 4 || sizeof(T) == 2) {
    if (windows) return gather_windows(gs, is, os, i0, i1, g, pos0, first_bad);
  }
#endif
  gather_dense(gs, is, os, i0, i1, g.oS, pos0, first_bad);
}

// grad_input is dense in `fmt` (contiguous or channels_last_3d) and is
// written in memory order.
template <typename T>
void gather_kernel(const T* go, Planes gp, const int64_t* ix, Planes xp, T* out, MemoryFormat fmt,
                   const Geometry& g, FirstBad& bad) {
  const int64_t N = g.N, C = g.C, S = g.S, oS = g.oS;
  const int64_t total = N * C * S;
  if (fmt == MemoryFormat::Contiguous) {
#if defined(CPU_CAPABILITY_AVX512)
    const bool windows = windows_apply(g, sizeof(T));
#else
    const bool windows = false;
#endif
    // Element p is (nc = p / S, i = p % S).
    at::parallel_for(0, total, kGrainSize, [&](int64_t b, int64_t e) {
      int64_t first_bad = kNone;
      for (int64_t p = b; p < e;) {
        const int64_t nc = p / S, i0 = p % S, i1 = std::min(S, i0 + (e - p));
        const int64_t n = nc / C, c = nc % C;
        gather_plane(go + n * gp.sN + c * gp.sC, gp.sK, ix + n * xp.sN + c * xp.sC, xp.sK, out + nc * S, i0, i1, g,
                     windows, nc * S, first_bad);
        p += i1 - i0;
      }
      if (first_bad != kNone) bad.note(first_bad);
    });
  } else {
    // channels_last_3d: element p is (n, i, c) with c fastest.
    at::parallel_for(0, total, kGrainSize, [&](int64_t b, int64_t e) {
      int64_t first_bad = kNone;
      for (int64_t p = b; p < e;) {
        const int64_t ni = p / C, c0 = p % C, c1 = std::min(C, c0 + (e - p));
        const int64_t n = ni / S, i = ni % S;
        const T* gn = go + n * gp.sN;
        const int64_t* ip = ix + n * xp.sN + i * xp.sK;
        T* op = out + ni * C;
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t v = ip[c * xp.sC];
          if (C10_UNLIKELY(out_of_range(v, oS))) {
            first_bad = std::min(first_bad, (n * C + c) * S + i);
            op[c] = T(0);
            continue;
          }
          op[c] = gn[c * gp.sC + v * gp.sK];
        }
        p += c1 - c0;
      }
      if (first_bad != kNone) bad.note(first_bad);
    });
  }
}

// grad_input: dense in the result's layout (contiguous for out=).
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output_, const at::Tensor& self,
                   const at::Tensor& indices, c10::SymIntArrayRef output_size, at::IntArrayRef, at::IntArrayRef) {
  const MemoryFormat fmt = p.result.format;
  TORCH_INTERNAL_ASSERT(grad_input.is_contiguous(fmt));
  const at::Tensor grad_output = flattenable(grad_output_, fmt);
  unpool(kBackward, self, indices, output_size, fmt, grad_output.scalar_type(),
         [&](auto tag, const Geometry& g, const int64_t* ix, Planes xp, FirstBad& bad) {
           using T = decltype(tag);
           gather_kernel<T>(static_cast<const T*>(grad_output.const_data_ptr()), planes_of(grad_output), ix, xp,
                            static_cast<T*>(grad_input.mutable_data_ptr()), fmt, g, bad);
         });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  entry::impl<cpu::Backend, check_forward, forward_into>(m, "max_unpool3d");
  entry::impl<cpu::Backend, check_backward, backward_into>(m, "max_unpool3d_backward");
}

}  // namespace torch_aclnn::max_unpool
