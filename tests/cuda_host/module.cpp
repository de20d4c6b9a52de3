// One host-compiled module (one compilation of the torch headers) holding
// the emulation of every CUDA family (and of the deferred index checks,
// tests/cuda_host/deferred.h): tests/cuda_host/<family>.h runs the
// per-element code of csrc/cuda/<family>.cuh on the host, exposed here as the
// submodule <family> (the one place that lists what Python sees). Built by
// tests/conftest.py for tests/test_cuda_host_*.py.
#include <torch/extension.h>

#include "avg_pool.h"
#include "adaptive_avg_pool.h"
#include "deferred.h"
#include "elu.h"
#include "leaky_relu.h"
#include "max_pool.h"
#include "max_unpool.h"
#include "smooth_l1.h"
#include "upsample.h"
#include "upsample_trilinear.h"

namespace {

// Submodule `name` of m with a family's forward and backward.
template <typename Forward, typename Backward>
pybind11::module_ family(pybind11::module_& m, const char* name, Forward forward, Backward backward) {
  pybind11::module_ sub = m.def_submodule(name);
  sub.def("forward", forward);
  sub.def("backward", backward);
  return sub;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  auto deferred = m.def_submodule("deferred");
  deferred_emulation::register_deferred(deferred);
  family(m, "avg_pool", &host_avg_pool::forward, &host_avg_pool::backward);
  family(m, "adaptive_avg_pool", &host_adaptive_avg_pool::forward, &host_adaptive_avg_pool::backward);
  family(m, "elu", &host_elu::forward, &host_elu::backward);
  family(m, "leaky_relu", &host_leaky_relu::forward, &host_leaky_relu::backward);
  family(m, "upsample_trilinear", &host_upsample_trilinear::forward, &host_upsample_trilinear::backward);
  auto max_pool = family(m, "max_pool", &host_max_pool::forward, &host_max_pool::backward);
  max_pool.def("backward_layout", &host_max_pool::backward_layout);
  max_pool.def("taps", &host_max_pool::taps);
  max_pool.attr("NONE") = torch_aclnn::cuda::kNone;
  family(m, "max_unpool", &host_max_unpool::forward, &host_max_unpool::backward).attr("NONE") =
      torch_aclnn::cuda::kNone;
  auto upsample = family(m, "upsample", &host_upsample::forward, &host_upsample::backward);
  upsample.def("window_table", &host_upsample::window_table);
  upsample.def("backward_path", &host_upsample::backward_path_of);
  auto smooth_l1 = m.def_submodule("smooth_l1");
  smooth_l1.def("loss_none", &host_smooth_l1::loss_none);
  smooth_l1.def("grad", &host_smooth_l1::grad);
}
