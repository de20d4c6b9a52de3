"""Every per-family list follows torch_aclnn/_registry.FAMILIES.

The lists a script or test can derive from the registry are derived (checked
here: .ci/gpu-check's family step, .ci/compat's core suite); the per-family
pieces that cannot be derived (a family's property-based tests, its adversarial
cases, its huge-page outputs) are demanded here for every family, so that a new
family cannot be forgotten in any of them."""
import ast
import importlib.util
import os
import re
import subprocess
import sys

import pytest

from torch_aclnn._registry import FAMILIES, OPERATORS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEMS = [f.stem for f in FAMILIES]


def _read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def _module(name):
    """tests/<name>.py, imported by path (the tests folder is no package)."""
    spec = importlib.util.spec_from_file_location(f"_registry_check_{name}", os.path.join(ROOT, "tests", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_family_test_file_is_a_registered_family():
    """A tests/test_<stem>.py beside a torch_aclnn/testing/<stem>.py (a family's OpInfos) is a family's
    test file: its stem must be in FAMILIES, and every family must have both."""
    testing = {f[:-3] for f in os.listdir(os.path.join(ROOT, "torch_aclnn", "testing"))
               if f.endswith(".py") and not f.startswith("_") and f != "core.py"}
    tests = {f[len("test_"):-3] for f in os.listdir(os.path.join(ROOT, "tests"))
             if f.startswith("test_") and f.endswith(".py")}
    assert sorted(testing & tests) == sorted(STEMS)
    assert set(STEMS) <= testing and set(STEMS) <= tests


def test_the_registry_lists_the_family_test_files_without_torch():
    """`python torch_aclnn/_registry.py` (the shell scripts' source) prints every family's test file and
    imports no torch, so a script can ask it before any build."""
    code = ("import runpy, sys; sys.modules['torch'] = None; "
            "runpy.run_path('torch_aclnn/_registry.py', run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == [f"tests/test_{stem}.py" for stem in STEMS]


@pytest.mark.parametrize("script,line", [
    (".ci/gpu-check", r'FAMILY_TESTS=\$\(\$PY torch_aclnn/_registry\.py\)'),
    (".ci/compat", r'CORE_TESTS="tests/test_common\.py \$\("\$PY" torch_aclnn/_registry\.py'),
])
def test_ci_family_lists_come_from_the_registry(script, line):
    text = _read(script)
    assert re.search(line, text), f"{script} no longer takes its family list from torch_aclnn/_registry.py"
    if script == ".ci/gpu-check":  # the family step runs that list
        part = text[text.index('step family "'):]
        part = part[:part.index("\n\n")]
        assert "$FAMILY_TESTS" in part
    else:
        part = next(ln for ln in text.splitlines() if ln.startswith("CORE_TESTS="))
    for stem in STEMS:  # no family written out by hand beside the derived list
        assert f"tests/test_{stem}.py" not in part, f"{script} names tests/test_{stem}.py by hand"


def test_every_family_has_property_based_tests():
    """tests/test_fuzz.py: test_<stem>_forward and test_<stem>_backward for every family (hypothesis
    strategies are written per family, so they are demanded here)."""
    defined = {node.name for node in ast.parse(_read("tests/test_fuzz.py")).body if isinstance(node, ast.FunctionDef)}
    missing = [f"test_{stem}_{part}" for stem in STEMS for part in ("forward", "backward")
               if f"test_{stem}_{part}" not in defined]
    assert not missing, f"tests/test_fuzz.py lacks {missing}"


def test_every_operator_has_adversarial_cases():
    """tests/test_adversarial.py: at least one case named '<operator> ...' for every operator."""
    cases = _module("test_adversarial").CASES
    missing = [op for op in OPERATORS if not any(name.startswith(op + " ") for name in cases)]
    assert not missing, f"tests/test_adversarial.py has no case for {missing}"


def test_every_operator_has_a_huge_page_output():
    """tests/test_huge_pages.py: a >= 32 MiB output of every operator (the keys of _outputs()' dict,
    read from the source: building the outputs takes hundreds of MiB)."""
    tree = ast.parse(_read("tests/test_huge_pages.py"))
    fn = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "_outputs")
    ret = next(node for node in ast.walk(fn) if isinstance(node, ast.Return))
    keys = {k.value for k in ret.value.keys}
    missing = [op for op in OPERATORS if op not in keys]
    assert not missing, f"tests/test_huge_pages.py has no output of {missing}"
