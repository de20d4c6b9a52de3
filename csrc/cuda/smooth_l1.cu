// CUDA kernels of the SmoothL1 family (docs/spec.md §4).
//
// Same contract (csrc/contracts/smooth_l1.h), promotion, result layout (a
// contiguous tensor of the broadcast shape, 0-dim for 'mean'/'sum') and out=
// rules as the CPU kernels in csrc/cpu/smooth_l1.cpp. Inputs are first
// brought to the promoted dtype (a no-op in the common same-dtype case).
//
// Elementwise ('none' loss, grad_input): csrc/cuda/elementwise.cuh (128-bit
// vector loads on dense operands, an offset calculator on broadcast/strided
// ones) running the functors of csrc/cuda/smooth_l1.cuh, which do the CPU
// kernels' operations in the same order: bitwise equal results.
//
// Reduction ('mean'/'sum'), deterministic, in two passes:
//   1. the broadcast elements, in the TensorIterator's order, are cut into
//      fixed chunks of kChunk elements; one block per chunk adds its opmath
//      losses in float64 (thread t takes elements t, t + 256, ... of the
//      chunk), then a fixed shared-memory tree adds the 256 thread sums;
//   2. one block adds the chunk sums the same way (thread t: chunks t,
//      t + 256, ...; then the tree), divides by the element count for 'mean'
//      and rounds once to the result dtype.
// The order depends only on the shapes and strides, never on the GPU, the
// grid or timing, so repeated runs give the same bits. (It is not the CPU
// kernels' order: CPU and CUDA may differ in the last bits of a float64
// reduction; float32/half/bfloat16 results round a float64 sum once.)
#include "cuda/elementwise.cuh"
#include "cuda/smooth_l1.cuh"

#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>
#include <c10/util/irange.h>
#include <torch/library.h>

#include <array>
#include <limits>

