"""The package as pip builds it (run by `make compat`, .ci/compat, against a
wheel built from the sdist of a clean clone and installed in a fresh venv)."""
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import torch

import torch_aclnn


def _tracked(source):
    out = subprocess.run(["git", "-C", source, "ls-files", "csrc", "torch_aclnn", "setup.py", "pyproject.toml",
                          "MANIFEST.in", "README.md"], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_sdist_holds_every_source_file(compat_env):
    source, sdist = compat_env("SOURCE"), compat_env("SDIST")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = sorted(_tracked(source) - names)
    assert not missing, f"not in {Path(sdist).name}: {missing}"
    assert any(n.startswith("csrc/compat/") for n in names)
    assert not [n for n in names if n.endswith((".so", "_build_info.json"))], names


def test_wheel_holds_the_modules_and_the_torch_it_was_built_with(compat_env):
    source, wheel = compat_env("SOURCE"), compat_env("WHEEL")
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        info = json.loads(whl.read("torch_aclnn/_build_info.json"))
    assert info == {"torch": torch.__version__}
    modules = {n.split(".")[0] for n in names if n.endswith(".so")}
    assert "torch_aclnn/_C" in modules and any(m.startswith("torch_aclnn/_cpu_") for m in modules), modules
    python = {n for n in _tracked(source) if n.startswith("torch_aclnn/") and n.endswith(".py")}
    assert not sorted(python - names), sorted(python - names)


def test_the_tests_import_the_installed_wheel(compat_env):
    source = Path(compat_env("SOURCE")).resolve()
    here = Path(torch_aclnn.__file__).resolve()
    assert source not in here.parents, here


def test_a_build_for_another_torch_is_refused_at_import(compat_env, tmp_path):
    """Each wheel built against another torch release, imported under this
    one: the loader's ImportError names both versions and how to rebuild,
    before any .so is loaded (no undefined-symbol error)."""
    wheels = [w for w in compat_env("OTHER_WHEELS").split(os.pathsep) if w]
    for i, wheel in enumerate(wheels):
        target = tmp_path / str(i)
        with zipfile.ZipFile(wheel) as whl:
            whl.extractall(target)
            built = json.loads(whl.read("torch_aclnn/_build_info.json"))["torch"]
        assert built.split("+")[0] != torch.__version__.split("+")[0], (wheel, built)
        r = subprocess.run([sys.executable, "-c", "import torch_aclnn"], cwd=target, capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(target)), timeout=300)
        assert r.returncode != 0, r.stdout
        last = r.stderr.strip().splitlines()
        message = "\n".join(last[-4:])
        print(f"{Path(wheel).parent.name} under torch {torch.__version__}:\n{message}")
        assert f"ImportError: torch_aclnn's C++ extension was built against torch {built}, but this Python " \
               f"imports torch {torch.__version__}" in r.stderr, r.stderr
        assert "Rebuild it with this torch" in r.stderr and "pip install --no-build-isolation -e ." in r.stderr
        assert "undefined symbol" not in r.stderr, r.stderr
