import os

import pytest
import torch

# Index checks raise at the call on every device (docs/spec.md §7, "Index
# checks on CUDA"), as the contract tests expect, here and in the child
# processes tests start; tests/test_cuda.py switches to the default deferred
# mode where it tests that.
os.environ["TORCH_ACLNN_SYNC_INDEX_CHECKS"] = "1"

import torch_aclnn  # noqa: F401,E402  (loads the extension once, loudly)
from torch_aclnn import _loader  # noqa: E402

# Fixed seeds: CI is reproducible.
torch.manual_seed(0)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and _loader.has_cuda_kernels() else [])


def pytest_addoption(parser):
    parser.addoption(
        "--default-device", default=None, metavar="DEVICE",
        help="run every test inside `with torch.device(DEVICE)`, so tensors the tests create without an explicit "
             "device live there (e.g. `--default-device cuda` runs the per-family tests, written for CPU, on CUDA)")


def pytest_report_header(config):
    dev = config.getoption("--default-device")
    return [f"torch {torch.__version__}; torch_aclnn CPU kernels: {_loader.cpu_isa}; devices: {DEVICES}"
            + (f"; default device: {dev}" if dev else "")]


@pytest.fixture(autouse=True)
def _default_device(request):
    dev = request.config.getoption("--default-device")
    if dev is None:
        yield
        return
    with torch.device(dev):
        yield


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture(scope="session")
def emulation():
    """tests/cuda_host/module.cpp, built once with the host compiler: the CUDA
    kernels' per-element code on the host (tests/test_cuda_host_*.py)."""
    from torch.utils import cpp_extension

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build_dir = os.path.join(root, "build", "cuda_host_emulation")
    os.makedirs(build_dir, exist_ok=True)
    return cpp_extension.load(
        name="torch_aclnn_cuda_host_emulation",
        sources=[os.path.join(root, "tests", "cuda_host", "module.cpp")],
        extra_include_paths=[os.path.join(root, "csrc")],
        extra_cflags=["-std=c++20", "-O1", "-Wno-unknown-pragmas"],
        build_directory=build_dir,
        verbose=False,
    )
