// The elementwise driver of the CPU kernels (elu, smooth_l1): out = op(in...)
// over operands of one dtype, every element through the same
// at::vec::Vectorized formula whatever its position, layout or thread.
//
// - run_dense: operands dense with the output's sizes and strides (a
//   contiguous or channels_last tensor and the empty_like made for it): one
//   flat loop over memory, split with at::parallel_for, without building a
//   TensorIterator (which costs more than the arithmetic on a small tensor).
// - run: any operands over an at::TensorIterator (any shape up to 8 dims,
//   0-dim, empty, arbitrary strides, without copies); strided runs are
//   gathered into a small block, computed like a dense one, and scattered.
// - The last partial block of a run uses partial loads and stores instead of
//   a scalar loop, so results do not depend on strides, alignment or the
//   number of threads.
// - Ops with a costly branch (Op::kCompact; see elu.cpp) evaluate it, on
//   AVX-512, only for the lanes that take it (apply_compacted).
// - A dense pass over more memory than the last-level cache holds writes its
//   output with non-temporal stores (stream_stores).
//
// An Op maps opmath vectors (float32 for half/bfloat16, widened and rounded
// once) to an opmath vector: Vectorized<opmath> operator()(const
// Vectorized<opmath>&...).
#pragma once

#include "cpu/cpu_utils.h"

#include <ATen/OpMathType.h>
#include <ATen/TensorIterator.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
#include <immintrin.h>
#endif

namespace torch_aclnn::cpu {

using at::vec::Vectorized;

// Whether Op says it has a costly branch to compact (Op::kCompact).
template <typename Op>
constexpr bool compacts() {
  if constexpr (requires { Op::kCompact; }) {
    return Op::kCompact;
  } else {
    return false;
  }
}

// Bit l set where !(a[l] > b[l]): a <= b or either is NaN. On AVX-512 float
// one compare into a mask register; otherwise the vector compare's zero lanes.
template <typename T>
C10_ALWAYS_INLINE int not_greater_lanes(const Vectorized<T>& a, const Vectorized<T>& b) {
#if defined(CPU_CAPABILITY_AVX512)
  if constexpr (std::is_same_v<T, float>) return _mm512_cmp_ps_mask(a, b, _CMP_NGT_UQ);
#endif
  return (a > b).zero_mask();
}

// Bit l set where !(a[l] >= b[l]): a < b or either is NaN (as not_greater_lanes).
template <typename T>
C10_ALWAYS_INLINE int not_greater_equal_lanes(const Vectorized<T>& a, const Vectorized<T>& b) {
#if defined(CPU_CAPABILITY_AVX512)
  if constexpr (std::is_same_v<T, float>) return _mm512_cmp_ps_mask(a, b, _CMP_NGE_UQ);
#endif
  return (a >= b).zero_mask();
}

// Chooses, lane by lane, between an op's two branches: `neg` where the lane
// takes the costly one, `pos` elsewhere. BlendLanes holds the vector compare
// (the generic op()); MaskLanes the AVX-512 mask the compacted driver keeps
// from its first pass, so its last pass neither reloads nor compares again.
template <typename T>
struct BlendLanes {
  Vectorized<T> pos_lanes;  // all-ones where the lane takes `pos`
  Vectorized<T> select(const Vectorized<T>& neg, const Vectorized<T>& pos) const {
    return Vectorized<T>::blendv(neg, pos, pos_lanes);
  }
};

#if defined(CPU_CAPABILITY_AVX512)
struct MaskLanes {
  __mmask16 neg_lanes;
  Vectorized<float> select(const Vectorized<float>& neg, const Vectorized<float>& pos) const {
    return _mm512_mask_blend_ps(neg_lanes, pos, neg);
  }
};
#endif

// Non-temporal ("streaming") stores write whole cache lines to memory
// without first reading them into the cache (a normal store's line fill) and
// without evicting the inputs: a pass whose operands do not fit in the cache
// moves a quarter less memory for two inputs and one output. On data that
// fits in the cache they are slower (the next reader misses). So a
// dense pass streams when its operands together hold at least the
// last-level cache's size (TORCH_ACLNN_STREAM_BYTES overrides it: a byte
// count, 0 for every pass). Needs AVX-512 or AVX2.
#if defined(CPU_CAPABILITY_AVX512)
constexpr bool kCanStream = true;
using StreamBits = __m512i;  // one Vectorized's bits
C10_ALWAYS_INLINE void stream_bits(StreamBits* p, StreamBits bits) { _mm512_stream_si512(p, bits); }
#elif defined(CPU_CAPABILITY_AVX2)
constexpr bool kCanStream = true;
using StreamBits = __m256i;
C10_ALWAYS_INLINE void stream_bits(StreamBits* p, StreamBits bits) { _mm256_stream_si256(p, bits); }
#else
constexpr bool kCanStream = false;
#endif

inline bool stream_stores(int64_t operand_bytes) {
  static const int64_t threshold = [] {
    if (const char* env = std::getenv("TORCH_ACLNN_STREAM_BYTES")) return static_cast<int64_t>(std::atoll(env));
    return last_level_cache_bytes();
  }();
  return kCanStream && operand_bytes >= threshold;
}

// v stored to p, with a non-temporal store when `stream` (p 64-byte aligned).
template <typename V, typename scalar_t>
C10_ALWAYS_INLINE void store_vector(const V& v, scalar_t* p, bool stream) {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  if (stream) {
    static_assert(sizeof(V) == sizeof(StreamBits));
    StreamBits bits;
    std::memcpy(&bits, &v, sizeof(bits));
    stream_bits(reinterpret_cast<StreamBits*>(p), bits);
    return;
  }
#endif
  v.store(p);
}

// Orders this thread's non-temporal stores before whatever follows (they are
// weakly ordered): called at the end of each parallel chunk that streamed.
inline void stream_fence() {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  _mm_sfence();
#endif
}

// out[0:n] = op(in...[0:n]) for n <= Vectorized<scalar_t>::size() contiguous
// elements; half/bfloat16 lanes are widened to float32 and rounded once. A
// full block is stored with a non-temporal store when `stream`.
template <typename scalar_t, typename Op, typename... In>
C10_ALWAYS_INLINE void apply_block(const Op& op, scalar_t* out, int64_t n, bool stream, const In*... in) {
  using V = Vectorized<scalar_t>;
  const bool full = n == V::size();
  auto load = [&](const scalar_t* p) { return full ? V::loadu(p) : V::loadu(p, n); };
  V r;
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    auto widen = [&](const scalar_t* p) { return at::vec::convert_to_float<scalar_t>(load(p)); };
    auto lanes = std::make_tuple(widen(in)...);
    auto lo = std::apply([&](auto&... t) { return op(std::get<0>(t)...); }, lanes);
    auto hi = std::apply([&](auto&... t) { return op(std::get<1>(t)...); }, lanes);
    r = at::vec::convert_from_float<scalar_t>(lo, hi);
  } else {
    r = op(load(in)...);
  }
  if (full) {
    store_vector(r, out, stream);
  } else {
    r.store(out, n);
  }
}

