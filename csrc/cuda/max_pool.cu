// CUDA kernels of the MaxPool3d family (docs/spec.md §9):
// max_pool3d_with_indices and max_pool3d_with_indices_backward.
//
// Same contract (csrc/contracts/max_pool.h), geometry, result layouts and
// out= rules as the CPU kernels in csrc/cpu/max_pool.cpp. The per-element
// code is in csrc/cuda/max_pool.cuh.
//
// Forward, one thread per pooled element (n, c, od, oh, ow), in the
// result's memory order (contiguous: o fastest; channels_last_3d: c
// fastest): the contract's window_max over the element's window of self
// (read in place when self's D, H, W axes flatten, else from one copy in the
// result's format), in the opmath type (float32 for float16/bfloat16,
// exact), the CPU kernel's element rule: the maximum of the taps inside
// self in increasing (d, h, w) order, a NaN winning over any number and a
// later NaN over an earlier one, the first tap where nothing exceeds -inf.
// The winning element itself (copied, so NaN payloads too are kept) and its
// flat (D, H, W) index (int64) go to the same offset of result and indices,
// each written once: no atomics, the same bits on every run, and the CPU
// kernel's.
// Memory traffic: each tap of self is read by every window that covers it
// (up to kD*kH*kW neighbouring threads: the caches absorb it); each result
// and index is written once.
//
// Backward, a gather, deterministic, no atomics on values: one thread per
// grad_input element (n, c, d, h, w), in grad_input's memory order, visits
// the pooled positions whose windows cover (d, h, w) (per axis the range
// [ceil((x + pad - (kernel-1)*dilation) / stride), floor((x + pad) / stride)],
// keeping the taps the dilation aligns) in increasing (od, oh, ow) order and
// adds grad_output[n][c][o] wherever indices[n][c][o] is that element's flat
// position, in the opmath type (float32 for float16/bfloat16), written once.
// Those are the CPU kernel's scatter's terms in the CPU kernel's order
// (increasing o), so both give the same bits for every dtype, on every run,
// unlike aten's CUDA scatter (atomicAdd in whatever order the threads run).
// Contract row 12 (every index is a position of its own window) is what
// makes the gather complete: an index a window cannot have produced would be
// missed by the gather, and is refused instead. Memory traffic: indices[n][c][o]
// is read by each grad_input thread its window covers (up to kD*kH*kW,
// neighbouring threads: the caches absorb it), grad_output[n][c][o] only
// by the one its index names, and each grad_input element is written once
// (no zero-fill pass).
//
// Index check (row 12): a second kernel, one thread per pooled element,
// checks every index against its own window before the result is handed
// back: one extra read of indices. The smallest logical position
// (n*C + c)*oS + o of a bad index is kept in a device flag (atomicMin, so
// the same position is reported on every run, the one the CPU kernel
// reports) and handed to the deferred checks (cuda/flag.cuh,
// common/deferred.h): no synchronisation; the IndexError (contracts/max_pool.h:
// fail_not_in_window, naming the value, its position and its window) is raised
// by a later torch_aclnn call or torch_aclnn.check_index_errors(), or at this
// call in synchronous mode. A bad index is never read through or written
// through. During CUDA graph capture the flag is not read: bad indices still
// read and write nothing out of bounds, but raise no error.
//
// 32- or 64-bit index math (cuda/index.cuh), per call for both operators:
// 32-bit (fast division by invariant integers for the coordinates, strides
// and dilations) when the tensors fit and the window arithmetic does
// (max_pool.cuh: window_fits_32bit, and for the forward's signed window_max
// forward_fits_32bit), else 64-bit.
#include "cuda/flag.cuh"
#include "cuda/launch.cuh"
#include "cuda/max_pool.cuh"

#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <vector>

namespace torch_aclnn::max_pool {
namespace {

using cuda::kThreads;
using cuda::with_bool;
using kernels::kNone;
using kernels::Planes;
using kernels::Pool;
using kernels::Walk;
using kernels::Windows;

// ---------------------------------------------------------------------------
// Kernels

template <bool channels_last, typename T, typename index_t>
__global__ void __launch_bounds__(kThreads)
forward_kernel(index_t total, const T* __restrict__ x, Planes<index_t> sp, T* __restrict__ out,
               int64_t* __restrict__ ix, Planes<index_t> op, Walk<index_t> walk, Windows<index_t> win) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    kernels::max_element<channels_last>(p, x, sp, out, ix, op, walk, win);
  }
}

template <bool channels_last, typename I, typename index_t>
__global__ void __launch_bounds__(kThreads)
check_kernel(index_t total, const I* __restrict__ ix, Planes<index_t> xp, Walk<index_t> walk, Pool<index_t> pool,
             int64_t* flag) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    kernels::check_element<channels_last>(p, ix, xp, walk, pool, flag);
  }
}

