"""The built extension modules share torch's C++ runtime.

Our contract checks throw c10::ValueError / IndexError / TypeError from our own
code (TORCH_CHECK_VALUE & co. throw inline, unlike TORCH_CHECK, which throws
from libc10). A module with a private, statically linked libstdc++ throws them
through another C++ runtime than the one torch catches them with; on a CUDA
image whose g++ links libstdc++ statically by default that segfaulted or
aborted the process on every contract error. setup.py links libstdc++ as a
shared library; this test checks the result in the ELF headers."""
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

import torch_aclnn

pytestmark = pytest.mark.skipif(platform.system() != "Linux", reason="ELF shared objects: Linux only")

MODULES = sorted(Path(torch_aclnn.__file__).parent.glob("_*.so"))


def _run(tool, *args):
    exe = shutil.which(tool)
    if exe is None:
        pytest.skip(f"{tool} (binutils) is not installed")
    return subprocess.run([exe, *args], capture_output=True, text=True, check=True).stdout


def test_modules_were_found():
    names = {p.name.split(".")[0] for p in MODULES}
    assert "_C" in names and any(n.startswith("_cpu_") for n in names), MODULES


@pytest.mark.parametrize("so", MODULES, ids=lambda p: p.name.split(".")[0])
def test_cxx_runtime_is_shared(so):
    needed = [line for line in _run("readelf", "-d", str(so)).splitlines() if "(NEEDED)" in line]
    assert any("libstdc++.so" in line for line in needed), f"{so.name} does not link libstdc++ dynamically"
    defined = _run("nm", "-D", "--defined-only", str(so))
    assert " __cxa_throw" not in defined, f"{so.name} carries its own C++ runtime (__cxa_throw)"


def test_a_contract_error_raises_in_a_child_process():
    """The throw itself, where a crash would not take the test runner down with it."""
    import sys
    code = ("import torch, torch_aclnn\n"
            "try:\n"
            "    torch.ops.torch_aclnn.upsample_nearest3d(torch.ones(2, 3, 4), [2, 2, 2])\n"
            "except ValueError as e:\n"
            "    print('raised', e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.startswith("raised [torch_aclnn 161002] upsample_nearest3d:"), proc.stdout