#if defined(CPU_CAPABILITY_AVX512)
// The float32 vectors of K = Vectorized<scalar_t>::size() contiguous elements
// (half/bfloat16: two, widened), and back (rounded once).
template <typename scalar_t>
C10_ALWAYS_INLINE auto float_vectors(const scalar_t* p) {
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    const auto [lo, hi] = at::vec::convert_to_float<scalar_t>(Vectorized<scalar_t>::loadu(p));
    return std::array<Vectorized<float>, 2>{lo, hi};
  } else {
    return std::array<Vectorized<float>, 1>{Vectorized<float>::loadu(p)};
  }
}

template <typename scalar_t, size_t m>
C10_ALWAYS_INLINE void store_float_vectors(scalar_t* p, const std::array<Vectorized<float>, m>& v, bool stream) {
  if constexpr (at::vec::is_reduced_floating_point_v<scalar_t>) {
    store_vector(at::vec::convert_from_float<scalar_t>(v[0], v[1]), p, stream);
  } else {
    store_vector(v[0], p, stream);
  }
}

// out[0:n] = op(in...[0:n]) for ops with a costly branch (kCompact), float32
// opmath, AVX-512: blocks of kBlock elements in three passes. (1) The
// branch's arguments of the lanes that take it are packed side by side
// (vcompressps) into a buffer; (2) the costly function runs over the packed
// buffer only, a whole vector at a time; (3) its values are unpacked back to
// their lanes (vexpandps) and finished. The same function of the same
// argument, lane by lane, as op(), so bitwise the same; with random signs it
// evaluates about half as many vectors. Returns the number of elements done
// (whole blocks); apply_dense does the rest.
//
// The op exposes the branch's parts: neg_lanes (bit l set where lane l takes
// it), arg (the costly function's argument), costly (the function) and
// finish (the result from its value, whatever it holds in the other lanes,
// given a selector of the lanes: BlendLanes or MaskLanes), with operator()
// equal to finish(costly(arg)). The first pass keeps each vector's mask for
// the last, which loads only what finish reads.
template <typename scalar_t, typename Op, typename... In>
int64_t apply_compacted(const Op& op, scalar_t* out, int64_t n, bool stream, const In*... in) {
  using fVec = Vectorized<float>;
  constexpr int64_t K = Vectorized<scalar_t>::size(), F = fVec::size();
  constexpr size_t H = K / F;  // float vectors per vector of scalar_t
  // Block length, chosen on AVX-512 (DRAM-sized and in-cache tensors): float32
  // with 1024 fell behind aten on DRAM-sized tensors (memory and exps in turn,
  // too little overlap), 256 did not; bfloat16 with 256 lost most of its gain.
  constexpr int64_t kBlock = sizeof(scalar_t) == 4 ? 256 : 1024;
  alignas(64) float packed[kBlock + F];
  __mmask16 masks[kBlock / F];
  // Every input's float vectors at element i; f applied to the h-th of each.
  const auto load = [&](int64_t i) { return std::make_tuple(float_vectors(in + i)...); };
  const auto apply = [](const auto& lanes, size_t h, const auto& f) {
    return std::apply([&](const auto&... v) { return f(v[h]...); }, lanes);
  };
  const auto neg_lanes = [&](const auto&... v) { return static_cast<__mmask16>(op.neg_lanes(v...)); };
  const auto arg = [&](const auto&... v) { return op.arg(v...); };
  int64_t done = 0;
  for (; done + kBlock <= n; done += kBlock) {
    int64_t count = 0;
    __mmask16* mask = masks;
    for (int64_t i = done; i < done + kBlock; i += K) {
      const auto lanes = load(i);
      for (size_t h = 0; h < H; ++h, ++mask) {
        *mask = apply(lanes, h, neg_lanes);
        _mm512_storeu_ps(packed + count, _mm512_maskz_compress_ps(*mask, apply(lanes, h, arg)));
        count += _mm_popcnt_u32(*mask);
      }
    }
    fVec(0.0f).store(packed + count);  // the last packed vector's lanes past count: defined values
    for (int64_t j = 0; j < count; j += F) Op::costly(fVec::loadu(packed + j)).store(packed + j);
    int64_t next = 0;
    mask = masks;
    for (int64_t i = done; i < done + kBlock; i += K) {
      const auto lanes = load(i);
      std::array<fVec, H> result;
      for (size_t h = 0; h < H; ++h, ++mask) {
        const fVec e = _mm512_maskz_expand_ps(*mask, _mm512_loadu_ps(packed + next));
        next += _mm_popcnt_u32(*mask);
        result[h] = apply(lanes, h, [&](const auto&... v) { return op.finish(e, MaskLanes{*mask}, v...); });
      }
      store_float_vectors(out + i, result, stream);
    }
  }
  return done;
}
#endif

