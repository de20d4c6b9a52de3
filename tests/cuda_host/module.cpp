// One host-compiled module (one compilation of the torch headers) holding
// the emulation of every CUDA family (and of the deferred index checks,
// tests/cuda_host/deferred.h): tests/cuda_host/<family>.h runs the
// per-element code of csrc/cuda/<family>.cuh on the host, exposed here as the
// submodule <family>. Built by tests/test_cuda_host_emulation.py.
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

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  auto deferred = m.def_submodule("deferred");
  deferred_emulation::register_deferred(deferred);
  auto avg_pool = m.def_submodule("avg_pool");
  register_avg_pool(avg_pool);
  auto adaptive_avg_pool = m.def_submodule("adaptive_avg_pool");
  register_adaptive_avg_pool(adaptive_avg_pool);
  auto elu = m.def_submodule("elu");
  register_elu(elu);
  auto max_pool = m.def_submodule("max_pool");
  register_max_pool(max_pool);
  auto max_unpool = m.def_submodule("max_unpool");
  register_max_unpool(max_unpool);
  auto smooth_l1 = m.def_submodule("smooth_l1");
  register_smooth_l1(smooth_l1);
  auto upsample = m.def_submodule("upsample");
  register_upsample(upsample);
  auto leaky_relu = m.def_submodule("leaky_relu");
  register_leaky_relu(leaky_relu);
  auto upsample_trilinear = m.def_submodule("upsample_trilinear");
  register_upsample_trilinear(upsample_trilinear);
}
