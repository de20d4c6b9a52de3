"""The command line: --help texts, info (text and JSON), argument errors, and
the `torch-aclnn` console script declared in pyproject.toml."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torch_aclnn._registry import OPERATORS
from torch_aclnn.__main__ import build_parser, info_rows, main

ROOT = Path(__file__).resolve().parents[1]


def _help(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 0
    return capsys.readouterr().out


def test_help_texts_have_examples(capsys):
    top = _help(["--help"], capsys)
    assert "examples:" in top and "python -m torch_aclnn check" in top and "torch_aclnn.patch()" in top
    for command in ("check", "info", "bench"):
        text = _help([command, "--help"], capsys)
        assert "examples:" in text and f"python -m torch_aclnn {command}" in text


def test_bad_arguments_exit_2(capsys):
    for argv in ([], ["frobnicate"], ["check", "--dtype", "complex32"], ["check", "--jobs", "0"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
    assert main(["check", "--op", "no_such_op"]) == 2
    assert "unknown operator" in capsys.readouterr().err


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for key in ("torch_aclnn", "torch", "CPU kernels loaded", "CPU kernels built", "CUDA kernels compiled in",
                "torch_npu", "Ascend NPU available", "patch() level", "patch() routes", "upsample_nearest3d_backward"):
        assert key in out, key
    assert main(["info", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data.keys() == dict(info_rows()).keys()
    assert "cpu" in data["operators"]["max_unpool3d_backward"] and "meta" in data["operators"]["elu"]
    assert sorted(data["operators"]) == sorted(OPERATORS)
    # The NPU kernels are registered everywhere; without an NPU they are marked unusable.
    elu = data["operators"]["elu"]
    if data["Ascend NPU available"] == "True":
        assert "npu" in elu and "unusable" not in elu
    else:
        assert "npu (registered, unusable: no NPU" in elu


def test_console_script_declared():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        pytest.skip("tomllib needs Python 3.11")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["torch-aclnn"] == "torch_aclnn.__main__:main"
    assert build_parser().prog == "python -m torch_aclnn"


def test_console_script_runs():
    script = shutil.which("torch-aclnn", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("torch-aclnn is not installed in this environment (pip install -e . installs it)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([script, "info"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "CPU kernels loaded" in out.stdout
    out = subprocess.run([script, "--help"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("usage: torch-aclnn ")
