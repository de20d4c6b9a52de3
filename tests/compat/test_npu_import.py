"""The real torch_npu package, without CANN (run by `make npu-import-check`,
.ci/compat --npu, in a venv with torch 2.14.0, torch_npu 2.14.0 and a
torch_aclnn built against that torch; skipped where torch_npu is not
installed). With TORCH_DEVICE_BACKEND_AUTOLOAD=1 and =0: `import torch_aclnn`
works, `python -m torch_aclnn info` says the NPU is unavailable and why, and
the CPU operators pass `check --quick`. Each check runs in a new Python."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from compat_util import need



@pytest.fixture(autouse=True, scope="module")
def _torch_npu_installed():
    need(importlib.util.find_spec("torch_npu") is not None, "torch_npu is not installed")


def _run(autoload, *args, timeout=600):
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD=autoload)
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout)
    print(f"$ TORCH_DEVICE_BACKEND_AUTOLOAD={autoload} python {' '.join(args)}\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r


def test_plain_import_torch_fails_under_autoload():
    """Why torch_aclnn imports torch_npu before torch: torch's own autoload
    turns torch_npu's failure into a failed `import torch`."""
    r = _run("1", "-c", "import torch")
    assert r.returncode != 0 and "Failed to load the backend extension: torch_npu" in r.stderr


@pytest.mark.parametrize("autoload", ["1", "0"])
def test_import_and_info(autoload):
    r = _run(autoload, "-c", "import torch_aclnn, torch; print('OK', torch.__version__, torch_aclnn.__file__)")
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    r = _run(autoload, "-m", "torch_aclnn", "info")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^torch_npu +2\.14\.0", r.stdout, re.M), r.stdout
    # The real reason, torch_npu's own exception (without CANN: ImportError: libhccl.so: cannot open ...).
    assert re.search(r"^Ascend NPU available +False \(import torch_npu failed: \w+: \S.*\)$", r.stdout, re.M), r.stdout
    assert "npu (registered, unusable: no NPU" in r.stdout


@pytest.mark.parametrize("autoload", ["1", "0"])
def test_cpu_operators_are_unaffected(autoload):
    r = _run(autoload, "-m", "torch_aclnn", "check", "--quick", "--dtype", "float32")
    assert r.returncode == 0 and "ALL PASSED" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
