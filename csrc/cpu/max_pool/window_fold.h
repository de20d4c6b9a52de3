// The forward's element rule over many windows at once: a tap folded
// branch-free, vectors of taps, running maxima, the results stored.
// (included by cpu/max_pool.cpp and the other cpu/max_pool/ headers.)
#pragma once

#include "cpu/max_pool/walk.h"

namespace torch_aclnn::max_pool {
namespace {  // included by cpu/max_pool.cpp only

// The forward's element rule (window_max's, contracts/max_pool.h) for n
// windows at once, one tap of each: tap i of window i reads src[i * stride]
// at flat position base + i * step. best starts at -inf and where at each
// window's first tap inside self, so "the first tap, then any larger or NaN
// one" is two selects per element, no branch: the loop vectorises (over the
// pooled positions of a row, or over the channels).
template <int kStride, typename T, typename A, typename J>
inline void fold_tap(const T* __restrict src, int64_t stride, int64_t n, J base, J step, A* __restrict best,
                     J* __restrict where) {
  const int64_t st = kStride ? kStride : stride;
  for (int64_t i = 0; i < n; ++i) {
    const A v = static_cast<A>(src[i * st]);
    const bool take = v > best[i] || v != v;
    best[i] = take ? v : best[i];
    where[i] = take ? static_cast<J>(base + static_cast<J>(i) * step) : where[i];
  }
}

// The windows of a pooled row that start in W's left padding (ceil(p / s)),
// at most the row's oW.
inline int64_t left_padding_windows(const Geometry& g, const Window& w) {
  return std::min(g.oW, (w.padding[2] + w.stride[2] - 1) / w.stride[2]);
}

// The contract's window_max for pooled position (od, oh, ow) of a plane
// whose flat position pos at() reads in A.
template <typename A, typename At>
inline void plane_window_max(At at, int64_t od, int64_t oh, int64_t ow, const Geometry& g, const Window& w, A& value,
                             int64_t& index) {
  const int64_t k[3] = {w.kernel[0], w.kernel[1], w.kernel[2]}, s[3] = {w.stride[0], w.stride[1], w.stride[2]},
                p[3] = {w.padding[0], w.padding[1], w.padding[2]},
                d[3] = {w.dilation[0], w.dilation[1], w.dilation[2]};
  window_max<A, int64_t>(at, od, oh, ow, g.D, g.H, g.W, k, s, p, d, value, index);
}

// Tap i (i < m <= K) of K windows kStride apart from x, as lane i of a
// float32 vector (float16/bfloat16 widened); lanes past m are 0. With
// `whole`, the caller knows that 2K elements from x lie in the row (stride 2
// then loads them whole and keeps the even lanes: cpu::load_even_odd); else
// nothing past tap m - 1 is read.
template <int kStride, typename T>
inline at::vec::Vectorized<float> load_taps(const T* __restrict x, int64_t m, bool whole) {
  constexpr int64_t K = at::vec::Vectorized<float>::size();
  if (kStride == 1 && m == K) return cpu::widen(x);
  if (kStride == 2 && m == K && whole) return std::get<0>(cpu::load_even_odd(x));
  const auto [x0, x1] = cpu::load_pair(x, kStride * m - (kStride - 1));
  return kStride == 1 ? x0 : std::get<0>(at::vec::deinterleave2(x0, x1));
}

// window_max's step (fold_tap's) on a vector of windows: take v where it is
// greater or NaN (and, given `live`, in its lanes only), with its position.
inline void fold_lanes(const at::vec::Vectorized<float>& v, const at::vec::Vectorized<int32_t>& at,
                       at::vec::Vectorized<float>& best, at::vec::Vectorized<int32_t>& where,
                       const at::vec::Vectorized<float>* live = nullptr) {
#if defined(CPU_CAPABILITY_AVX512)
  // (in mask registers: at::vec's compares make vectors of the masks, and blendv masks again)
  __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  if (live != nullptr) take &= _mm512_movepi32_mask(_mm512_castps_si512(*live));
  best = _mm512_mask_mov_ps(best, take, v);
  where = _mm512_mask_mov_epi32(where, take, at);
#else
  auto take = (v > best) | (v != v);
  if (live != nullptr) take = take & *live;
  best = at::vec::Vectorized<float>::blendv(best, v, take);
  where = at::vec::Vectorized<int32_t>::blendv(where, at, at::vec::cast<int32_t>(take));
#endif
}

// window_max's step on a vector of windows whose values hold no NaN: the
// running maximum, and v's position where it is greater. The maximum's
// chain from tap to tap is one instruction (a small row's taps all fold
// into one vector, so that chain sets the pace), not window_max's compare
// and selects. A NaN is not ordered by it: NanLanes marks the lanes that
// saw one, whose windows the caller folds by window_max's own rule. On a
// tie (-0 against +0 too) best keeps its own bits (maxps returns its second
// operand where the two compare equal), so a lane without NaN holds the
// element at its position, bit for bit.
inline void max_lanes(const at::vec::Vectorized<float>& v, const at::vec::Vectorized<int32_t>& at,
                      at::vec::Vectorized<float>& best, at::vec::Vectorized<int32_t>& where) {
#if defined(CPU_CAPABILITY_AVX512)
  where = _mm512_mask_mov_epi32(where, _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ), at);
  best = _mm512_max_ps(v, best);
#else
  where = at::vec::Vectorized<int32_t>::blendv(where, at, at::vec::cast<int32_t>(v > best));
  best = at::vec::clamp_min(best, v);  // (best < v ? v : best; AVX2: maxps(v, best))
#endif
}

// The lanes that held a NaN in any of the vectors added (bit i: lane i).
class NanLanes {
 public:
  void add(const at::vec::Vectorized<float>& v) {
#if defined(CPU_CAPABILITY_AVX512)
    seen_ |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
#else
    seen_ = seen_ | v.isnan();
#endif
  }

