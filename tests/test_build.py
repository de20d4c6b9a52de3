"""The built extension modules share torch's C++ runtime.

Our contract checks throw c10::ValueError / IndexError / TypeError from our own
code (TORCH_CHECK_VALUE & co. throw inline, unlike TORCH_CHECK, which throws
from libc10). A module with a private, statically linked libstdc++ throws them
through another C++ runtime than the one torch catches them with; on a CUDA
image whose g++ links libstdc++ statically by default that segfaulted or
aborted the process on every contract error. setup.py links libstdc++ as a
shared library; these tests check its flags through such a driver, the
result in the ELF headers, and a contract error raised in a child process."""
import importlib.util
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

import torch_aclnn

pytestmark = pytest.mark.skipif(platform.system() != "Linux", reason="ELF shared objects: Linux only")

ROOT = Path(__file__).resolve().parent.parent
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


def test_link_flags_get_a_shared_runtime_through_a_static_only_driver(tmp_path):
    """setup.py's flags, through a g++ whose own library directory holds only
    libstdc++.a (as a CUDA image's wrapper had it: there, -Bdynamic -lstdc++
    links the archive): the linked object still needs libstdc++.so."""
    gxx = shutil.which("g++")
    archive = subprocess.run([gxx, "-print-file-name=libstdc++.a"], capture_output=True, text=True).stdout.strip() \
        if gxx else ""
    if not Path(archive).is_absolute():
        pytest.skip("needs g++ and its libstdc++.a")
    (tmp_path / "libstdc++.a").symlink_to(archive)
    spec = importlib.util.spec_from_file_location("torch_aclnn_setup", ROOT / "setup.py")
    setup_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup_py)  # defines the helpers; setup() runs only as __main__
    src = tmp_path / "t.cpp"
    src.write_text('#include <stdexcept>\nvoid f(int x) { if (x) throw std::invalid_argument("x"); }\n')
    for name, flags in (("plain", ["-lstdc++"]), ("ours", setup_py.cxx_runtime_flags())):
        so = tmp_path / f"{name}.so"
        subprocess.run([gxx, f"-B{tmp_path}/", "-fPIC", "-shared", str(src), "-o", str(so), *flags], check=True)
        needed = "libstdc++.so" in _run("readelf", "-d", str(so))
        # The driver does reproduce the problem (plain flags link the archive); ours do not.
        assert needed == (name == "ours"), (name, flags)


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


def test_build_records_its_torch():
    """setup.py writes the torch it built against next to the modules."""
    import json

    info = Path(torch_aclnn.__file__).with_name("_build_info.json")
    assert info.is_file(), "the build did not record its torch (setup.py's BuildWithInfo)"
    import torch

    assert json.loads(info.read_text())["torch"].split("+")[0] == torch.__version__.split("+")[0]


def test_build_for_another_torch_is_refused_at_import(tmp_path):
    """A build recorded for another torch release fails at import with a
    message naming both versions and how to rebuild, before any .so is
    loaded (a real mismatch would otherwise fail on an undefined symbol, or
    crash). Another local build of the same release (+cpu, +cu130) loads."""
    import sys

    import torch
    from torch_aclnn import _loader

    _loader.check_build(torch.__version__.split("+")[0] + "+cu999")  # same release: accepted
    with pytest.raises(ImportError, match=r"(?s)built against torch 1\.13\.1, but this Python imports torch "
                                          + torch.__version__.replace("+", r"\+") + r".*pip install --no-build"):
        _loader.check_build("1.13.1")
    # End to end: the package's Python files with a record for another torch.
    pkg = Path(torch_aclnn.__file__).parent
    shutil.copytree(pkg, tmp_path / "torch_aclnn", ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    (tmp_path / "torch_aclnn" / "_build_info.json").write_text('{"torch": "2.6.0"}\n')
    r = subprocess.run([sys.executable, "-c", "import torch_aclnn"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "ImportError: torch_aclnn's C++ extension was built against torch 2.6.0" in r.stderr, r.stderr
