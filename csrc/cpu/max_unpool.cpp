// CPU kernels of the MaxUnpool3d family (spec §5).
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
// split over all elements of grad_input in memory order.
//
// Every index is range-checked before it is used (row 15): an index outside
// [0, oD*oH*oW) is never read through or written through; the first offending
// position in self's logical order is reported, whatever the thread count.
#include "common/out.h"
#include "contracts/max_unpool.h"
#include "cpu/cpu_utils.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

namespace torch_aclnn::max_unpool {
namespace {

using c10::MemoryFormat;
using cpu::kGrainSize;

constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

struct Planes {
  int64_t sN, sC, sK;
};

Planes planes_of(const at::Tensor& t) {
  const int64_t sK = flat_stride(t);
  TORCH_INTERNAL_ASSERT(sK >= 0, "max_unpool: D, H, W axes do not flatten");
  return {t.stride(0), t.dim() == 5 ? t.stride(1) : 0, sK};
}

// The smallest logical position ((n*C + c)*S + i) of an out-of-range index,
// gathered over threads.
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
    for (int64_t c = c0; c < c1; ++c) std::fill_n(on + c * op.sC, oS, T(0));
  } else if (op.sC == 1) {  // dense pixels (channels_last_3d output)
    for (int64_t k = 0; k < oS; ++k) std::fill_n(on + k * op.sK + c0, c1 - c0, T(0));
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

at::Tensor forward_cpu(const at::Tensor& self_, const at::Tensor& indices_, c10::SymIntArrayRef output_size_,
                       at::IntArrayRef stride, at::IntArrayRef padding) {
  check_forward(self_, indices_, output_size_, stride, padding);
  const auto output_size = C10_AS_INTARRAYREF_SLOW(output_size_);
  const MemoryFormat fmt = result_format(self_);
  std::vector<int64_t> shape(self_.sizes().begin(), self_.sizes().end() - 3);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  at::Tensor out = cpu::empty(shape, self_.options().memory_format(fmt));
  if (out.numel() == 0) return out;
  const at::Tensor self = flattenable(self_, fmt);
  const at::Tensor indices = flattenable(indices_, fmt);
  const Geometry g = geometry(self, output_size);
  const int64_t* ix = indices.const_data_ptr<int64_t>();
  const Planes xp = planes_of(indices);
  FirstBad bad;
  dispatch_by_size(self.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    scatter_kernel<T>(static_cast<const T*>(self.const_data_ptr()), planes_of(self), ix, xp,
                      static_cast<T*>(out.mutable_data_ptr()), planes_of(out), g, bad);
  });
  check_indices_found(kForward, bad, g, ix, xp, output_size);
  return out;
}

// ---------------------------------------------------------------------------
// Backward

// grad_input is dense in `fmt` (contiguous or channels_last_3d) and is
// written in memory order.
template <typename T>
void gather_kernel(const T* go, Planes gp, const int64_t* ix, Planes xp, T* out, MemoryFormat fmt,
                   const Geometry& g, FirstBad& bad) {
  const int64_t N = g.N, C = g.C, S = g.S, oS = g.oS;
  const int64_t total = N * C * S;
  if (fmt == MemoryFormat::Contiguous) {
    // Element p is (nc = p / S, i = p % S).
    at::parallel_for(0, total, kGrainSize, [&](int64_t b, int64_t e) {
      int64_t first_bad = kNone;
      for (int64_t p = b; p < e;) {
        const int64_t nc = p / S, i0 = p % S, i1 = std::min(S, i0 + (e - p));
        const int64_t n = nc / C, c = nc % C;
        const T* gs = go + n * gp.sN + c * gp.sC;
        const int64_t* is = ix + n * xp.sN + c * xp.sC;
        T* os = out + nc * S;
        const int64_t gK = gp.sK, iK = xp.sK;
        int64_t i = i0;
        if (gK == 1 && iK == 1) {
          // Dense planes: check a block of indices with one branch-free
          // reduction, then gather it without per-element branches (the
          // compiler vectorises both loops); a block holding a bad index
          // falls through to the checked loop below.
          constexpr int64_t kBlock = 256;
          for (; i + kBlock <= i1; i += kBlock) {
            const int64_t* blk = is + i;
            uint64_t hi = 0;
            for (int64_t k = 0; k < kBlock; ++k) hi = std::max(hi, static_cast<uint64_t>(blk[k]));
            if (C10_UNLIKELY(hi >= static_cast<uint64_t>(oS))) break;
            T* dst = os + i;
            for (int64_t k = 0; k < kBlock; ++k) dst[k] = gs[blk[k]];
          }
        }
        for (; i < i1; ++i) {
          const int64_t v = is[i * iK];
          if (C10_UNLIKELY(out_of_range(v, oS))) {
            first_bad = std::min(first_bad, nc * S + i);
            os[i] = T(0);
            continue;
          }
          os[i] = gs[v * gK];
        }
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

void backward_into(const at::Tensor& grad_output_, const at::Tensor& self, const at::Tensor& indices_,
                   at::IntArrayRef output_size, at::Tensor& grad_input, MemoryFormat fmt) {
  if (grad_input.numel() == 0) return;
  TORCH_INTERNAL_ASSERT(grad_input.is_contiguous(fmt));
  const at::Tensor grad_output = flattenable(grad_output_, fmt);
  const at::Tensor indices = flattenable(indices_, fmt);
  const Geometry g = geometry(self, output_size);
  const int64_t* ix = indices.const_data_ptr<int64_t>();
  const Planes xp = planes_of(indices);
  FirstBad bad;
  dispatch_by_size(grad_output.scalar_type(), [&](auto tag) {
    using T = decltype(tag);
    gather_kernel<T>(static_cast<const T*>(grad_output.const_data_ptr()), planes_of(grad_output), ix, xp,
                     static_cast<T*>(grad_input.mutable_data_ptr()), fmt, g, bad);
  });
  check_indices_found(kBackward, bad, g, ix, xp, output_size);
}

at::Tensor backward_cpu(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices,
                        c10::SymIntArrayRef output_size, at::IntArrayRef stride, at::IntArrayRef padding) {
  check_backward(grad_output, self, indices, output_size, stride, padding);
  const MemoryFormat fmt = result_format(indices);
  at::Tensor grad_input = cpu::empty(self.sizes(), grad_output.options().memory_format(fmt));
  backward_into(grad_output, self, indices, C10_AS_INTARRAYREF_SLOW(output_size), grad_input, fmt);
  return grad_input;
}

void backward_out_cpu(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices,
                      c10::SymIntArrayRef output_size, at::IntArrayRef stride, at::IntArrayRef padding,
                      at::Tensor& grad_input) {
  check_backward(grad_output, self, indices, output_size, stride, padding, grad_input);
  const auto out_size = C10_AS_INTARRAYREF_SLOW(output_size);
  // grad_input is contiguous (row 1): write straight into it unless it shares
  // memory with what the kernel reads.
  write_out(
      grad_input, shares_no_memory(grad_input, {&grad_output, &indices}),
      [&] { return cpu::empty(self.sizes(), grad_output.options()); },
      [&](at::Tensor& dst) { backward_into(grad_output, self, indices, out_size, dst, MemoryFormat::Contiguous); });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_aclnn, CPU, m) {
  m.impl("max_unpool3d", forward_cpu);
  m.impl("max_unpool3d_backward", backward_cpu);
  m.impl("max_unpool3d_backward.grad_input", backward_out_cpu);
}

}  // namespace torch_aclnn::max_unpool
