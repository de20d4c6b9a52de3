// Runs the per-element code of the CUDA MaxUnpool3d kernels
// (csrc/cuda/max_unpool.cuh) on the host, element after element, with the
// launch set-up of csrc/cuda/max_unpool.cu (flattening, geometry, winner
// buffer, flag). The forward returns the result, the flag (the smallest
// logical position of an out-of-range index, or kNone) and whether the two
// passes ran; the backward the result and the flag.
// tests/test_cuda_host_*.py compare with the CPU kernels.
// Included once, by tests/cuda_host/module.cpp.
#pragma once

#include "cuda/max_unpool.cuh"
#include "launch.h"
#include "result.h"

#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

namespace host_max_unpool {

using namespace torch_aclnn::max_unpool;
using namespace torch_aclnn::max_unpool::kernels;
using namespace host_launch;

// claim_walk: -1 as the kernel chooses (the indices' memory order), 0 (n, c, k), 1 (n, k, c).
// cells: the one-pass forward first where the geometry has cells, as the kernel does.
std::tuple<at::Tensor, int64_t, bool> forward(const at::Tensor& self_, const at::Tensor& indices_,
                                              std::vector<int64_t> output_size, bool wide, int64_t claim_walk,
                                              bool cells) {
  const c10::MemoryFormat fmt = result_format(self_);
  std::vector<int64_t> shape(self_.sizes().begin(), self_.sizes().end() - 3);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  at::Tensor out = at::empty(shape, self_.options().memory_format(fmt));
  int64_t flag = kNone;
  if (out.numel() == 0) return {out, flag, false};
  // What a fresh CUDA allocation may hold: an element no pass writes shows up.
  if (out.is_floating_point()) out.fill_(std::numeric_limits<double>::quiet_NaN());
  const at::Tensor self = flattenable(self_, fmt);
  const at::Tensor indices = flattenable(indices_, fmt);
  const Geometry g = geometry(self, output_size);
  TORCH_CHECK(wide || fits_32bit({&self, &indices, &out}));
  const bool out_cl = fmt == c10::MemoryFormat::ChannelsLast3d;
  const bool ix_cl = claim_walk < 0 ? channels_fastest(indices, g) : claim_walk == 1;
  const bool narrow = g.S <= std::numeric_limits<int32_t>::max();
  at::Tensor winner = at::empty(out.sizes(), out.options().dtype(narrow ? at::kInt : at::kLong).memory_format(fmt));
  const bool one_pass = cells && has_cells(g);
  int64_t miss = one_pass ? kNone : 0;  // (0: run the two passes)
  with_index_type(!wide, [&](auto index_tag) {
    using index_t = decltype(index_tag);
    const auto xp = planes_of<index_t>(indices);
    const auto op = planes_of<index_t>(out);
    const auto sp = planes_of<index_t>(self);
    const Walk<index_t> in(g.S, g.C), pooled(g.oS, g.C);
    if (one_pass) {
      const Cells<index_t> c(g);
      dispatch_by_size(self.scalar_type(), [&](auto tag) {
        using T = decltype(tag);
        threads<index_t>(out_cl, indices.numel(), [&](auto cl, index_t p) {
          cell_element<decltype(cl)::value>(p, static_cast<const T*>(self.const_data_ptr()), sp,
                                            indices.const_data_ptr<int64_t>(), xp,
                                            static_cast<T*>(out.mutable_data_ptr()), op, in, c, &miss);
        });
      });
    }
    if (miss == kNone) return;
    winner.fill_(-1);
    const auto run = [&](auto w_tag) {
      using W = decltype(w_tag);
      W* wp = winner.mutable_data_ptr<W>();
      threads<index_t>(ix_cl, indices.numel(), [&](auto cl, index_t p) {
        claim_element<decltype(cl)::value>(p, indices.const_data_ptr<int64_t>(), xp, wp, op, in, g.C, g.S, g.oS,
                                           &flag);
      });
      dispatch_by_size(self.scalar_type(), [&](auto tag) {
        using T = decltype(tag);
        threads<index_t>(out_cl, out.numel(), [&](auto cl, index_t p) {
          fill_element<decltype(cl)::value>(p, static_cast<const T*>(self.const_data_ptr()), sp,
                                            static_cast<const W*>(wp), static_cast<T*>(out.mutable_data_ptr()),
                                            pooled);
        });
      });
    };
    if (narrow) {
      run(int32_t{});
    } else {
      run(int64_t{});
    }
  });
  return {out, flag, miss != kNone};
}

// packs: gather_pack where the launch takes it (gather_packs), else element
// by element. The result lies `offset` elements into its buffer
// (host_result::result_at). Returns the result, the flag and whether packs
// ran.
std::tuple<at::Tensor, int64_t, bool> backward(const at::Tensor& grad_output_, const at::Tensor& self,
                                               const at::Tensor& indices_, std::vector<int64_t> output_size,
                                               bool channels_last, bool wide, bool packs, int64_t offset) {
  const c10::MemoryFormat fmt = format(channels_last && self.dim() == 5);
  at::Tensor gi = host_result::result_at(self.sizes(), grad_output_.options(), fmt, offset);
  int64_t flag = kNone;
  if (gi.numel() == 0) return {gi, flag, false};
  const at::Tensor grad_output = flattenable(grad_output_, fmt);
  const at::Tensor indices = flattenable(indices_, fmt);
  const Geometry g = geometry(self, output_size);
  TORCH_CHECK(wide || fits_32bit({&grad_output, &indices, &gi}));
  const bool cl = fmt == c10::MemoryFormat::ChannelsLast3d && g.five;
  bool packed = false;
  with_index_type(!wide, [&](auto index_tag) {
    using index_t = decltype(index_tag);
    dispatch_by_size(grad_output.scalar_type(), [&](auto tag) {
      using T = decltype(tag);
      packed = packs && gather_packs<T>(g, gi, indices, cl);
      const T* go = static_cast<const T*>(grad_output.const_data_ptr());
      const int64_t* ix = indices.const_data_ptr<int64_t>();
      T* out = static_cast<T*>(gi.mutable_data_ptr());
      const auto gp = planes_of<index_t>(grad_output);
      const auto xp = planes_of<index_t>(indices);
      const Walk<index_t> walk(g.S, g.C);
      threads<index_t>(cl, packed ? gi.numel() / kGatherPack<T> : gi.numel(), [&](auto c, index_t q) {
        if (packed) {
          gather_pack<decltype(c)::value>(q, go, gp, ix, xp, out, walk, g.C, g.S, g.oS, &flag);
        } else {
          gather_element<decltype(c)::value>(q, go, gp, ix, xp, out, walk, g.C, g.S, g.oS, &flag);
        }
      });
    });
  });
  return {gi, flag, packed};
}

}  // namespace host_max_unpool