  uint32_t bits() const {
#if defined(CPU_CAPABILITY_AVX512)
    return seen_;
#else
    constexpr int K = at::vec::Vectorized<float>::size();
    return ~static_cast<uint32_t>(seen_.zero_mask()) & ((1u << K) - 1u);  // (zero_mask's K bits)
#endif
  }

 private:
#if defined(CPU_CAPABILITY_AVX512)
  __mmask16 seen_ = 0;
#else
  at::vec::Vectorized<float> seen_{0.0f};
#endif
};

// window_max over one window for K lanes at once (channels, or planes
// transposed into lanes), tap pos's lanes read by load(pos): from -inf at
// the window's first tap, the taps folded by their running maximum
// (max_lanes: one instruction a tap on the chain from tap to tap, where
// window_max's own step, fold_lanes, has a compare, an or and a select);
// where a lane saw a NaN, the window is folded again by fold_lanes.
template <typename Taps, typename Load>
inline void max_window(const Taps& taps_of, int64_t first, Load load, at::vec::Vectorized<float>& best,
                       at::vec::Vectorized<int32_t>& where) {
  using IVec = at::vec::Vectorized<int32_t>;
  const auto start = [&] {
    best = at::vec::Vectorized<float>(-std::numeric_limits<float>::infinity());
    where = IVec(static_cast<int32_t>(first));
  };
  start();
  NanLanes nan;
  taps_of([&](int64_t pos) {
    const auto v = load(pos);
    nan.add(v);
    max_lanes(v, IVec(static_cast<int32_t>(pos)), best, where);
  });
  if (C10_LIKELY(nan.bits() == 0)) return;
  start();
  taps_of([&](int64_t pos) { fold_lanes(load(pos), IVec(static_cast<int32_t>(pos)), best, where); });
}

// The lanes below m, as a blendv mask.
inline at::vec::Vectorized<float> lanes_below(int64_t m) {
  using IVec = at::vec::Vectorized<int32_t>;
  return at::vec::cast<float>(IVec::arange(0, 1) < IVec(static_cast<int32_t>(m)));
}

// fold_tap in at::vec vectors of windows, for float32 compare and int32
// positions (J), the taps kStride apart (the windows' stride). best and
// where are read and written whole (K elements of room past the row's last
// window: a whole store reloaded whole by the next tap forwards, a masked
// one does not); the lanes past the n-th window keep theirs.
template <int kStride, typename T>
inline void fold_tap_vectors(const T* __restrict src, int64_t n, int32_t base, float* __restrict best,
                             int32_t* __restrict where) {
  static_assert(kStride == 1 || kStride == 2);
  using Vec = at::vec::Vectorized<float>;
  using IVec = at::vec::Vectorized<int32_t>;
  constexpr int64_t K = Vec::size();
  static_assert(IVec::size() == K);
  const IVec step = IVec::arange(0, kStride);  // (lane i's position, from lane 0's: constants)
  for (int64_t i = 0; i < n; i += K) {
    const int64_t m = std::min(K, n - i);  // windows in this vector
    // (whole: the next vector's first tap follows this one's last odd element)
    const Vec v = load_taps<kStride>(src + kStride * i, m, i + K < n);
    Vec b = Vec::loadu(best + i);
    IVec a = IVec::loadu(where + i);
    const IVec at_ = IVec(base + static_cast<int32_t>(i) * kStride) + step;
    if (m == K) {
      fold_lanes(v, at_, b, a);
    } else {
      const Vec live = lanes_below(m);
      fold_lanes(v, at_, b, a, &live);
    }
    b.store(best + i);
    a.store(where + i);
  }
}

// Writes n results and their positions (stride ok): the winning element
// itself, so its bits (NaN payloads too): best holds it where the compute
// type is the element type (unless kFromSelf), else it is read again from
// self (position where[i] at src[where[i] * sK + i * sI]).
template <typename T, typename A, typename J, bool kFromSelf = false>
inline void store_result(T* out, int64_t* indices, int64_t ok, int64_t n, const A* best, const J* where,
                         const T* src, int64_t sK, int64_t sI) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<A, T> && !kFromSelf) {
      out[i * ok] = best[i];
    } else {
      out[i * ok] = src[where[i] * sK + i * sI];
    }
    indices[i * ok] = where[i];
  }
}

}  // namespace
}  // namespace torch_aclnn::max_pool
