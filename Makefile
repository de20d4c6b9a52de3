# torch_aclnn — set-up and the main jobs. Every target creates .venv if
# needed, installs torch (the CPU build on this machine's disk) and builds
# the extension against it.
PY      ?= python3
VENV    ?= .venv
VPY     := $(VENV)/bin/python
PIP     := $(VPY) -m pip
TORCH   ?= torch==2.13.0
# (the stamp is renamed when the list of packages grows, so an older venv gets them)
STAMP   := $(VENV)/.deps-installed-2
PYTEST_ARGS ?=
# pytest-xdist workers for make test / test-fast (each test is independent; most are
# single-threaded Python, so two workers keep both cores of a small machine busy).
TEST_JOBS ?= 2
BENCH_ARGS ?=
# The CUDA build check: its own venv with a CUDA build of torch (kept between
# runs) and its own build dir (build-cuda/).
CUDA_VENV  ?= $(CURDIR)/.venv-cuda
CUDA_TORCH ?= torch==2.14.1
# make compat: the oldest supported torch and the newest release, each in its
# own venv under $(COMPAT_DIR) (kept between runs); see .ci/compat and
# docs/compat.md.
COMPAT_DIR   ?= $(CURDIR)/.venv-compat
COMPAT_TORCH ?= 2.8.0 2.15.0

.PHONY: all venv build build-cuda test test-fast fuzz asan check bench compat npu-import-check clean

all: test

$(STAMP):
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q "$(TORCH)" numpy pytest pytest-xdist hypothesis expecttest ninja
	touch $(STAMP)

venv: $(STAMP)

# The package, installed once as editable (it points at this tree; no compile:
# TORCH_ACLNN_PACKAGE_ONLY), so that `torch-aclnn` and `import torch_aclnn` work
# from anywhere in the venv.
EDITABLE := $(VENV)/.editable-installed
$(EDITABLE): $(STAMP) setup.py pyproject.toml
	TORCH_ACLNN_PACKAGE_ONLY=1 $(PIP) install -q --no-build-isolation --no-deps -e .
	touch $(EDITABLE)

# The extensions, compiled in place (torch_aclnn/*.so) with their objects kept
# in build/: ninja recompiles only what changed (headers included), so a second
# target, or a build with nothing changed, takes seconds. ccache, where it is
# installed, also keeps objects across clean trees and clones.
CCACHE_BIN ?= $(firstword $(wildcard /usr/lib/ccache /usr/lib64/ccache /usr/local/opt/ccache/libexec))
CCACHE_BASEDIR ?= $(CURDIR)
BUILD_ENV  := $(if $(CCACHE_BIN),PATH="$(CCACHE_BIN):$$PATH" CCACHE_BASEDIR="$(CCACHE_BASEDIR)" CCACHE_NOHASHDIR=1)
# CPU_ISAS: the instruction-set variants of the CPU kernels to build (setup.py's
# TORCH_ACLNN_CPU_ISAS); empty, all of them. make check builds only the one the
# loader imports on this machine ("aten"); make test, which tests all three,
# then compiles only the other two.
CPU_ISAS ?=
build: $(EDITABLE)
	$(BUILD_ENV) $(if $(CPU_ISAS),TORCH_ACLNN_CPU_ISAS=$(CPU_ISAS)) $(VPY) setup.py -q build_ext --inplace

# Compiles and links the CUDA kernels against torch $(CUDA_TORCH) and imports
# the result (needs nvcc, not a GPU; without a CUDA toolkit: a note, no
# failure). The CPU build above is left untouched. See .ci/build-cuda.
build-cuda:
	CUDA_VENV="$(CUDA_VENV)" CUDA_TORCH="$(CUDA_TORCH)" PY="$(PY)" .ci/build-cuda

# The whole suite, slow-marked tests included (they fit in CI's time), after
# the CUDA build check.
test: build build-cuda
	$(VPY) -m pytest -q -n $(TEST_JOBS) $(PYTEST_ARGS)

test-fast: build
	$(VPY) -m pytest -q -n $(TEST_JOBS) -m "not slow" $(PYTEST_ARGS)

