"""What the adversarial test files (tests/test_adversarial*.py) share: the
case registry, the expectations, the inputs used across them, and the child
process that runs the cases, so that a crash (segfault, abort, sanitizer
report) or a hang is a test failure instead of killing pytest.

Each case either must raise its documented exception type with the
``[torch_aclnn 16100x] <op>:`` message (a contract error of
docs/spec.md), or is valid by the spec and must give the float64
reference's answer. Sizes whose element count overflows int64, or whose
result cannot be allocated, are no contract error of the spec (CPU kernels
have no size limits): they must raise a clear RuntimeError/ValueError (torch's
own "overflowed" / "can't allocate" messages are accepted) without crashing.

All cases of a file run in one child process (``python tests/<file> NAME...``)
that prints one JSON line per case; if the child dies, the case that killed
it is reported and the rest run in a fresh child. A file of cases ends with

    results, test_adversarial = case_tests(__file__, CASES)

    if __name__ == "__main__":
        run_child(CASES, sys.argv[1:])
"""
import json
import math
import os
import re
import subprocess
import sys

import pytest
import torch

import torch_aclnn  # noqa: F401  (registers torch.ops.torch_aclnn)

HERE = os.path.dirname(os.path.abspath(__file__))
I64_MAX, I64_MIN = 2 ** 63 - 1, -2 ** 63
CODE = r"\[torch_aclnn 16100[12]\] "
OVERFLOW = r"overflow"
# A result whose byte size fits in int64 but not in memory: the allocator's
# error (a resource limit), not a contract violation.
ALLOC = r"can't allocate"
ops = torch.ops.torch_aclnn


def registrar(cases):
    """``case(name, expect)``: a decorator that adds the function it decorates to
    ``cases`` (name -> (fn, expectation); expectation: ("raises", exc, regex) or
    ("ok", check(result)))."""
    def case(name, expect):
        def deco(fn):
            cases[name] = (fn, expect)
            return fn
        return deco
    return case


def raises(exc, msg):
    return ("raises", exc, msg)


def torchs_error(reference):
    """A call that torch_aclnn hands to torch: the error torch's own call raises (its type and the
    start of its message), whatever this torch release says."""
    try:
        reference()
    except Exception as e:  # noqa: BLE001  (any error torch raises is the expectation)
        return raises(type(e).__name__, "^" + re.escape(str(e)[:80]))
    return raises("an error", "torch's own call returned")


def _x(*shape, dtype=torch.float32):
    return torch.arange(math.prod(shape), dtype=torch.float64).sub(3).reshape(shape).to(dtype)


def matches(reference):
    """A valid case: equal (NaN where NaN) to the float64 reference, rounded
    to the result dtype (so a float64 value beyond its range is inf), within
    the result dtype's tolerance."""
    def check(out):
        from torch_aclnn.testing import tolerance
        torch.testing.assert_close(out.double(), reference().to(out.dtype).double(), equal_nan=True, check_dtype=False,
                                   **tolerance(out.dtype))
    return ("ok", check)


# Inputs more than one file uses: smooth_l1_loss's self and target, max_unpool3d's stride and padding.
_s, _t = torch.tensor([1.0, -3.0, 0.25, 0.0]), torch.zeros(4)
_sp = ([1, 1, 1], [0, 0, 0])


# ---------------------------------------------------------------------------
# The child: run the named cases, one JSON line each.

def run_child(cases, names):
    sys.path.insert(0, HERE)
    for name in names:
        fn, expect = cases[name]
        rec = {"case": name}
        try:
            out = fn()
        except Exception as e:  # noqa: BLE001 - recorded and judged by the parent
            rec.update(outcome="raised", exc=type(e).__name__, msg=str(e).splitlines()[0][:400] if str(e) else "")
            if expect[0] == "ok":
                rec["error"] = f"valid by the spec but raised {type(e).__name__}: {rec['msg']}"
        else:
            rec["outcome"] = "returned"
            if expect[0] == "ok":
                try:
                    expect[1](out)
                except AssertionError as e:
                    rec["error"] = f"wrong result: {str(e)[:400]}"
            else:
                rec["error"] = f"returned instead of raising {expect[1]}"
        if expect[0] == "raises" and rec["outcome"] == "raised":
            if not re.fullmatch(expect[1], rec["exc"]):
                rec["error"] = f"raised {rec['exc']}, expected {expect[1]}: {rec['msg']}"
            elif not re.search(expect[2], rec["msg"]):
                rec["error"] = f"message {rec['msg']!r} does not match {expect[2]!r}"
        print(json.dumps(rec), flush=True)


TIMEOUT = float(os.environ.get("TORCH_ACLNN_ADVERSARIAL_TIMEOUT", "300"))


def run_cases(path, names):
    """{name: record} of the cases of the file at ``path``; a case during which
    the child died or hung gets an 'error' record, and the cases after it run
    in a fresh child."""
    results, todo = {}, list(names)
    while todo:
        try:
            p = subprocess.run([sys.executable, os.path.abspath(path), *todo], capture_output=True, text=True,
                               timeout=TIMEOUT, cwd=os.path.dirname(HERE))
            out, err, rc = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err, rc = "timeout", "timeout"
        for line in out.splitlines():
            if line.startswith("{"):
                rec = json.loads(line)
                results[rec["case"]] = rec
        before = len(todo)
        todo = [n for n in todo if n not in results]
        if todo and len(todo) == before and not out.strip():  # died before the first case: give up
            return {**results, **{n: {"case": n, "error": f"child failed (rc={rc}): {err[-3000:]}"} for n in todo}}
        if todo:
            results[todo[0]] = {"case": todo[0], "error": f"child died (rc={rc}) in this case: {err[-3000:]}"}
            todo = todo[1:]
    return results


def case_tests(path, cases, xfail=None):
    """The ``results`` fixture (every case of the file at ``path``, run in the
    child once per module) and ``test_adversarial``, one test per case; a case
    named in ``xfail`` (name -> reason) runs as a strict xfail."""
    xfail = xfail or {}

    @pytest.fixture(scope="module")
    def results():
        return run_cases(path, list(cases))

    @pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=xfail[n], strict=True))
                                      if n in xfail else n for n in cases])
    def test_adversarial(results, name):
        rec = results[name]
        assert "error" not in rec, f"{name}: {rec['error']}"

    return results, test_adversarial
