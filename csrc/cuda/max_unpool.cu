// CUDA kernels of the MaxUnpool3d family (docs/spec.md §5).
//
// Same contract (csrc/contracts/max_unpool.h), geometry, result layouts and
// out= rules as the CPU kernels in csrc/cpu/max_unpool.cpp. Both operators
// only move elements, so they dispatch on the element size (1, 2, 4 or 8
// bytes) and copy bits: every dtype is exact. The per-element code is in
// csrc/cuda/max_unpool.cuh.
//
// Forward (scatter), deterministic: duplicate indices resolve to the largest
// flat input position, as the spec requires, in two passes (claim: an
// atomicMax of the input position into a winner buffer laid out like the
// output; fill: each output element copies its winner's value or writes 0).
// atomicMax is order-independent, so the result is the same on every run,
// unlike aten's CUDA scatter (last writer wins, in whatever order the
// threads run). Cost over a plain scatter: the winner buffer (4 bytes per
// output element, 8 when a plane has 2^31 or more elements) written once by
// a fill, once by the claims, read once by the fill pass.
// Where the output's D, H, W are multiples of the input's and the stride is
// that multiple with no padding (an unpooling after kernel_size == stride
// pooling), one pass comes first: each input element writes its own cell of
// the output, and the two passes run only if an index lies outside its cell
// (max_unpool.cuh, cell_element). That pass reads the input and the indices
// once and writes the output once, with no zero-fill: less traffic than
// aten's zero-fill and scatter. When an index misses, the call costs that
// pass on top of the two (whose three launches are made either way, and
// return at once when nothing missed; the winner buffer is allocated either
// way).
//
// Backward (gather), one thread per grad_input element in memory order, or,
// where the indices are dense along grad_input's fastest axis and aligned
// (max_unpool.cuh, gather_packs), one per pack of 2-8 adjacent elements: whole
// 16-byte loads of the indices, the pack's gathers all in flight, one store.
//
// Index check (row 15): every index is range-checked on the device before it
// is used; an out-of-range index is never read through or written through
// (the backward writes 0 there). The smallest logical position of an
// out-of-range index is kept in a device flag (atomicMin, so the same
// position is reported on every run) and handed to the deferred checks
// (cuda/flag.cuh, common/deferred.h): no synchronisation; the spec's
// IndexError, naming the value and its position as on CPU, is raised by a
// later torch_aclnn call or torch_aclnn.check_index_errors(), or at this call
// in synchronous mode. During CUDA graph capture the flag is not read:
// out-of-range indices still read and write nothing, but raise no error.
#include "cuda/flag.cuh"
#include "cuda/launch.cuh"
#include "cuda/max_unpool.cuh"

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <limits>
#include <type_traits>
#include <vector>

namespace torch_aclnn::max_unpool {
namespace {

using c10::MemoryFormat;
using cuda::kThreads;
using cuda::with_bool;
using kernels::channels_fastest;
using kernels::kNone;
using kernels::Planes;
using kernels::Walk;

// ---------------------------------------------------------------------------
// Kernels

// The two-pass forward's kernels run only if `miss` is null (no cell pass) or
// set (the cell pass met an index outside its cell).
__device__ inline bool skipped(const int64_t* miss) { return miss != nullptr && *miss == kNone; }

template <bool channels_last, typename T, typename index_t>
__global__ void __launch_bounds__(kThreads)
cell_kernel(index_t total, const T* __restrict__ x, Planes<index_t> sp, const int64_t* __restrict__ ix,
            Planes<index_t> xp, T* __restrict__ out, Planes<index_t> op, Walk<index_t> walk,
            kernels::Cells<index_t> cells, int64_t* miss) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    kernels::cell_element<channels_last>(p, x, sp, ix, xp, out, op, walk, cells, miss);
  }
}

template <typename W, typename index_t>
__global__ void __launch_bounds__(kThreads)
unclaimed_kernel(index_t total, W* __restrict__ winner, const int64_t* miss) {
  if (skipped(miss)) return;
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) { winner[p] = W(-1); }
}

template <bool channels_last, typename W, typename index_t>
__global__ void __launch_bounds__(kThreads)
claim_kernel(index_t total, const int64_t* __restrict__ ix, Planes<index_t> xp, W* __restrict__ winner,
             Planes<index_t> op, Walk<index_t> walk, int64_t C, int64_t S, int64_t oS, int64_t* flag,
             const int64_t* miss) {
  if (skipped(miss)) return;
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    kernels::claim_element<channels_last>(p, ix, xp, winner, op, walk, C, S, oS, flag);
  }
}

