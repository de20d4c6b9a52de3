// The per-element code of the MaxUnpool3d CUDA kernels and the host-side
// set-up of their launches (csrc/cuda/max_unpool.cu launches them). The
// element functions are C10_HOST_DEVICE; their only CUDA built-ins, the
// atomic min/max, have a sequential host form (max and min do not depend on
// the order they are applied in), so tests/test_cuda_host_*.py can
// run the very same code on the host and compare with the CPU kernels.
//
// Geometry (csrc/contracts/max_unpool.h, shared with the CPU kernels): a
// tensor of shape (N, [C,] D, H, W) is N x C planes of S = D*H*W elements
// (C = 1 for 4-D), element (n, c, k) at n*sN + c*sC + k*sK (cuda/planes.cuh);
// a tensor whose D, H, W axes do not flatten to one strided axis is copied
// once.
#pragma once

#include "contracts/max_unpool.h"
#include "cuda/index.cuh"
#include "cuda/planes.cuh"

#include <ATen/core/Tensor.h>
#include <c10/macros/Macros.h>

#include <cstdint>
#include <limits>

namespace torch_aclnn::max_unpool::kernels {

// Planes, their walks and the position flag (cuda/planes.cuh), Divider and
// Pack (cuda/index.cuh).
using namespace torch_aclnn::cuda;

// ---------------------------------------------------------------------------
// Atomics (device) and their sequential host forms.

C10_HOST_DEVICE inline void claim(int32_t* w, int32_t i) {
#if defined(__CUDA_ARCH__)
  atomicMax(w, i);
#else
  if (i > *w) *w = i;
#endif
}

C10_HOST_DEVICE inline void claim(int64_t* w, int64_t i) {
#if defined(__CUDA_ARCH__)
  atomicMax(reinterpret_cast<long long*>(w), static_cast<long long>(i));
#else
  if (i > *w) *w = i;
#endif
}

C10_HOST_DEVICE inline bool out_of_range(int64_t v, int64_t oS) {
  return static_cast<uint64_t>(v) >= static_cast<uint64_t>(oS);
}

// ---------------------------------------------------------------------------
// Forward: a scatter made deterministic in two passes.
//
// Pass 1 (claim), one thread per input element (n, c, i), walked in the
// indices' memory order: atomicMax(winner[n, c, v], i) with v = indices[n, c,
// i]; winner is laid out like the output and starts at -1. Afterwards every
// output element holds the largest input position that targets it -- the
// spec's "largest flat input position wins" -- whatever the order the
// threads ran in. An out-of-range v claims nothing and lowers the flag to
// its logical position (n*C + c)*S + i.
// Pass 2 (fill), one thread per output element in memory order:
// out = winner < 0 ? 0 : self[n, c, winner].

template <bool channels_last, typename W, typename index_t>
C10_HOST_DEVICE inline void claim_element(index_t p, const int64_t* __restrict__ ix, const Planes<index_t>& xp,
                                          W* __restrict__ winner, const Planes<index_t>& op, const Walk<index_t>& walk,
                                          int64_t C, int64_t S, int64_t oS, int64_t* flag) {
  index_t n, c, i;
  walk.template split<channels_last>(p, n, c, i);
  const int64_t v = ix[n * xp.sN + c * xp.sC + i * xp.sK];
  if (out_of_range(v, oS)) {
    note_bad(flag, (static_cast<int64_t>(n) * C + static_cast<int64_t>(c)) * S + static_cast<int64_t>(i));
    return;
  }
  claim(winner + (n * op.sN + c * op.sC + static_cast<index_t>(v) * op.sK), static_cast<W>(i));
}

// p: an output element's offset (the output and winner are dense in the
// walk's order).
template <bool channels_last, typename T, typename W, typename index_t>
C10_HOST_DEVICE inline void fill_element(index_t p, const T* __restrict__ x, const Planes<index_t>& sp,
                                         const W* __restrict__ winner, T* __restrict__ out,
                                         const Walk<index_t>& walk) {
  const W w = winner[p];
  if (w < 0) {
    out[p] = T(0);
    return;
  }
  index_t n, c, k;
  walk.template split<channels_last>(p, n, c, k);
  out[p] = x[n * sp.sN + c * sp.sC + static_cast<index_t>(w) * sp.sK];
}

// ---------------------------------------------------------------------------
// Forward in one pass, when every index lies in its own cell.
//
// When the output's D, H and W are whole multiples (fD, fH, fW) of the
// input's, the output is tiled by cells of fD x fH x fW elements, one per
// input element: input (d, h, w) owns output (d*fD + a, h*fH + b, w*fW + e).
// Max pooling with kernel_size == stride on sizes the stride divides gives
// indices that each point into their own cell. Then no two inputs target one
// output, and one pass that writes every cell (the input's value at its
// index, 0 elsewhere) is the whole result: exact, deterministic, with no
// zero-fill and no winner buffer to fill and read. One thread per input
// element, walked in the output's memory order, so neighbouring threads write
// neighbouring output elements. An index outside its cell (or outside the
// output) writes a cell of zeros and sets `miss` (an int64 word beside the
// index flag, kNone until then: one memset sets both); the two passes above
// then run and recompute every element (with the range check and its flag).
// They are always launched, but return at once while `miss` is kNone, so no
// host synchronisation decides between the two.

// The cell at most this many output elements (one thread writes them all).
constexpr int64_t kMaxCell = 64;

// Whether the output's D, H, W are multiples of the input's with a cell of
// at most kMaxCell elements.
inline bool has_cells(const Geometry& g) {
  return g.D > 0 && g.H > 0 && g.W > 0 && g.oD % g.D == 0 && g.oH % g.H == 0 && g.oW % g.W == 0 &&
         (g.oD / g.D) * (g.oH / g.H) * (g.oW / g.W) <= kMaxCell;
}

template <typename index_t>
struct Cells {
  Divider<index_t> H, W;       // the input's H and W: an input position i -> (d, h, w)
  index_t fD, fH, fW, oH, oW;  // the cell's sides and the output's H and W