// out[0:n] = op(in...[0:n]) over n contiguous elements, block by block. With
// `stream`, the elements before out's first 64-byte boundary go first (a
// partial block), so that every full block after them is aligned for its
// non-temporal store.
template <typename scalar_t, typename Op, typename... In>
C10_ALWAYS_INLINE void apply_dense(const Op& op, scalar_t* out, int64_t n, bool stream, const In*... in) {
  constexpr int64_t K = Vectorized<scalar_t>::size();
  int64_t i = 0;
  if (stream) {
    const auto misaligned = reinterpret_cast<uintptr_t>(out) % 64;
    if (misaligned % sizeof(scalar_t) != 0) {
      stream = false;
    } else if (misaligned != 0) {
      // Less than 64 bytes: one partial block (AVX-512) or up to two (AVX2).
      const int64_t head = std::min<int64_t>(n, static_cast<int64_t>((64 - misaligned) / sizeof(scalar_t)));
      for (; i < head; i += K) apply_block(op, out + i, std::min(K, head - i), false, (in + i)...);
      i = head;
    }
  }
#if defined(CPU_CAPABILITY_AVX512)
  if constexpr (compacts<Op>() && std::is_same_v<at::opmath_type<scalar_t>, float>) {
    i += apply_compacted(op, out + i, n - i, stream, (in + i)...);
  }
#endif
  for (; i < n; i += K) apply_block(op, out + i, std::min(K, n - i), stream, (in + i)...);
}

