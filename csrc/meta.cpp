// Meta kernels (fake tensors, torch.compile, and the NPU glue's validation):
// every operator's contract (csrc/contracts/<family>.h) and its result's spec
// through the generic entries (common/entry.h), nothing computed. The
// results so have the shape, dtype, device and strides the CPU and CUDA
// kernels allocate. Data-dependent rules (max_unpool's index range) are
// checked by the real kernels only.
#include "common/entry.h"
#include "contracts/avg_pool.h"
#include "contracts/adaptive_avg_pool.h"
#include "contracts/elu.h"
#include "contracts/leaky_relu.h"
#include "contracts/max_pool.h"
#include "contracts/max_unpool.h"
#include "contracts/smooth_l1.h"
#include "contracts/upsample.h"
#include "contracts/upsample_trilinear.h"

#include <torch/library.h>

namespace torch_aclnn {

TORCH_LIBRARY_IMPL(torch_aclnn, Meta, m) {
  using upsample::Mode;
  constexpr Mode N = Mode::Nearest, E = Mode::NearestExact;
  entry::impl<entry::Meta, upsample::check_forward<N>>(m, "upsample_nearest3d");
  entry::impl<entry::Meta, upsample::check_backward<N>>(m, "upsample_nearest3d_backward");
  entry::impl<entry::Meta, upsample::check_forward<E>>(m, "upsample_nearest_exact3d");
  entry::impl<entry::Meta, upsample::check_backward<E>>(m, "upsample_nearest_exact3d_backward");
  entry::impl<entry::Meta, elu::check_forward>(m, "elu");
  entry::impl<entry::Meta, elu::check_backward>(m, "elu_backward");
  entry::impl<entry::Meta, smooth_l1::check_forward>(m, "smooth_l1_loss");
  entry::impl<entry::Meta, smooth_l1::check_backward>(m, "smooth_l1_loss_backward");
  entry::impl<entry::Meta, max_unpool::check_forward>(m, "max_unpool3d");
  entry::impl<entry::Meta, max_unpool::check_backward>(m, "max_unpool3d_backward");
  entry::impl<entry::Meta, max_pool::check_forward>(m, "max_pool3d_with_indices");
  entry::impl<entry::Meta, max_pool::check_backward>(m, "max_pool3d_with_indices_backward");
  entry::impl<entry::Meta, leaky_relu::check_forward>(m, "leaky_relu");
  entry::impl<entry::Meta, leaky_relu::check_backward>(m, "leaky_relu_backward");
  entry::impl<entry::Meta, upsample_trilinear::check_forward>(m, upsample_trilinear::kForward);
  entry::impl<entry::Meta, upsample_trilinear::check_backward>(m, upsample_trilinear::kBackward);
  entry::impl<entry::Meta, avg_pool::check_forward>(m, "avg_pool3d");
  entry::impl<entry::Meta, avg_pool::check_backward>(m, "avg_pool3d_backward");
  entry::impl<entry::Meta, adaptive_avg_pool::check_forward>(m, "adaptive_avg_pool3d");
  entry::impl<entry::Meta, adaptive_avg_pool::check_backward>(m, "adaptive_avg_pool3d_backward");
}

}  // namespace torch_aclnn
