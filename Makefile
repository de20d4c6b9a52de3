# torch_aclnn — set-up and the main jobs. Every target creates .venv if
# needed, installs torch (the CPU build on this machine's disk) and builds
# the extension against it.
PY      ?= python3
VENV    ?= .venv
VPY     := $(VENV)/bin/python
PIP     := $(VPY) -m pip
TORCH   ?= torch==2.13.0
STAMP   := $(VENV)/.deps-installed
PYTEST_ARGS ?=
BENCH_ARGS ?=
# The CUDA build check: its own venv with a CUDA build of torch (kept between
# runs) and its own build dir (build-cuda/).
CUDA_VENV  ?= $(CURDIR)/.venv-cuda
CUDA_TORCH ?= torch==2.14.1

.PHONY: all venv build build-cuda test test-fast check bench clean

all: test

$(STAMP):
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	$(PIP) install -q "$(TORCH)" numpy pytest hypothesis expecttest ninja
	touch $(STAMP)

venv: $(STAMP)

# Rebuilds only what changed (ninja); the editable install points at this tree.
build: $(STAMP)
	$(PIP) install -q --no-build-isolation -e .

# Compiles and links the CUDA kernels against torch $(CUDA_TORCH) and imports
# the result (needs nvcc, not a GPU; without a CUDA toolkit: a note, no
# failure). The CPU build above is left untouched. See .ci/build-cuda.
build-cuda:
	CUDA_VENV="$(CUDA_VENV)" CUDA_TORCH="$(CUDA_TORCH)" PY="$(PY)" .ci/build-cuda

# The whole suite, slow-marked tests included (they fit in CI's time), after
# the CUDA build check.
test: build build-cuda
	$(VPY) -m pytest -q $(PYTEST_ARGS)

test-fast: build
	$(VPY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

check: build
	$(VPY) -m torch_aclnn check

# Full suite (several minutes): table, JSON and chart in benchmarks/results/.
# BENCH_ARGS=--quick for a < 1 minute run.
bench: build
	$(PIP) install -q matplotlib
	$(VPY) -m torch_aclnn bench $(BENCH_ARGS)

clean:
	rm -rf build build-cuda *.egg-info torch_aclnn/*.so