template <bool channels_last, typename T, typename W, typename index_t>
__global__ void __launch_bounds__(kThreads)
fill_kernel(index_t total, const T* __restrict__ x, Planes<index_t> sp, const W* __restrict__ winner,
            T* __restrict__ out, Walk<index_t> walk, const int64_t* miss) {
  if (skipped(miss)) return;
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    kernels::fill_element<channels_last>(p, x, sp, winner, out, walk);
  }
}

// One thread per grad_input element, or per pack of them (packed).
template <bool channels_last, bool packed, typename T, typename index_t>
__global__ void __launch_bounds__(kThreads)
gather_kernel(index_t total, const T* __restrict__ go, Planes<index_t> gp, const int64_t* __restrict__ ix,
              Planes<index_t> xp, T* __restrict__ out, Walk<index_t> walk, int64_t C, int64_t S, int64_t oS,
              int64_t* flag) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    if constexpr (packed) {
      kernels::gather_pack<channels_last>(p, go, gp, ix, xp, out, walk, C, S, oS, flag);
    } else {
      kernels::gather_element<channels_last>(p, go, gp, ix, xp, out, walk, C, S, oS, flag);
    }
  }
}

// ---------------------------------------------------------------------------
// Host side


// Row 15: the deferred check of the flag (cuda/flag.cuh); a bad position
// raises the IndexError the CPU kernels raise, naming the value and its
// position.
void check_flag(const char* op, const at::Tensor& flag, const Geometry& g, const at::Tensor& indices,
                at::IntArrayRef output_size_, cudaStream_t stream) {
  cuda::flag::finish(op, flag, stream, [op, g, indices, output_size = output_size_.vec()](int64_t pos, bool later) {
    const int64_t n = pos / (g.C * g.S), c = (pos / g.S) % g.C, i = pos % g.S;
    const int64_t value = cuda::flag::value_at(indices, n, c, i);
    std::vector<int64_t> where = {n};
    if (g.five) where.push_back(c);
    where.insert(where.end(), {i / (g.H * g.W), (i / g.W) % g.H, i % g.W});
    ACLNN_CHECK_INDEX(false, deferred::op_name(op, later), "indices", fmt_list(where), " = ", value,
                      " is outside [0, ", g.oS, "), the flattened output_size ", fmt_list(output_size));
  });
}

