// The contract of the upsample-nearest family (docs/spec.md §1 and §2): argument
// rules, the scale-selection rule and the source-index mapping. Every backend
// (CPU, CUDA, Meta, and the NPU glue through Meta) uses this header.
#pragma once

#include "common/contract.h"

#include <c10/core/MemoryFormat.h>
#include <c10/macros/Macros.h>

#include <cmath>
#include <optional>

namespace torch_aclnn::upsample {

enum class Mode { Nearest, NearestExact };

inline const char* forward_name(Mode m) {
  return m == Mode::Nearest ? "upsample_nearest3d" : "upsample_nearest_exact3d";
}
inline const char* backward_name(Mode m) {
  return m == Mode::Nearest ? "upsample_nearest3d_backward" : "upsample_nearest_exact3d_backward";
}

using Scale = std::optional<double>;
constexpr const char* kScaleNames[3] = {"scales_d", "scales_h", "scales_w"};
constexpr const char* kAxisNames[3] = {"D", "H", "W"};

// Scales are used all-or-nothing: only when all three are given and > 0.
inline bool use_scales(const Scale (&s)[3]) {
  return s[0].has_value() && s[1].has_value() && s[2].has_value() && *s[0] > 0. && *s[1] > 0. &&
         *s[2] > 0.;
}

// Which axes use their given scale (and must then agree with the sizes, row
// 10): all three or none for nearest (use_scales), axis by axis for trilinear
// (contracts/upsample_trilinear.h).
struct UsedScales {
  bool axis[3];
};
inline UsedScales all_or_nothing(const Scale (&s)[3]) {
  const bool u = use_scales(s);
  return {{u, u, u}};
}

// output_size, input_size (N, C, D, H, W) and the scales: the rules shared by
// the forward (input_size = self's shape) and the backward, of every upsample
// family.
inline void check_sizes(const char* op, c10::SymIntArrayRef output_size, c10::SymIntArrayRef input_size,
                        const Scale (&scales)[3], const char* input_name, UsedScales used) {
  ACLNN_CHECK_VALUE(output_size.size() == 3, op, "output_size must have 3 elements (D, H, W), got ",
                    output_size.size(), " (", fmt_list(output_size), ")");
  for (size_t i = 0; i < 3; ++i) {
    ACLNN_CHECK_VALUE(output_size[i] > 0, op, "output_size[", i, "] must be > 0, got ",
                      fmt_list(output_size));
  }
  ACLNN_CHECK_VALUE(input_size.size() == 5, op, input_name, " must have 5 elements (N, C, D, H, W), got ",
                    input_size.size(), " (", fmt_list(input_size), ")");
  ACLNN_CHECK_VALUE(input_size[0] >= 0 && input_size[1] >= 0, op, input_name,
                    " N and C must be >= 0, got ", fmt_list(input_size));
  for (size_t i = 2; i < 5; ++i) {
    ACLNN_CHECK_VALUE(input_size[i] > 0, op, input_name, "[", i, "] (", kAxisNames[i - 2],
                      ") must be > 0, got ", fmt_list(input_size));
  }
  for (size_t i = 0; i < 3; ++i) {
    ACLNN_CHECK_VALUE(!scales[i].has_value() || std::isfinite(*scales[i]), op, kScaleNames[i],
                      " must be finite (> 0 to use the scales, <= 0 or None to ignore them), got ", *scales[i]);
  }
  for (size_t i = 0; i < 3; ++i) {
    if (!used.axis[i]) continue;
    // output_size[i] == floor(input_size[2+i] * scale), written as two
    // comparisons so it also holds (as guards) for symbolic sizes.
    const c10::SymFloat prod = input_size[2 + i] * *scales[i];
    const c10::SymFloat out = output_size[i];
    const c10::SymFloat out_next = output_size[i] + 1;
    ACLNN_CHECK_VALUE(out <= prod && prod < out_next, op, "output_size[", i, "] must equal floor(",
                      input_name, "[", 2 + i, "] * ", kScaleNames[i], ") = floor(", val(input_size[2 + i]),
                      " * ", *scales[i], ") when ", used.axis[0] && used.axis[1] && used.axis[2] ? "all scales are" : "the scale is",
                      " given, got ", val(output_size[i]));
  }
}

// The memory format results are produced in: channels_last_3d when the
// reference tensor is, contiguous otherwise.
inline c10::MemoryFormat result_format(const at::Tensor& t) {
  return t.suggest_memory_format() == c10::MemoryFormat::ChannelsLast3d ? c10::MemoryFormat::ChannelsLast3d
                                                                        : c10::MemoryFormat::Contiguous;
}

using Plan = torch_aclnn::Plan<>;

// The result: (N, C, *output_size) in result_format(self). The rules of every
// upsample forward; op names the operator, used the axes whose scale counts.
inline Plan check_forward_sizes(const char* op, const at::Tensor& self, c10::SymIntArrayRef output_size,
                                const Scale (&scales)[3], UsedScales used) {
  const c10::Device device = one_device(op, {{"self", self}});
  check_dtype(op, "self", self.scalar_type());
  ACLNN_CHECK_VALUE(self.dim() == 5, op, "self must be 5-D (N, C, D, H, W), got ", self.dim(),
                    "-D with shape ", fmt_list(self.sym_sizes()));
  check_sizes(op, output_size, self.sym_sizes(), scales, "self.shape", used);
  const auto s = self.sym_sizes();
  Result r;
  r.sizes = {s[0], s[1], output_size[0], output_size[1], output_size[2]};
  check_fits_int64(op, "the result", r.sizes, c10::elementSize(self.scalar_type()));
  r.dtype = self.scalar_type();
  r.device = device;
  r.format = result_format(self);
  return {r};
}

template <Mode mode>
Plan check_forward(const at::Tensor& self, c10::SymIntArrayRef output_size, Scale sd, Scale sh, Scale sw) {
  const Scale scales[3] = {sd, sh, sw};
  return check_forward_sizes(forward_name(mode), self, output_size, scales, all_or_nothing(scales));
}

// The result: input_size in result_format(grad_output). out: grad_input of
// the out= overload, written in place when dense in that layout or the other
// 5-D one and sharing no memory with grad_output.
// The rules of every upsample backward.
inline Plan check_backward_sizes(const char* op, const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                 c10::SymIntArrayRef input_size, const Scale (&scales)[3], UsedScales used,
                                 const Out& out) {
  const at::Tensor& grad_input = out.tensor;
  const c10::Device device = one_device(op, {{"grad_output", grad_output}}, grad_input);
  check_dtype(op, "grad_output", grad_output.scalar_type());
  if (grad_input.defined()) {
    ACLNN_CHECK_TYPE(grad_input.scalar_type() == grad_output.scalar_type(), op,
                     "grad_input must have grad_output's dtype ", grad_output.scalar_type(), ", got ",
                     grad_input.scalar_type());
  }
  ACLNN_CHECK_VALUE(grad_output.dim() == 5, op, "grad_output must be 5-D (N, C, D, H, W), got ",
                    grad_output.dim(), "-D with shape ", fmt_list(grad_output.sym_sizes()));
  check_sizes(op, output_size, input_size, scales, "input_size", used);
  check_fits_int64(op, "grad_input", input_size, c10::elementSize(grad_output.scalar_type()));
  const auto go = grad_output.sym_sizes();
  for (size_t i = 0; i < 3; ++i) {
    ACLNN_CHECK_VALUE(go[2 + i] == output_size[i], op, "grad_output's D, H, W must equal output_size ",
                      fmt_list(output_size), ", got grad_output shape ", fmt_list(go));
  }
  ACLNN_CHECK_VALUE(go[0] == input_size[0] && go[1] == input_size[1], op,
                    "grad_output's N, C must equal input_size[0:2] = [", val(input_size[0]), ", ", val(input_size[1]),
                    "], got grad_output shape ", fmt_list(go));
  if (grad_input.defined()) {
    ACLNN_CHECK_VALUE(grad_input.dim() == 5, op, "grad_input must be 5-D (N, C, D, H, W), got ", grad_input.dim(),
                      "-D with shape ", fmt_list(grad_input.sym_sizes()));
    const auto gi = grad_input.sym_sizes();
    ACLNN_CHECK_VALUE(gi[0] == input_size[0] && gi[1] == input_size[1], op,
                      "grad_input's N, C must equal input_size[0:2] = [", val(input_size[0]), ", ", val(input_size[1]),
                      "], got grad_input shape ", fmt_list(gi));
    ACLNN_CHECK_VALUE(gi[2] == input_size[2] && gi[3] == input_size[3] && gi[4] == input_size[4], op,
                      "grad_input's D, H, W must equal input_size[2:5] = ", fmt_list(input_size.slice(2)),
                      ", got grad_input shape ", fmt_list(gi));
  }
  return {Result::grad_input(input_size, grad_output, device, result_format(grad_output))};
}

template <Mode mode>
Plan check_backward(const at::Tensor& grad_output, c10::SymIntArrayRef output_size, c10::SymIntArrayRef input_size,
                    Scale sd, Scale sh, Scale sw, Out out = {}) {
  const Scale scales[3] = {sd, sh, sw};
  return check_backward_sizes(backward_name(mode), grad_output, output_size, input_size, scales,
                              all_or_nothing(scales), out);
}

// ---------------------------------------------------------------------------
// The index mapping (§1, §2): one rule for forward and backward, every device.

// Per-axis float32 scale: 1/scale when the scales are used, in/out otherwise.
C10_HOST_DEVICE inline float axis_scale(bool use, double scale, int64_t in, int64_t out) {
  return use ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
}

template <Mode mode>
C10_HOST_DEVICE inline int64_t source_index(float s, int64_t dst, int64_t in) {
  int64_t src;
  if constexpr (mode == Mode::Nearest) {
    src = static_cast<int64_t>(floorf(static_cast<float>(dst) * s));
  } else {
    // (dst + 0.5) * s formed in double, rounded to float32, then floored.
    src = static_cast<int64_t>(floorf(static_cast<float>((static_cast<double>(dst) + 0.5) * s)));
  }
  return src < in - 1 ? src : in - 1;
}

// The sizes and float32 scales of the three spatial axes of one call: the
// host-side set-up every backend's kernels start from (a plain struct the
// CUDA kernels take by value).
struct Axes {
  int64_t in[3];
  int64_t out[3];
  float s[3];
};

inline Axes make_axes(at::IntArrayRef input_size, at::IntArrayRef output_size, const Scale (&scales)[3]) {
  Axes a;
  const bool use = use_scales(scales);
  for (int i = 0; i < 3; ++i) {
    a.in[i] = input_size[2 + i];
    a.out[i] = output_size[i];
    a.s[i] = axis_scale(use, use ? *scales[i] : 0.0, a.in[i], a.out[i]);
  }
  return a;
}

}  // namespace torch_aclnn::upsample