namespace torch_aclnn::smooth_l1 {
namespace {

using cuda::kThreads;
using kernels::Grad;
using kernels::Loss;
using kernels::LossNone;

// ---------------------------------------------------------------------------
// Reduction

constexpr int64_t kChunk = 4096;
static_assert(kThreads == 256, "the reduction tree assumes 256 threads");

// Element (byte) offsets of the two inputs of a dense iterator.
template <typename index_t>
struct DenseOffsets {
  index_t es;
  C10_HOST_DEVICE std::array<index_t, 2> get(index_t i) const { return {i * es, i * es}; }
};

// Adds the 256 per-thread sums of a block in a fixed tree; thread 0 gets it.
__device__ inline double block_sum(double s, double* shared) {
  shared[threadIdx.x] = s;
  __syncthreads();
#pragma unroll
  for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  return shared[0];
}

template <typename scalar_t, typename index_t, typename Offsets>
__global__ void __launch_bounds__(kThreads)
chunk_sums_kernel(index_t n, int64_t nchunks, const char* __restrict__ a, const char* __restrict__ b,
                  Offsets offsets, Loss<at::opmath_type<scalar_t>> f, double* __restrict__ partial) {
  using T = at::opmath_type<scalar_t>;
  __shared__ double shared[kThreads];
  for (int64_t chunk = blockIdx.x; chunk < nchunks; chunk += gridDim.x) {
    const index_t begin = static_cast<index_t>(chunk * kChunk);
    const index_t end = static_cast<index_t>(std::min<int64_t>(static_cast<int64_t>(n), (chunk + 1) * kChunk));
    double s = 0.0;
    for (index_t i = begin + threadIdx.x; i < end; i += kThreads) {
      const auto off = offsets.get(i);
      const T x = static_cast<T>(*reinterpret_cast<const scalar_t*>(a + off[0]));
      const T y = static_cast<T>(*reinterpret_cast<const scalar_t*>(b + off[1]));
      s += static_cast<double>(f(x, y));
    }
    const double total = block_sum(s, shared);
    if (threadIdx.x == 0) partial[chunk] = total;
    __syncthreads();  // shared is reused by the next chunk
  }
}

template <typename scalar_t>
__global__ void __launch_bounds__(kThreads)
final_sum_kernel(const double* __restrict__ partial, int64_t nchunks, double divisor, scalar_t* __restrict__ out) {
  __shared__ double shared[kThreads];
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < nchunks; c += kThreads) s += partial[c];
  const double total = block_sum(s, shared);
  // 'mean' of no elements is 0 / 0 = NaN, as in torch.
  if (threadIdx.x == 0) *out = static_cast<scalar_t>(total / divisor);
}

template <typename scalar_t, typename index_t, typename Offsets>
void launch_sum(const at::TensorIterator& iter, const Offsets& offsets, double beta, int64_t reduction,
                at::Tensor& out) {
  const int64_t n = iter.numel();
  const int64_t nchunks = (n + kChunk - 1) / kChunk;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  at::Tensor partial = at::empty({std::max<int64_t>(nchunks, 1)}, out.options().dtype(at::kDouble));
  using T = at::opmath_type<scalar_t>;
  if (nchunks > 0) {
    const auto blocks = static_cast<unsigned int>(std::min<int64_t>(nchunks, cuda::kMaxBlocks));
    chunk_sums_kernel<scalar_t, index_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<index_t>(n), nchunks, static_cast<const char*>(iter.data_ptr(0)),
        static_cast<const char*>(iter.data_ptr(1)), offsets, Loss<T>(beta), partial.mutable_data_ptr<double>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  const double divisor = reduction == kMean ? static_cast<double>(n) : 1.0;
  final_sum_kernel<scalar_t><<<1, kThreads, 0, stream>>>(partial.const_data_ptr<double>(), nchunks, divisor,
                                                          out.mutable_data_ptr<scalar_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// OffsetCalculator over the iterator's dims with byte strides, any index width.
template <typename index_t>
OffsetCalculator<2, index_t> strided_offsets(const at::TensorIterator& iter) {
  const std::array<const int64_t*, 2> strides = {iter.strides(0).data(), iter.strides(1).data()};
  return OffsetCalculator<2, index_t>(iter.ndim(), iter.shape().data(), strides.data());
}

// out: 0-dim, self's dtype.
void loss_reduced(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta, at::Tensor& out) {
  auto iter = at::TensorIteratorConfig().add_const_input(self).add_const_input(target).build();
  if (iter.numel() == 0) {
    // 'mean' of no elements is 0 / 0 = NaN, 'sum' is 0, as in torch. (No
    // launch: an OffsetCalculator over a size-0 dimension is not valid.)
    out.fill_(reduction == kMean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    return;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "smooth_l1_loss_cuda", [&] {
    const bool dense = iter.numel() > 0 && iter.ndim() == 1 && iter.strides(0)[0] == sizeof(scalar_t) &&
                       iter.strides(1)[0] == sizeof(scalar_t);
    if (iter.can_use_32bit_indexing()) {
      if (dense) {
        launch_sum<scalar_t, uint32_t>(iter, DenseOffsets<uint32_t>{sizeof(scalar_t)}, beta, reduction, out);
      } else {
        launch_sum<scalar_t, uint32_t>(iter, strided_offsets<uint32_t>(iter), beta, reduction, out);
      }
    } else if (dense) {
      launch_sum<scalar_t, uint64_t>(iter, DenseOffsets<uint64_t>{sizeof(scalar_t)}, beta, reduction, out);
    } else {
      launch_sum<scalar_t, uint64_t>(iter, strided_offsets<uint64_t>(iter), beta, reduction, out);
    }
  });
}

// ---------------------------------------------------------------------------
// Operators

// t in the promoted dtype on the call's device (the contract has checked the
// devices: only a 0-dim CPU input can be elsewhere).
at::Tensor prepare(const at::Tensor& t, at::ScalarType dtype, const c10::Device& device) {
  const at::Tensor d = on_device(t, device);
  return d.scalar_type() == dtype ? d : d.to(dtype);
}

void forward_into(at::Tensor& out, const Plan& p, const at::Tensor& self_, const at::Tensor& target_,
                  int64_t reduction, double beta) {
  const at::Tensor self = prepare(self_, p.result.dtype, p.result.device);
  const at::Tensor target = prepare(target_, p.result.dtype, p.result.device);
  if (reduction != kNone) return loss_reduced(self, target, reduction, beta, out);
  auto iter = at::TensorIteratorConfig().add_output(out).add_const_input(self).add_const_input(target).build();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "smooth_l1_loss_cuda", [&] {
    using T = at::opmath_type<scalar_t>;
    cuda::launch_elementwise<2, scalar_t>(iter, LossNone<scalar_t>{Loss<T>(beta)});
  });
}

void backward_into(at::Tensor& grad_input, const Plan& p, const at::Tensor& grad_output_, const at::Tensor& self_,
                   const at::Tensor& target_, int64_t reduction, double beta) {
  const at::ScalarType dtype = p.result.dtype;
  const c10::Device device = grad_input.device();
  const at::Tensor grad_output = prepare(grad_output_, dtype, device);
  const at::Tensor self = prepare(self_, dtype, device);
  const at::Tensor target = prepare(target_, dtype, device);
  // 'mean': the derivative of the mean over broadcast(self, target) (docs/spec.md §4;
  // not self.numel(), which aten uses).
  const double norm =
      reduction == kMean ? 1.0 / static_cast<double>(c10::multiply_integers(at::infer_size(self.sizes(), target.sizes())))
                         : 1.0;
  auto iter = at::TensorIteratorConfig()
                  .add_output(grad_input)
                  .add_const_input(grad_output)
                  .add_const_input(self)
                  .add_const_input(target)
                  .build();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "smooth_l1_loss_backward_cuda", [&] {
    cuda::launch_elementwise<3, scalar_t>(iter, Grad<scalar_t>(beta, norm));
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CUDA, m) {
  entry::impl<cuda::Backend, check_forward, forward_into>(m, "smooth_l1_loss");
  entry::impl<cuda::Backend, check_backward, backward_into>(m, "smooth_l1_loss_backward");
}

}  // namespace torch_aclnn::smooth_l1