// Runs op over iter (output 0, inputs 1..nin, all of dtype scalar_t).
template <typename scalar_t, int nin, typename Op>
void run(at::TensorIteratorBase& iter, const Op& op) {
  static_assert(nin == 1 || nin == 2);
  constexpr int nt = nin + 1;
  constexpr int64_t K = Vectorized<scalar_t>::size();
  constexpr int64_t es = sizeof(scalar_t);
  auto loop = [&](char** data, const int64_t* strides, int64_t n0, int64_t n1) {
    char* ptr[nt];
    std::copy(data, data + nt, ptr);
    const int64_t* outer = strides + nt;
    bool dense = true;
    for (int k = 0; k < nt; ++k) dense = dense && strides[k] == es;
    for (int64_t j = 0; j < n1; ++j) {
      auto* out = reinterpret_cast<scalar_t*>(ptr[0]);
      const auto* a = reinterpret_cast<const scalar_t*>(ptr[1]);
      const auto* b = reinterpret_cast<const scalar_t*>(ptr[nt - 1]);
      if (dense) {
        if constexpr (nin == 1) {
          apply_dense(op, out, n0, false, a);
        } else {
          apply_dense(op, out, n0, false, a, b);
        }
      } else {
        // Gather a block of each operand, compute it like a dense one, scatter.
        scalar_t buf[nt][K];
        for (int64_t i = 0; i < n0; i += K) {
          const int64_t n = std::min(K, n0 - i);
          for (int k = 1; k < nt; ++k) {
            const char* p = ptr[k] + i * strides[k];
            for (int64_t l = 0; l < n; ++l) buf[k][l] = *reinterpret_cast<const scalar_t*>(p + l * strides[k]);
          }
          if constexpr (nin == 1) {
            apply_block(op, buf[0], n, false, static_cast<const scalar_t*>(buf[1]));
          } else {
            apply_block(op, buf[0], n, false, static_cast<const scalar_t*>(buf[1]),
                        static_cast<const scalar_t*>(buf[2]));
          }
          char* p = ptr[0] + i * strides[0];
          for (int64_t l = 0; l < n; ++l) *reinterpret_cast<scalar_t*>(p + l * strides[0]) = buf[0][l];
        }
      }
      for (int k = 0; k < nt; ++k) ptr[k] += outer[k];
    }
  };
  iter.for_each(loop);
}

// When every operand is non-overlapping and dense with the output's sizes and
// strides: one flat loop over memory. The same formula block by block as
// run(), lane by lane, so the results are identical. Returns false (nothing
// done) otherwise.
template <typename scalar_t, typename Op, typename... In>
bool run_dense(at::Tensor& out, const Op& op, const In&... in) {
  if (!out.is_non_overlapping_and_dense() ||
      !((in.sizes() == out.sizes() && in.strides() == out.strides()) && ...)) {
    return false;
  }
  scalar_t* o = out.mutable_data_ptr<scalar_t>();
  const auto inputs = std::make_tuple(in.template const_data_ptr<scalar_t>()...);
  // Not for half/bfloat16 ops that compact a costly branch: those are bound
  // by their exps, and streaming their stores was slower there (bfloat16
  // elu_backward out=; float32 gains from it).
  constexpr bool kStreamable = !(compacts<Op>() && at::vec::is_reduced_floating_point_v<scalar_t>);
  const bool stream = kStreamable && stream_stores(out.numel() * static_cast<int64_t>(sizeof(scalar_t)) *
                                                   static_cast<int64_t>(1 + sizeof...(In)));
  at::parallel_for(0, out.numel(), kGrainSize, [&](int64_t b, int64_t e) {
    std::apply([&](const auto*... x) { apply_dense(op, o + b, e - b, stream, (x + b)...); }, inputs);
    if (stream) stream_fence();
  });
  return true;
}

// out = op(in...): run_dense when it applies, else run over a TensorIterator.
template <typename scalar_t, typename Op, typename... In>
void run_elementwise(at::Tensor& out, const Op& op, const In&... in) {
  if (run_dense<scalar_t>(out, op, in...)) return;
  at::TensorIteratorConfig config;
  config.resize_outputs(false).add_output(out);
  (config.add_const_input(in), ...);
  auto iter = config.build();
  run<scalar_t, sizeof...(In)>(iter, op);
}

}  // namespace torch_aclnn::cpu