  Cells() = default;
  explicit Cells(const Geometry& g)  // (has_cells(g))
      : H(static_cast<index_t>(g.H)), W(static_cast<index_t>(g.W)), fD(static_cast<index_t>(g.oD / g.D)),
        fH(static_cast<index_t>(g.oH / g.H)), fW(static_cast<index_t>(g.oW / g.W)), oH(static_cast<index_t>(g.oH)),
        oW(static_cast<index_t>(g.oW)) {}
};

// p: an input element in the output's walk order. `miss` may be set by
// several threads at once, all to 0.
template <bool channels_last, typename T, typename index_t>
C10_HOST_DEVICE inline void cell_element(index_t p, const T* __restrict__ x, const Planes<index_t>& sp,
                                         const int64_t* __restrict__ ix, const Planes<index_t>& xp,
                                         T* __restrict__ out, const Planes<index_t>& op, const Walk<index_t>& walk,
                                         const Cells<index_t>& cells, int64_t* miss) {
  index_t n, c, i;
  walk.template split<channels_last>(p, n, c, i);
  const auto dh_w = cells.W.divmod(i);
  const auto d_h = cells.H.divmod(dh_w.div);
  const int64_t v = ix[n * xp.sN + c * xp.sC + i * xp.sK];
  const T value = x[n * sp.sN + c * sp.sC + i * sp.sK];
  T* o = out + (n * op.sN + c * op.sC);
  const index_t first = (d_h.div * cells.fD * cells.oH + d_h.mod * cells.fH) * cells.oW + dh_w.mod * cells.fW;
  bool hit = false;
  for (index_t a = 0; a < cells.fD; ++a) {
    for (index_t b = 0; b < cells.fH; ++b) {
      const index_t row = first + (a * cells.oH + b) * cells.oW;
      for (index_t e = 0; e < cells.fW; ++e) {
        const bool here = static_cast<int64_t>(row + e) == v;
        hit = hit || here;
        o[(row + e) * op.sK] = here ? value : T(0);
      }
    }
  }
  if (!hit) *miss = 0;
}

// ---------------------------------------------------------------------------
// Backward: a gather, one thread per grad_input element in memory order.
// An out-of-range index is never read through: the element gets 0 and the
// flag its logical position.

template <bool channels_last, typename T, typename index_t>
C10_HOST_DEVICE inline void gather_element(index_t p, const T* __restrict__ go, const Planes<index_t>& gp,
                                           const int64_t* __restrict__ ix, const Planes<index_t>& xp,
                                           T* __restrict__ out, const Walk<index_t>& walk, int64_t C, int64_t S,
                                           int64_t oS, int64_t* flag) {
  index_t n, c, i;
  walk.template split<channels_last>(p, n, c, i);
  const int64_t v = ix[n * xp.sN + c * xp.sC + i * xp.sK];
  if (out_of_range(v, oS)) {
    out[p] = T(0);
    note_bad(flag, (static_cast<int64_t>(n) * C + static_cast<int64_t>(c)) * S + static_cast<int64_t>(i));
    return;
  }
  out[p] = go[n * gp.sN + c * gp.sC + static_cast<index_t>(v) * gp.sK];
}

// Backward, a pack per thread: V = kGatherPack<T> grad_input elements
// adjacent in memory (a run of a plane's positions, or channels_last a run of
// channels), their V indices read as whole 16-byte loads, their V gathers
// independent of each other (all in flight at once), and one store of the V
// results. Each element is gather_element's: an out-of-range index writes 0
// there and lowers the flag to its logical position (the smallest wins, as
// element by element). Where it applies: gather_packs.
template <typename T>
constexpr int kGatherPack = sizeof(T) >= 8 ? 2 : (sizeof(T) == 1 ? 8 : static_cast<int>(16 / sizeof(T)));

template <typename T>
using GatherPack = torch_aclnn::cuda::Pack<T, kGatherPack<T>>;
using IndexPair = torch_aclnn::cuda::Pack<int64_t, 2>;

// Whether the backward takes gather_pack: the walk's fastest axis (a plane's
// positions, or channels_last the channels) a multiple of V long, the indices
// dense along it with every pack's V indices 16-byte aligned (the other plane
// strides multiples of V, the pointer aligned), and grad_input's pointer
// aligned to a pack. grad_input is dense in the walk's order (the launch
// makes it so); grad_output is read element by element through its strides.
template <typename T>
inline bool gather_packs(const Geometry& g, const at::Tensor& grad_input, const at::Tensor& indices,
                         bool channels_last) {
  constexpr int64_t V = kGatherPack<T>;
  const Planes<int64_t> xp = planes_of<int64_t>(indices);
  const int64_t run = channels_last ? g.C : g.S;
  const int64_t along = channels_last ? xp.sC : xp.sK;
  const int64_t other = channels_last ? xp.sK : xp.sC;
  const int64_t others = channels_last ? g.S : g.C;  // (an axis of length 1 is never stepped along)
  return run % V == 0 && along == 1 && (g.N == 1 || xp.sN % V == 0) && (others == 1 || other % V == 0) &&
         aligned(indices.const_data_ptr(), 16) &&
         aligned(grad_input.const_data_ptr(), sizeof(GatherPack<T>));
}

// q: a pack of grad_input, its first element q*V in memory order.
template <bool channels_last, typename T, typename index_t>
C10_HOST_DEVICE inline void gather_pack(index_t q, const T* __restrict__ go, const Planes<index_t>& gp,
                                        const int64_t* __restrict__ ix, const Planes<index_t>& xp,
                                        T* __restrict__ out, const Walk<index_t>& walk, int64_t C, int64_t S,
                                        int64_t oS, int64_t* flag) {
  constexpr int V = kGatherPack<T>;
  index_t n, c, i;
  walk.template split<channels_last>(q * static_cast<index_t>(V), n, c, i);
  const auto* pairs = as_pack<const IndexPair>(ix + (n * xp.sN + c * xp.sC + i * xp.sK));
  int64_t v[V];
#pragma unroll
  for (int j = 0; j < V / 2; ++j) {
    const IndexPair pair = pairs[j];
    v[2 * j] = pair.v[0];
    v[2 * j + 1] = pair.v[1];
  }
  GatherPack<T> result;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    // Element j: channel c + j (channels_last) or position i + j.
    const index_t cj = channels_last ? c + static_cast<index_t>(j) : c;
    const index_t ij = channels_last ? i : i + static_cast<index_t>(j);
    if (out_of_range(v[j], oS)) {
      result.v[j] = T(0);
      note_bad(flag, (static_cast<int64_t>(n) * C + static_cast<int64_t>(cj)) * S + static_cast<int64_t>(ij));
    } else {
      result.v[j] = go[n * gp.sN + cj * gp.sC + static_cast<index_t>(v[j]) * gp.sK];
    }
  }
  *as_pack<GatherPack<T>>(out + q * static_cast<index_t>(V)) = result;
}

}  // namespace torch_aclnn::max_unpool::kernels
