"""torch_aclnn/_torch_api.py: the one module that names private torch
attributes, and its public fallbacks (each checked against the private
answer by hiding the private attribute)."""
import re
from pathlib import Path

import torch

import torch_aclnn
from torch_aclnn import _torch_api as api
from torch_aclnn._registry import OPERATORS

PACKAGE = Path(torch_aclnn.__file__).parent


def test_no_private_torch_api_elsewhere():
    offenders = [f"{p.relative_to(PACKAGE)}:{i}: {line.strip()}"
                 for p in sorted(PACKAGE.rglob("*.py")) if p.name != "_torch_api.py"
                 for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\btorch\._[A-Za-z]|\._op\b", line)]
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


def test_function_mode_stack_fallback(monkeypatch):
    monkeypatch.delattr(torch.overrides, "_get_current_function_mode_stack")
    assert not torch_aclnn.is_patched()
    with torch_aclnn.patched():
        assert torch_aclnn.is_patched()
    torch_aclnn.patch()
    assert torch_aclnn.is_patched()
    torch_aclnn.unpatch()
    assert not torch_aclnn.is_patched()


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


def test_direct_is_the_overloads_call():
    """direct(overload): the callable behind OpOverload.__call__: the same
    result, a TorchFunctionMode sees the overload itself, and
    torch.compile(fullgraph) traces it as the overload; the fallbacks (no
    _op, no substitute_in_graph) are the overload."""
    overload = torch.ops.torch_aclnn.elu.default
    fast = api.direct(overload)
    assert api.direct(overload) is fast  # (one registration per overload)
    assert (fast is not overload) == hasattr(overload, "_op")
    x = torch.randn(6, dtype=torch.float64)
    assert torch.equal(fast(x, 1.0, 1.0, 1.0), overload(x, 1.0, 1.0, 1.0))

    class Seen(torch.overrides.TorchFunctionMode):
        funcs = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.funcs.append(func)
            return func(*args, **(kwargs or {}))

    with Seen():
        fast(x, 1.0, 1.0, 1.0)
    assert Seen.funcs == [overload]
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm

    torch._dynamo.reset()
    got = torch.compile(lambda t: fast(t, 2.0, 1.0, 1.0) * 2, backend=backend, fullgraph=True)(x)
    assert torch.equal(got, overload(x, 2.0, 1.0, 1.0) * 2)
    assert any(n.target is overload for g in graphs for n in g.graph.nodes), [str(g.graph) for g in graphs]


def test_direct_fallbacks(monkeypatch):
    class NoPrivate:
        pass

    plain = NoPrivate()
    assert api.direct.__wrapped__(plain) is plain
    monkeypatch.delattr(torch.compiler, "substitute_in_graph")
    overload = torch.ops.torch_aclnn.elu_backward.default
    assert api.direct.__wrapped__(overload) is overload
