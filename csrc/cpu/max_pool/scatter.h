// The backward's scatters: a plane's terms added into grad_input (NCDHW),
// a window's channels together (channels_last_3d).
// (cpu/max_pool.cpp includes it and picks the path: pick_backward_path.)
#pragma once

#include "cpu/max_pool/walk.h"

namespace torch_aclnn::max_pool {
namespace {  // included by cpu/max_pool.cpp only

// One plane: acc (S dense elements) += grad_output's terms in
// increasing o. Returns the first bad o, or kNone.
template <typename A, typename T, typename I>
int64_t scatter_plane(A* acc, const T* go, int64_t gK, const I* ix, int64_t xK, const Geometry& g,
                      const TapCheck& check) {
  const auto scatter = [&](auto has) {
    int64_t o = 0;
    for (int64_t od = 0; od < g.oD; ++od) {
      for (int64_t oh = 0; oh < g.oH; ++oh) {
        const TapCheck::Row row = check.row(od, oh);
        for (int64_t ow = 0; ow < g.oW; ++ow, ++o) {
          const int64_t v = static_cast<int64_t>(ix[o * xK]);
          if (C10_UNLIKELY(!has(check.at(row, ow), v))) return o;
          A& d = acc[v];
          d = static_cast<A>(static_cast<at::opmath_type<A>>(d) + static_cast<at::opmath_type<A>>(go[o * gK]));
        }
      }
    }
    return kNone;
  };
  // (the table's test chosen once per plane, not per index)
  if (check.tabled()) return scatter([&](const TapCheck::Taps& t, int64_t v) { return check.in_table(t, v); });
  return scatter([&](const TapCheck::Taps& t, int64_t v) { return check.has(t, v); });
}

// channels_last_3d, channels adjacent in grad_input, grad_output and
// indices: tasks are (n, block of channels), as few blocks as give every
// thread a task (each a whole number of cache lines). A task adds the terms
// in increasing o, a window's channels together: so every position gets
// its terms in increasing o, as in the NCDHW scatter. Each D-plane of the
// block is zero-filled just before the first pooled row (od) whose windows
// reach it, so the terms land in cache. float16/bfloat16 with overlapping
// windows add in float32, in a ring of the D-planes the windows of one
// pooled row can reach (a power of two of them, per thread), each plane
// rounded into grad_input once no later window reaches it. A bad index
// (TapCheck) is skipped and noted.
template <typename T, typename I>
void scatter_channels_last(T* out, Planes op, const T* go, Planes gp, const I* ix, Planes xp, const Geometry& g,
                           const Window& w, FirstBad& bad) {
  using A = at::opmath_type<T>;
  const bool direct = adds_in_place<T>(w);
  const TapCheck check(g, w);
  const Split& split = check.split();
  const int64_t line = kChannelBlock<T>, lines = (g.C + line - 1) / line;
  const int64_t parts = std::min(lines, std::max<int64_t>(1, (at::get_num_threads() + g.N - 1) / g.N));
  const int64_t cb = (lines + parts - 1) / parts * line, blocks = (g.C + cb - 1) / cb;
  const int64_t HW = g.H * g.W, s0 = w.stride[0], p0 = w.padding[0], last_tap0 = (w.kernel[0] - 1) * w.dilation[0];
  // The ring's planes: while a pooled row's terms are added, the planes from
  // the first its windows reach (or the first not yet rounded, where the
  // stride skips planes) to the last are live: at most max(last_tap0 + 1, s0).
  const auto pow2 = [](int64_t n) { return int64_t(1) << (64 - __builtin_clzll(static_cast<uint64_t>(n - 1) | 1)); };
  const int64_t ring = direct ? 0 : std::min(pow2(std::max(last_tap0 + 1, s0)), pow2(g.D));
  at::parallel_for(0, g.N * blocks, 1, [&](int64_t b, int64_t e) {
    std::vector<A> sums(ring * HW * cb);
    int64_t ring_shift[TapCheck::kAxisBits];
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / blocks, c0 = (t % blocks) * cb, nc = std::min(g.C, c0 + cb) - c0;
      T* dst = out + n * op.sN + c0;
      // Where the terms add: grad_input (plane z at in_dst(z), position v at
      // v * op.sK), or the ring (plane z at slot z % ring, position v at
      // ring_at(v)).
      const auto in_dst = [&](int64_t z) { return dst + z * HW * op.sK; };
      const auto in_ring = [&](int64_t z) { return sums.data() + (z & (ring - 1)) * HW * nc; };
      const auto ring_at = [&](int64_t v) {
        const int64_t z = split.plane(v);
        return ((z & (ring - 1)) * HW + v - z * HW) * nc;
      };
      // ring_at(v) - v * nc for v in the plane of tap i along D of pooled
      // row od's windows (ring_row(od)).
      const auto ring_row = [&](int64_t od) {
        for (int64_t i = 0; !direct && i < w.kernel[0]; ++i) {
          const int64_t z = od * s0 - p0 + i * w.dilation[0];
          ring_shift[i] = ((z & (ring - 1)) - z) * HW * nc;
        }
      };
      const auto zero = [&](auto plane, int64_t sK, int64_t z0, int64_t z1) {  // planes [z0, z1)
        for (int64_t z = z0; z < z1; ++z) {
          auto* p = plane(z);
          if (sK == nc) {
            cpu::zero_fill(p, HW * nc);
          } else {
            for (int64_t k = 0; k < HW; ++k) cpu::zero_fill(p + k * sK, nc);
          }
        }
      };
      const auto round = [&](int64_t z0, int64_t z1) {  // planes [z0, z1) of the ring to grad_input
        for (int64_t z = z0; z < z1; ++z) {
          if (op.sK == nc) {
            cpu::narrow_row(in_ring(z), in_dst(z), HW * nc);
          } else {
            for (int64_t k = 0; k < HW; ++k) cpu::narrow_row(in_ring(z) + k * nc, in_dst(z) + k * op.sK, nc);
          }
        }
      };
      // at(v, bits): position v's offset from plane(0), given its tap's bits
      // (kTabled: TapCheck::tap_bits, else 1)
      const auto scatter = [&](auto plane, int64_t sK, auto tabled, auto at) {
        constexpr bool kTabled = decltype(tabled)::value;
        auto* sum = plane(0);
        int64_t first = kNone, o = 0, zeroed = 0, rounded = 0;
        for (int64_t od = 0; od < g.oD; ++od) {
          const int64_t reach = std::clamp<int64_t>(od * s0 - p0 + last_tap0 + 1, zeroed, g.D);
          zero(plane, sK, zeroed, reach);
          zeroed = reach;
          if constexpr (kTabled) ring_row(od);  // (ring_shift: kernel[0] <= kAxisBits where the table applies)
          for (int64_t oh = 0; oh < g.oH; ++oh) {
            const TapCheck::Row row = check.row(od, oh);
            for (int64_t ow = 0; ow < g.oW; ++ow, ++o) {
              const TapCheck::Taps taps = check.at(row, ow);
              const I* is = ix + n * xp.sN + o * xp.sK + c0;
              const T* gs = go + n * gp.sN + o * gp.sK + c0;
              for (int64_t c = 0; c < nc; ++c) {
                const int64_t v = static_cast<int64_t>(is[c]);
                const uint32_t bits = kTabled ? check.tap_bits(taps, v) : static_cast<uint32_t>(check.has(taps, v));
                if (C10_UNLIKELY(bits == 0)) {
                  first = std::min(first, (n * g.C + c0 + c) * g.oS + o);
                  continue;
                }
                auto& d = sum[at(v, bits) + c];
                d = static_cast<std::decay_t<decltype(d)>>(static_cast<A>(d) + static_cast<A>(gs[c]));
              }
            }
          }
          if (!direct) {  // the planes before the next pooled row's windows are final
            const int64_t final_planes = std::clamp<int64_t>((od + 1) * s0 - p0, rounded, zeroed);
            round(rounded, final_planes);
            rounded = final_planes;
          }
        }
        if (!direct) round(rounded, zeroed);
        zero(in_dst, op.sK, zeroed, g.D);  // planes in no window
        if (C10_UNLIKELY(first != kNone)) bad.note(first);
      };
      const auto run = [&](auto tabled) {
        if (direct) {
          scatter(in_dst, op.sK, tabled, [&](int64_t v, uint32_t) { return v * op.sK; });
        } else if constexpr (decltype(tabled)::value) {
          // (v's plane from its tap's number along D: ring_at without a division)
          scatter(in_ring, nc, tabled,
                  [&](int64_t v, uint32_t bits) { return v * nc + ring_shift[TapCheck::plane_tap(bits)]; });
        } else {
          scatter(in_ring, nc, tabled, [&](int64_t v, uint32_t) { return ring_at(v); });
        }
      };
      if (check.tabled()) {
        run(std::true_type{});
      } else {
        run(std::false_type{});
      }
    }
  });
}

}  // namespace
}  // namespace torch_aclnn::max_pool