// Whether the one-pass forward runs first: the geometry has cells, and they
// are the windows of the pooling the indices come from (a stride equal to the
// cell's sides, no padding: a kernel_size == stride pooling). Elsewhere most
// indices would miss their cell, and the pass would only add a launch before
// the two passes.
bool cells_are_windows(const Geometry& g, at::IntArrayRef stride, at::IntArrayRef padding) {
  return kernels::has_cells(g) && stride[0] == g.oD / g.D && stride[1] == g.oH / g.H && stride[2] == g.oW / g.W &&
         padding[0] == 0 && padding[1] == 0 && padding[2] == 0;
}

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self_, const at::Tensor& indices_,
                  c10::SymIntArrayRef output_size_, at::IntArrayRef stride, at::IntArrayRef padding) {
  const auto output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  const MemoryFormat fmt = p.result.format;
  const at::Tensor self = flattenable(self_, fmt);
  const at::Tensor indices = flattenable(indices_, fmt);
  const Geometry g = geometry(self, output_size);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const bool out_cl = fmt == MemoryFormat::ChannelsLast3d;
  const bool ix_cl = channels_fastest(indices, g);
  // Positions within a plane fit int32 unless a plane has 2^31 elements.
  const bool narrow = g.S <= std::numeric_limits<int32_t>::max();
  at::Tensor winner = at::empty(out.sizes(), out.options().dtype(narrow ? at::kInt : at::kLong).memory_format(fmt));
  // The one-pass forward where the geometry has cells; its `miss` word (the
  // flag's second) tells the two passes whether to run.
  const bool one_pass = cells_are_windows(g, stride, padding);
  at::Tensor flag = cuda::flag::make(out, stream, one_pass ? 2 : 1);
  int64_t* miss = one_pass ? flag.mutable_data_ptr<int64_t>() + 1 : nullptr;
  cuda::with_index_type(cuda::fits_32bit({&self, &indices, &out}), [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const auto xp = kernels::planes_of<index_t>(indices);
    const auto op = kernels::planes_of<index_t>(out);
    const auto sp = kernels::planes_of<index_t>(self);
    const index_t in_total = static_cast<index_t>(indices.numel());
    const index_t out_total = static_cast<index_t>(out.numel());
    if (one_pass) {
      dispatch_by_size(self.scalar_type(), [&](auto tag) {
        using T = decltype(tag);
        with_bool(out_cl, [&](auto cl) {
          cell_kernel<decltype(cl)::value><<<cuda::blocks_for(in_total), kThreads, 0, stream>>>(
              in_total, static_cast<const T*>(self.const_data_ptr()), sp, indices.const_data_ptr<int64_t>(), xp,
              static_cast<T*>(out.mutable_data_ptr()), op, Walk<index_t>(g.S, g.C), kernels::Cells<index_t>(g),
              miss);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
      });
    }
    const auto launch = [&](auto w_tag) {
      using W = decltype(w_tag);
      W* wp = winner.mutable_data_ptr<W>();
      unclaimed_kernel<<<cuda::blocks_for(out_total), kThreads, 0, stream>>>(out_total, wp, miss);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      with_bool(ix_cl, [&](auto cl) {
        claim_kernel<decltype(cl)::value><<<cuda::blocks_for(in_total), kThreads, 0, stream>>>(
            in_total, indices.const_data_ptr<int64_t>(), xp, wp, op, Walk<index_t>(g.S, g.C), g.C, g.S, g.oS,
            flag.mutable_data_ptr<int64_t>(), miss);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
      dispatch_by_size(self.scalar_type(), [&](auto tag) {
        using T = decltype(tag);
        with_bool(out_cl, [&](auto cl) {
          fill_kernel<decltype(cl)::value><<<cuda::blocks_for(out_total), kThreads, 0, stream>>>(
              out_total, static_cast<const T*>(self.const_data_ptr()), sp, static_cast<const W*>(wp),
              static_cast<T*>(out.mutable_data_ptr()), Walk<index_t>(g.oS, g.C), miss);
          C10_CUDA_KERNEL_LAUNCH_CHECK();
        });
      });
    };
    if (narrow) {
      launch(int32_t{});
    } else {
      launch(int64_t{});
    }
  });
  check_flag(kForward, flag, g, indices, output_size, stream);
}

// grad_input is dense in the result's layout (contiguous for out=) and shares
// no memory with grad_output or indices.
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output_, const at::Tensor& self,
                   const at::Tensor& indices_, c10::SymIntArrayRef output_size_, at::IntArrayRef, at::IntArrayRef) {
  const auto output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  const MemoryFormat fmt = p.result.format;
  TORCH_INTERNAL_ASSERT(grad_input.is_contiguous(fmt));
  const at::Tensor grad_output = flattenable(grad_output_, fmt);
  const at::Tensor indices = flattenable(indices_, fmt);
  const Geometry g = geometry(self, output_size);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const bool cl = fmt == MemoryFormat::ChannelsLast3d && g.five;
  at::Tensor flag = cuda::flag::make(grad_input, stream);
  cuda::with_index_type(cuda::fits_32bit({&grad_output, &indices, &grad_input}), [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const index_t total = static_cast<index_t>(grad_input.numel());
    dispatch_by_size(grad_output.scalar_type(), [&](auto tag) {
      using T = decltype(tag);
      const bool packs = kernels::gather_packs<T>(g, grad_input, indices, cl);
      const index_t units = packs ? total / kernels::kGatherPack<T> : total;
      with_bool(cl, [&](auto c) {
        auto kernel = packs ? gather_kernel<decltype(c)::value, true, T, index_t>
                            : gather_kernel<decltype(c)::value, false, T, index_t>;
        kernel<<<cuda::blocks_for(units), kThreads, 0, stream>>>(
            units, static_cast<const T*>(grad_output.const_data_ptr()), kernels::planes_of<index_t>(grad_output),
            indices.const_data_ptr<int64_t>(), kernels::planes_of<index_t>(indices),
            static_cast<T*>(grad_input.mutable_data_ptr()), Walk<index_t>(g.S, g.C), g.C, g.S, g.oS,
            flag.mutable_data_ptr<int64_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
    });
  });
  check_flag(kBackward, flag, g, indices, output_size, stream);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  entry::impl<cuda::Backend, check_forward, forward_into>(m, "max_unpool3d");
  entry::impl<cuda::Backend, check_backward, backward_into>(m, "max_unpool3d_backward");
}

}  // namespace torch_aclnn::max_unpool
