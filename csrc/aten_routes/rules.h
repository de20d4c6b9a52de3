// The drop-in rule's tensor rules (docs/spec.md §8), in one place: the
// dtypes, ranks, sizes, layouts and Scalar ranges of the calls torch_aclnn
// computes in aten's place. routes.cpp applies them to aten's arguments;
// torch_aclnn/_dropin.py applies them to torch.nn.functional's, reading the
// tables below once through torch_aclnn._C._route_rules() (constants, so that
// torch.compile traces its decisions). tests/test_route_rules.py holds the
// two readings against each other through _C._route_takes().
#pragma once

#include "common/contract.h"
#include "contracts/elu.h"

#include <ATen/core/Tensor.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string_view>

namespace torch_aclnn::aten_routes {

// The dtypes routed (the contracts' floating dtypes) with their largest
// finite value: a loss's beta or delta beyond it is rounded to inf by aten.
struct RoutedDtype {
  at::ScalarType type;
  const char* name;  // as torch spells it
  double max;
};
inline constexpr RoutedDtype kRoutedDtypes[] = {
    {at::kFloat, "float32", FLT_MAX},
    {at::kDouble, "float64", DBL_MAX},
    {at::kHalf, "float16", 65504.0},
    {at::kBFloat16, "bfloat16", 3.3895313892515355e38},
};

constexpr bool same_as_contract_floating() {
  if (std::size(kRoutedDtypes) != kFloating.dtypes.size()) return false;
  for (const RoutedDtype& d : kRoutedDtypes) {
    bool found = false;
    for (at::ScalarType t : kFloatingDtypes) found = found || t == d.type;
    if (!found) return false;
  }
  return true;
}
static_assert(same_as_contract_floating(), "the routed dtypes are the contracts' floating dtypes");

inline const RoutedDtype* routed_dtype(at::ScalarType t) {
  for (const RoutedDtype& d : kRoutedDtypes) {
    if (d.type == t) return &d;
  }
  return nullptr;
}

// A Scalar argument of a call on a tensor other than float64 is routed when
// it is NaN or finite within float32's range (the kernels compute in float32
// there). The contracts also take +-inf; such calls stay aten's.
inline constexpr double kScalarLimit = FLT_MAX;

inline bool scalar_fits(at::ScalarType tensor, double v) {
  return tensor == at::kDouble || std::isnan(v) || std::fabs(v) <= kScalarLimit;
}

// Which inputs a family's routes take: per rank (0 to the contracts' 8 dims),
// the first axis that must not be empty, -1 where that rank is not routed.
struct InputRule {
  const char* name;
  int8_t nonempty_from[elu::kMaxDims + 1];
  // A 4-D input that is not contiguous must not have another axis than W
  // fastest (aten's CPU max_pool3d refuses a channels_last input, its CUDA
  // kernel keeps C fastest in its results).
  bool w_fastest_4d;
};
inline constexpr InputRule kInputRules[] = {
    // elu, leaky_relu, smooth_l1_loss: up to 8 dims, empty axes too
    {"elementwise", {0, 1, 2, 3, 4, 5, 6, 7, 8}, false},
    // nearest and trilinear upsampling: 5-D; aten refuses an empty C, D, H or W
    {"upsample", {-1, -1, -1, -1, -1, 1, -1, -1, -1}, false},
    // max_pool3d: (C, D, H, W) or (N, C, D, H, W); aten refuses an empty axis
    // but a 5-D input's N
    {"max_pool", {-1, -1, -1, -1, 0, 1, -1, -1, -1}, true},
    // avg_pool3d: as max_pool3d, in any layout (aten's results are contiguous)
    {"avg_pool", {-1, -1, -1, -1, 0, 1, -1, -1, -1}, false},
    // adaptive_avg_pool3d: 4-D or 5-D; aten refuses an empty axis but the first
    {"adaptive_pool", {-1, -1, -1, -1, 1, 1, -1, -1, -1}, false},
};

constexpr const InputRule* input_rule(std::string_view name) {
  for (const InputRule& r : kInputRules) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

inline bool routed(const at::Tensor& t) { return routed_dtype(t.scalar_type()) != nullptr; }

inline bool takes_input(const InputRule& rule, const at::Tensor& x) {
  if (!routed(x)) return false;
  const int64_t dim = x.dim();
  if (dim > elu::kMaxDims || rule.nonempty_from[dim] < 0) return false;
  for (int64_t i = rule.nonempty_from[dim]; i < dim; ++i) {
    if (x.size(i) <= 0) return false;
  }
  return !(rule.w_fastest_4d && dim == 4 && !x.is_contiguous() &&
           (x.is_contiguous(at::MemoryFormat::ChannelsLast) ||
            x.unsqueeze(0).is_contiguous(at::MemoryFormat::ChannelsLast3d)));
}

// smooth_l1_loss's (and huber_loss's) tensors and parameter: each an
// elementwise input; of one dtype where their shapes differ (aten promotes
// after broadcasting); both contiguous for reduction 'none' (aten's result
// follows their layout, torch_aclnn's is contiguous); 0 <= beta <= the dtype's
// largest value (aten rounds beta to the dtype).
inline bool takes_loss(const at::Tensor& x, const at::Tensor& y, int64_t reduction, double beta) {
  constexpr const InputRule& elementwise = *input_rule("elementwise");
  if (!takes_input(elementwise, x) || !takes_input(elementwise, y)) return false;
  if (x.sizes() != y.sizes() && x.scalar_type() != y.scalar_type()) return false;
  if (reduction == 0 && !(x.is_contiguous() && y.is_contiguous())) return false;
  return beta >= 0 && beta <= routed_dtype(x.scalar_type())->max;
}

}  // namespace torch_aclnn::aten_routes