# Property-based tests with many more examples than make test's "ci" profile.
fuzz: build
	TORCH_ACLNN_HYPOTHESIS_PROFILE=fuzz $(VPY) -m pytest -q tests/test_fuzz.py --hypothesis-show-statistics $(PYTEST_ARGS)

# AddressSanitizer + UBSan: a copy of the sources built with TORCH_ACLNN_ASAN=1
# in $(ASAN_DIR) (the in-place .so files stay as they are), then the reference
# and contract-error tests, the adversarial set and the torch.func / out= autograd
# tests run against it. libstdc++ is
# preloaded after libasan so ASan's __cxa_throw interceptor finds the real one
# (python itself does not link libstdc++); allocator_may_return_null lets the
# adversarial set's unallocatable sizes fail as in a normal build.
ASAN_DIR  ?= build/asan
ASAN_TESTS ?= tests/test_common.py tests/test_adversarial.py tests/test_adversarial_wrappers.py \
	tests/test_adversarial_devices.py tests/test_adversarial_out.py tests/test_upsample.py tests/test_elu.py \
	tests/test_max_unpool.py tests/test_max_pool.py tests/test_streaming.py tests/test_forward_ad.py \
	tests/test_patch_dispatcher.py tests/test_direct_call.py \
	-k "reference or contract_error or matches_torch \
	or adversarial or long_rows or vector_and_tail or halving or empty_depth or packed_lanes or window \
	or (streaming and native) or larger_than_the_cache or func_transforms or vmap or out_overload \
	or tangent_only or patch_dispatcher or direct_call or first_bad_index or thread_count or three_terms or whole_vectors \
	or past_the_table"
# Only the CPU kernels of the instruction set the loader picks on this machine
# (aten's own choice): a third of the build time.
ASAN_ISA  ?= aten
asan: $(STAMP)
	rm -rf $(ASAN_DIR)/tree && mkdir -p $(ASAN_DIR)/tree
	cp -r setup.py pyproject.toml csrc torch_aclnn tests $(ASAN_DIR)/tree/
	find $(ASAN_DIR)/tree \( -name '*.so' -o -name __pycache__ \) -prune -exec rm -rf {} +
	cd $(ASAN_DIR)/tree && TORCH_ACLNN_ASAN=1 TORCH_ACLNN_CPU_ISAS=$(ASAN_ISA) $(abspath $(VPY)) setup.py -q build_ext --inplace \
		--build-temp $(abspath $(ASAN_DIR))/temp --build-lib $(abspath $(ASAN_DIR))/lib
	cd $(ASAN_DIR)/tree && LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" \
		ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(abspath $(VPY)) -m pytest -q -p no:cacheprovider $(ASAN_TESTS) $(PYTEST_ARGS)

check: CPU_ISAS = aten
check: build
	$(VPY) -m torch_aclnn check

# Full suite (several minutes): table, JSON and chart in benchmarks/results/.
# BENCH_ARGS=--quick for a < 1 minute run.
bench: build
	$(PIP) install -q matplotlib
	$(VPY) -m torch_aclnn bench --out benchmarks/results $(BENCH_ARGS)

# npu-import-check, then for each of $(COMPAT_TORCH), on the committed HEAD:
# a wheel built from the sdist of a clean clone, installed into a fresh venv
# (torch and numpy only), passes `check --quick`; the core suite passes
# against it; and the builds for the other torch releases (npu-import-check's
# 2.14.0 included) fail at import with both versions named. Not part of
# make test (minutes of build per version).
compat:
	COMPAT_DIR="$(COMPAT_DIR)" PY="$(PY)" .ci/compat --npu $(COMPAT_TORCH)

# The real torch_npu 2.14.0 (no CANN here) beside a build against torch
# 2.14.0: import, info and the CPU operators with the device-backend autoload
# on and off (tests/compat/test_npu_import.py; fails if torch_npu is missing).
npu-import-check:
	COMPAT_DIR="$(COMPAT_DIR)" PY="$(PY)" .ci/compat --npu

clean:
	rm -rf build build-cuda *.egg-info torch_aclnn/*.so
