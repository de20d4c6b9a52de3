"""torch_npu is optional and its import is guarded: a broken or CANN-less
torch_npu never breaks `import torch_aclnn` (each case in a new Python)."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

from torch_aclnn import npu

from npu_path import _fresh_warnings  # noqa: F401  (an autouse fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------
# torch_npu is optional and its import is guarded.

_FAKE = {
    "ImportError": "raise ImportError('libhccl.so: cannot open shared object file')",
    "OSError": "raise OSError('libascendcl.so: wrong ELF class')",
    "SystemExit": "import sys; sys.exit('torch_npu 2.1 does not support this torch')",
    "RuntimeError": "raise RuntimeError('CANN version mismatch')",
}


def _run_python(code, env_extra, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]), **env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("failure", list(_FAKE))
def test_broken_torch_npu_never_breaks_import(tmp_path, failure):
    """A torch_npu whose import fails (missing CANN libraries, an old build
    calling sys.exit, ...) leaves `import torch_aclnn` working, the NPU
    path unavailable with the reason, and the kernels registered."""
    pkg = tmp_path / "torch_npu"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(_FAKE[failure] + "\n")
    r = _run_python("""
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch, torch_aclnn
        import torch_aclnn.npu as npu
        assert torch_aclnn.__file__.startswith(%r), torch_aclnn.__file__
        assert not npu.is_available()
        print("REASON", npu.unavailable_reason())
        print("WARNED", any("torch_npu is installed but unusable" in str(w.message) for w in caught))
        print("KERNEL", torch._C._dispatch_has_kernel_for_dispatch_key("torch_aclnn::elu", "PrivateUse1"))
        x = torch.randn(2, 3)
        print("CPU", torch.allclose(torch_aclnn.elu(x), torch.nn.functional.elu(x)))
    """ % ROOT, {}, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"REASON import torch_npu failed: {failure}" in r.stdout, r.stdout
    assert "WARNED True" in r.stdout and "KERNEL True" in r.stdout and "CPU True" in r.stdout, r.stdout


def test_autoload_disabled_defers_the_import(tmp_path):
    """With TORCH_DEVICE_BACKEND_AUTOLOAD=0, `import torch_aclnn` does not
    import torch_npu; is_available() tries (guarded) and reports why not.
    sys.modules['torch_npu'] = None (an import that must fail) is handled too."""
    r = _run_python("""
        import sys
        import torch_aclnn
        assert "torch_npu" not in sys.modules
        sys.modules["torch_npu"] = None
        assert torch_aclnn.npu.is_available() is False
        print("REASON", torch_aclnn.npu.unavailable_reason())
    """, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "REASON import torch_npu failed: ModuleNotFoundError" in r.stdout or \
        "REASON import torch_npu failed: ImportError" in r.stdout, r.stdout


# As the real torch_npu 2.14.0 is without CANN (checked for real by
# tests/compat/test_npu_import.py): registered for torch's device-backend
# autoload, it switches the autoload off, imports torch, then fails.
_AUTOLOADED = """
import os
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
import torch
raise ImportError("libhccl.so: cannot open shared object file: No such file or directory")
"""


def test_autoloaded_torch_npu_without_cann(tmp_path):
    """A plain `import torch` fails (torch's autoload turns torch_npu's
    ImportError into RuntimeError); `import torch_aclnn` imports torch_npu
    first, so torch imports, the reason is kept, and the autoload switch that
    torch_npu left at "0" is put back."""
    (tmp_path / "torch_npu").mkdir()
    (tmp_path / "torch_npu" / "__init__.py").write_text(_AUTOLOADED)
    dist = tmp_path / "torch_npu-2.14.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.14.0\n")
    (dist / "entry_points.txt").write_text("[torch.backends]\ntorch_npu = torch_npu:_autoload\n")
    on = {"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}
    r = _run_python("import torch", on, tmp_path)
    assert r.returncode != 0 and "Failed to load the backend extension: torch_npu" in r.stderr, r.stderr
    r = _run_python("""
        import os, warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch_aclnn
        import torch
        print("REASON", torch_aclnn.npu.unavailable_reason())
        print("WARNED", any("torch_npu is installed but unusable" in str(w.message) for w in caught))
        print("AUTOLOAD", os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD"))
        x = torch.randn(2, 3)
        print("CPU", torch.allclose(torch_aclnn.elu(x), torch.nn.functional.elu(x)))
    """, on, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "REASON import torch_npu failed: ImportError: libhccl.so: cannot open shared object file" in r.stdout
    assert "WARNED True" in r.stdout and "AUTOLOAD 1" in r.stdout and "CPU True" in r.stdout, r.stdout
    r = _run_python("import sys; from torch_aclnn.__main__ import main; sys.exit(main(['info']))", on, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"torch_npu +2\.14\.0", r.stdout), r.stdout
    assert re.search(r"Ascend NPU available +False \(import torch_npu failed: ImportError: libhccl\.so", r.stdout)


def test_check_report_refuses_an_unavailable_npu():
    from torch_aclnn import __main__ as cli
    if npu.is_available():
        pytest.skip("an NPU is available")
    assert cli.main(["check", "--device", "npu", "--op", "elu"]) == 2