template <bool channels_last, typename T, typename I, typename index_t>
__global__ void __launch_bounds__(kThreads)
gather_kernel(index_t total, const T* __restrict__ go, Planes<index_t> gp, const I* __restrict__ ix,
              Planes<index_t> xp, T* __restrict__ out, Planes<index_t> op, Walk<index_t> walk, Pool<index_t> pool) {
  TORCH_ACLNN_GRID_STRIDE_LOOP(index_t, p, total) {
    kernels::gather_element<channels_last>(p, go, gp, ix, xp, out, op, walk, pool);
  }
}

// ---------------------------------------------------------------------------
// Host side



// Row 12: the deferred check of the flag (cuda/flag.cuh); a bad position
// raises the IndexError the CPU kernel raises, naming the value, its
// position and its window.
void check_flag(const at::Tensor& flag, const Geometry& g, const Window& w, const at::Tensor& indices,
                cudaStream_t stream) {
  cuda::flag::finish(kBackward, flag, stream, [g, w, indices](int64_t pos, bool later) {
    const int64_t n = pos / (g.C * g.oS), c = (pos / g.oS) % g.C, o = pos % g.oS;
    const int64_t value = cuda::flag::value_at(indices, n, c, o);
    fail_not_in_window(value, n, c, o, g.five, g.S, g.oH, g.oW, w, later);
  });
}

// result, indices: dense in the result's memory format (the same strides).
void forward_into(at::Tensor& result, at::Tensor& indices, const Plan2<Params>& p, const at::Tensor& self_,
                  at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, bool) {
  const kernels::ForwardLaunch l = kernels::forward_launch_of(result, indices, self_, p);
  const Geometry& g = l.g;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  cuda::with_index_type(l.narrow, [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const Windows<index_t> win(g, p.params.window);
    const auto sp = kernels::planes_of<index_t>(l.self);
    const auto op = kernels::planes_of<index_t>(result);
    const index_t total = static_cast<index_t>(result.numel());
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, l.self.scalar_type(), "max_pool3d_with_indices_cuda",
                                    [&] {
                                      with_bool(l.cl, [&](auto cl) {
                                        forward_kernel<decltype(cl)::value>
                                            <<<cuda::blocks_for(total), kThreads, 0, stream>>>(
                                                total, l.self.const_data_ptr<scalar_t>(), sp,
                                                result.mutable_data_ptr<scalar_t>(),
                                                indices.mutable_data_ptr<int64_t>(), op, Walk<index_t>(g.oS, g.C),
                                                win);
                                        C10_CUDA_KERNEL_LAUNCH_CHECK();
                                      });
                                    });
  });
}

// grad_input: dense in the result's memory format, or (out=) in the other
// 5-D one; it shares no memory with grad_output or indices.
void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output_, const at::Tensor& self,
                   const at::Tensor& indices_, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef, at::IntArrayRef,
                   bool) {
  const kernels::Launch l = kernels::launch_of(grad_input, grad_output_, self, indices_, p);
  const Geometry& g = l.g;
  const Window& w = p.params.window;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  at::Tensor flag = cuda::flag::make(grad_input, stream);
  cuda::with_index_type(l.narrow, [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const Pool<index_t> pool(g, w);
    const auto xp = kernels::planes_of<index_t>(l.indices);
    const auto gp = kernels::planes_of<index_t>(l.grad_output);
    const auto op = kernels::planes_of<index_t>(grad_input);
    const index_t checks = static_cast<index_t>(l.indices.numel());
    const index_t total = static_cast<index_t>(grad_input.numel());
    kernels::with_indices_type(l.indices.scalar_type(), [&](auto i_tag) {
      using I = decltype(i_tag);
      const I* ix = l.indices.const_data_ptr<I>();
      with_bool(l.check_cl, [&](auto cl) {
        check_kernel<decltype(cl)::value><<<cuda::blocks_for(checks), kThreads, 0, stream>>>(
            checks, ix, xp, Walk<index_t>(g.oS, g.C), pool, flag.mutable_data_ptr<int64_t>());
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
      AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, l.grad_output.scalar_type(),
                                      "max_pool3d_with_indices_backward_cuda", [&] {
                                        with_bool(l.gather_cl, [&](auto cl) {
                                          gather_kernel<decltype(cl)::value>
                                              <<<cuda::blocks_for(total), kThreads, 0, stream>>>(
                                                  total, l.grad_output.const_data_ptr<scalar_t>(), gp, ix, xp,
                                                  grad_input.mutable_data_ptr<scalar_t>(), op,
                                                  Walk<index_t>(g.S, g.C), pool);
                                          C10_CUDA_KERNEL_LAUNCH_CHECK();
                                        });
                                      });
    });
  });
  check_flag(flag, g, w, l.indices, stream);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  entry::impl<cuda::Backend, check_forward, forward_into>(m, "max_pool3d_with_indices");
  entry::impl<cuda::Backend, check_backward, backward_into>(m, "max_pool3d_with_indices_backward");
}

}  // namespace torch_aclnn::max_pool
