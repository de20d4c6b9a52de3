"""torch_aclnn/_torch_api.py: the one module that names private torch
attributes, and its public fallbacks (each checked against the private
answer by hiding the private attribute)."""
import re
import subprocess
import sys
from pathlib import Path

import torch

import torch_aclnn
from torch_aclnn import _torch_api as api
from torch_aclnn._registry import OPERATORS

PACKAGE = Path(torch_aclnn.__file__).parent


def test_no_private_torch_api_elsewhere():
    offenders = [f"{p.relative_to(PACKAGE)}:{i}: {line.strip()}"
                 for p in sorted(PACKAGE.rglob("*.py")) if p.name != "_torch_api.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if re.search(r"\btorch\._[A-Za-z]|\._op\b", line)]
    assert not offenders, offenders


def test_has_kernel_fallback(monkeypatch):
    keys = ("CPU", "CUDA", "PrivateUse1", "Meta")
    want = {(op, k): api.has_kernel(op, k) for op in OPERATORS for k in keys}
    assert all(want[op, "CPU"] and want[op, "Meta"] for op in OPERATORS)
    monkeypatch.setattr(api, "_PUBLIC_KERNEL_PROBE", "not_a_method")
    assert {(op, k): api.has_kernel(op, k) for op in OPERATORS for k in keys} == want


def test_privateuse1_name_fallback(monkeypatch):
    want = api.privateuse1_name()
    monkeypatch.delattr(torch._C, "_get_privateuse1_backend_name")
    assert api.privateuse1_name() == want


def test_autocast_available_fallbacks(monkeypatch):
    want = {d: api.autocast_available(d) for d in ("cpu", "cuda")}
    monkeypatch.delattr(torch.amp, "is_autocast_available", raising=False)
    assert {d: api.autocast_available(d) for d in ("cpu", "cuda")} == want
    monkeypatch.delattr(torch._C, "_is_autocast_available")
    assert api.autocast_available("cpu")


def test_is_view():
    base = torch.randn(4)
    assert api.is_view(base[1:]) and not api.is_view(base)


def test_plain_view(monkeypatch):
    root = torch.randn(4, requires_grad=True)
    x = root * 1
    assert api.plain_view(x.view(2, 2)) and not api.plain_view(x) and not api.plain_view(root[1:])
    assert not api.plain_view(x.unbind(0)[0])  # a multi-output view
    with torch.no_grad():
        v = x[1:]
    assert not api.plain_view(v)
    monkeypatch.delattr(torch._C._autograd, "_get_creation_meta")
    assert not api.plain_view(x.view(2, 2))


def test_function_mode_stack_fallback(monkeypatch):
    monkeypatch.delattr(torch.overrides, "_get_current_function_mode_stack")
    assert not torch_aclnn.is_patched(level="function")
    with torch_aclnn.patched(level="function"):
        assert torch_aclnn.is_patched(level="function")
    torch_aclnn.patch(level="function")
    assert torch_aclnn.is_patched(level="function")
    torch_aclnn.unpatch()
    assert not torch_aclnn.is_patched(level="function")


def test_promoted_dtype():
    a, b = torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.bfloat16)
    assert api.promoted_dtype(a, b) == torch.float32
    assert api.promoted_dtype(a, torch.ones((), dtype=torch.float64)) == torch.float16  # 0-dim ranks lower


def test_functorch_transforms_fallback(monkeypatch):
    """Without the probe every differentiable call takes the setup_context
    Function (the one torch.func needs), with the same results."""
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    want = torch.autograd.grad(torch_aclnn.elu(x).sum(), x)[0]
    assert not api.functorch_transforms_active()
    monkeypatch.setattr(api, "_TRANSFORMS_PROBE", None)
    assert api.functorch_transforms_active()
    torch.testing.assert_close(torch.autograd.grad(torch_aclnn.elu(x).sum(), x)[0], want, rtol=0, atol=0)
    torch.testing.assert_close(torch.func.grad(lambda t: torch_aclnn.elu(t).sum())(x.detach()), want)



def test_recompile_limit():
    """Within it, a function compiles once per sample of a different kind, and none runs eagerly;
    outside, dynamo's own limit is back."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    before = torch._dynamo.config.recompile_limit
    torch.compiler.reset()
    counters.clear()
    with api.recompile_limit(12):
        assert torch._dynamo.config.recompile_limit == 12
        fn = torch.compile(lambda x, tag: x * len(tag), fullgraph=True, dynamic=True, backend="eager")
        for k in range(10):  # (a string is a constant of its graph: each tag compiles anew)
            assert fn(torch.ones(2), "x" * k).tolist() == [float(k)] * 2
    assert counters["stats"]["unique_graphs"] == 10
    assert torch._dynamo.config.recompile_limit == before
    torch.compiler.reset()


def test_import_leaves_dynamo_alone():
    """import torch_aclnn loads neither torch._dynamo nor sympy: eager users and
    worker processes do not pay for the compiler (about 0.8 s and 70 MiB)."""
    code = "import sys, torch_aclnn; print(sorted(m for m in ('torch._dynamo', 'sympy') if m in sys.modules))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]", run.stdout


def test_tracing_state_fallback():
    """The public fallback agrees with the private probe, outside and inside torch.jit.trace."""
    seen = []

    def f(x):
        seen.append((api.tracing_state() is not None, api._public_tracing_state() is not None))
        return x + 1

    f(torch.ones(1))
    torch.jit.trace(f, torch.ones(1))
    assert seen[0] == (False, False) and seen[1] == (True, True), seen
