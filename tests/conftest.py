import os

import pytest
import torch

import torch_aclnn  # noqa: F401  (loads the extension once, loudly)
from torch_aclnn import _loader

# Fixed seeds: CI is reproducible.
torch.manual_seed(0)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and _loader.has_cuda_kernels() else [])


def pytest_report_header(config):
    return [f"torch {torch.__version__}; torch_aclnn CPU kernels: {_loader.cpu_isa}; devices: {DEVICES}"]


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
