"""The Python API's direct call of each operator (csrc/direct_call.cpp,
torch_aclnn.ops._calls.Operator): the same results, autograd and errors as
the torch.ops OpOverload it wraps, every other call handed to that
OpOverload, and the OpOverload in compiled code."""
import sys

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import torch_aclnn
from torch_aclnn import _C
from torch_aclnn.ops import (_calls, adaptive_avg_pool, avg_pool, elu, leaky_relu, max_pool, max_unpool, smooth_l1,
                             upsample, upsample_trilinear)
from torch_aclnn.testing import OPS, results

# Every Operator of the Python API, by its operator's name.
OPERATORS = {op.overload._schema.name.split("::")[1]: op for op in (
    elu._ELU, elu._ELU_BACKWARD, smooth_l1._SMOOTH_L1, smooth_l1._SMOOTH_L1_BACKWARD, max_unpool._MAX_UNPOOL,
    max_unpool._MAX_UNPOOL_BACKWARD, max_pool._MAX_POOL, max_pool._MAX_POOL_BACKWARD, *upsample._OPS.values(),
    leaky_relu._LEAKY_RELU, leaky_relu._LEAKY_RELU_BACKWARD, upsample_trilinear._FORWARD, upsample_trilinear._BACKWARD,
    avg_pool._AVG_POOL, avg_pool._AVG_POOL_BACKWARD, adaptive_avg_pool._POOL, adaptive_avg_pool._POOL_BACKWARD)}


def test_every_operator_has_one():
    """Every operator's schema is one the direct call takes (Operator.of
    would otherwise keep the OpOverload in its place)."""
    assert sorted(OPERATORS) == sorted(OPS)
    for name, op in OPERATORS.items():
        assert op.overload is getattr(torch.ops.torch_aclnn, name).default
        assert type(op.direct).__name__ == "_DirectCall", name
        assert op[+False] is op.direct and op[+True] is op.overload  # (op[+compiling()])


def _counting(name):
    """operator ``name``'s direct call whose fallback counts the calls it gets."""
    handed = []
    overload = OPERATORS[name].overload

    def fallback(*args, **kwargs):
        handed.append(args)
        return overload(*args, **kwargs)
    return _C._direct_call(f"torch_aclnn::{name}", "", fallback), handed


def _plain(value, schema_type) -> bool:
    """Whether ``value`` has the exact Python type the direct call takes for ``schema_type``."""
    kind = str(schema_type)
    if kind == "Tensor":
        return type(value) is torch.Tensor
    if kind in ("float", "Scalar", "number"):
        return type(value) is float
    if kind in ("float?", "Optional[float]"):
        return value is None or type(value) is float
    if kind in ("int", "SymInt"):
        return type(value) is int
    if kind in ("int?", "Optional[int]"):
        return value is None or type(value) is int
    if kind == "bool":
        return type(value) is bool
    return type(value) in (list, tuple) and all(type(e) is int for e in value)  # (int[], SymInt[])


@pytest.mark.parametrize("name", sorted(OPS))
def test_the_common_call_is_taken_in_c(name):
    """Every sample, positional, with plain Python values: none is handed to
    the OpOverload."""
    direct, handed = _counting(name)
    info = OPS[name]
    schema = OPERATORS[name].overload._schema
    taken = 0
    for s in info.samples("cpu", info.dtypes[0]):
        args = _positional(OPERATORS[name].overload, s)
        if all(_plain(a, arg.type) for a, arg in zip(args, schema.arguments)):
            direct(*args)
            taken += 1
    assert taken and not handed
    direct(*args[:-1], **{OPERATORS[name].overload._schema.arguments[len(args) - 1].name: args[-1]})
    assert len(handed) == 1  # (a keyword: the OpOverload's)


def _positional(overload, sample):
    """The sample's arguments, all positional (the direct call takes no keywords)."""
    names = [a.name for a in overload._schema.arguments]
    return [*sample.args, *(sample.kwargs[n] for n in names[len(sample.args):] if n in sample.kwargs)]


def _same(a, b):
    ra, rb = results(a), results(b)
    assert len(ra) == len(rb)
    for x, y in zip(ra, rb):
        assert (x.shape, x.dtype, x.stride()) == (y.shape, y.dtype, y.stride())
        assert torch.equal(x, y) or (x.is_floating_point() and torch.allclose(x, y, equal_nan=True, rtol=0, atol=0))


@pytest.mark.parametrize("name", sorted(OPS))
def test_same_results_and_gradients_as_the_overload(name, device):
    """Every sample, positional, through the direct call and the OpOverload:
    equal results with the same strides, recorded for autograd alike."""
    op, info = OPERATORS[name], OPS[name]
    dtype = torch.float64 if torch.float64 in info.dtypes else info.dtypes[0]
    for s in info.samples(device, dtype, requires_grad=dtype.is_floating_point):
        args = _positional(op.overload, s)
        ours, theirs = op.direct(*args), op.overload(*args)
        _same(ours, theirs)
        first, other = results(ours)[0], results(theirs)[0]
        assert type(first.grad_fn) is type(other.grad_fn), s
        if first.requires_grad:
            inputs = [a for a in s.tensors() if a.requires_grad]
            g = torch.ones_like(first)
            _same(torch.autograd.grad(first, inputs, g, allow_unused=True, materialize_grads=True),
                  torch.autograd.grad(other, inputs, g, allow_unused=True, materialize_grads=True))


@pytest.mark.parametrize("name", sorted(OPS))
def test_same_contract_errors_as_the_overload(name, device):
    """Every contract error of the operator, raised alike (type and message)."""
    op, info = OPERATORS[name], OPS[name]
    for e in info.errors(device):
        if e.overload != "default":
            continue
        args = _positional(op.overload, e.sample)
        with pytest.raises(e.exc) as ours:
            op.direct(*args)
        with pytest.raises(e.exc) as theirs:
            op.overload(*args)
        assert str(ours.value) == str(theirs.value), e


def _elu_calls():
    x = torch.randn(3, 4)
    return x, [
        ((x, 1.0, 1.0, 1.0), {}),  # the common call
        ((x,), {}),  # defaults
        ((x,), {"alpha": 0.5}),  # keywords: the OpOverload's
        ((x, 1, 1, 1), {}),  # ints for the Scalars
        ((torch.nn.Parameter(x), 2.0, 1.0, 1.0), {}),
    ]


def test_other_calls_go_to_the_overload_with_its_results_and_errors():
    x, calls = _elu_calls()
    op = elu._ELU
    for args, kwargs in calls:
        _same(op.direct(*args, **kwargs), op.overload(*args, **kwargs))
    for bad in [(x, True, 1.0, 1.0), (x, "1", 1.0, 1.0), (x, 1.0, 1.0, 1.0, 1.0), (), (None, 1.0, 1.0, 1.0)]:
        with pytest.raises(Exception) as ours:
            op.direct(*bad)
        with pytest.raises(Exception) as theirs:
            op.overload(*bad)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value)), bad
    # ints beyond ±2**62 (SymInt's own range) and beyond int64: the OpOverload's answer
    g = torch.randn(1, 1, 2, 2, 2)
    up = upsample._OPS["upsample_nearest3d_backward"]
    for big in (2 ** 62 + 1, 2 ** 63, -2 ** 70):
        with pytest.raises(Exception) as ours:
            up.direct(g, [2, 2, big], [1, 1, 1, 1, 1], None, None, None)
        with pytest.raises(Exception) as theirs:
            up.overload(g, [2, 2, big], [1, 1, 1, 1, 1], None, None, None)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value)), big


def test_torch_function_is_the_overloads():
    """A TorchFunctionMode and a subclass's __torch_function__ see the
    operator's OpOverload, as they do through torch.ops."""
    seen = []

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    class Sub(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs)

    x = torch.randn(4)
    with Mode():
        elu._ELU.direct(x, 1.0, 1.0, 1.0)
    assert seen == [elu._ELU.overload]
    seen.clear()
    out = elu._ELU.direct(x.as_subclass(Sub), 1.0, 1.0, 1.0)
    assert elu._ELU.overload in seen and type(out) is Sub


def test_below_the_entry_it_is_the_dispatchers_call():
    """The call goes through the dispatcher with the GIL released: a
    TorchDispatchMode (Python, which takes the GIL back) sees it, and so do
    the profiler and autocast."""
    seen = []

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x = torch.randn(1, 1, 2, 2, 2)
    with Mode():
        out = max_pool._MAX_POOL.direct(x, [2], [], [0], [1], False)
    assert seen == [max_pool._MAX_POOL.overload] and isinstance(out, tuple) and len(out) == 2
    with torch.profiler.profile() as prof:
        elu._ELU.direct(x, 1.0, 1.0, 1.0)
    assert "torch_aclnn::elu" in {e.name for e in prof.events()}
    b = x.bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):  # (smooth_l1 runs in float32 under autocast)
        assert smooth_l1._SMOOTH_L1.direct(b, b, 1, 1.0).dtype == torch.float32
        assert smooth_l1._SMOOTH_L1.overload(b, b, 1, 1.0).dtype == torch.float32


def test_no_reference_is_leaked():
    x, calls = _elu_calls()
    op = elu._ELU
    before = sys.getrefcount(x)
    for _ in range(100):
        for args, kwargs in calls:
            op.direct(*args, **kwargs)
        with pytest.raises(RuntimeError):
            op.direct(x, "1", 1.0, 1.0)
    assert sys.getrefcount(x) == before
    out = op.direct(x, 1.0, 1.0, 1.0)
    assert sys.getrefcount(out) == 2  # (out, and getrefcount's argument)
    v = torch.randn(1, 1, 2, 2, 2)
    sizes = [2, 2, 2]
    before = sys.getrefcount(v), sys.getrefcount(sizes)
    for _ in range(100):
        values, indices = max_pool._MAX_POOL.direct(v, sizes, [], [0], [1], False)
    assert (sys.getrefcount(v), sys.getrefcount(sizes)) == before
    assert sys.getrefcount(values) == 2 and sys.getrefcount(indices) == 2


def test_operators_it_cannot_take_are_refused():
    """An overload that writes an argument (out=) has no direct call, nor
    has another library's operator (which could be removed under it)."""
    with pytest.raises(RuntimeError, match="writes an argument"):
        _C._direct_call("torch_aclnn::elu_backward", "grad_input", torch.ops.torch_aclnn.elu_backward.grad_input)
    with pytest.raises(RuntimeError):
        _C._direct_call("torch_aclnn::no_such_op", "", None)
    with pytest.raises(RuntimeError, match="not a torch_aclnn operator"):
        _C._direct_call("aten::elu", "", torch.ops.aten.elu.default)


def test_exceptions_from_below_keep_their_type():
    """An exception raised beneath the dispatcher (here pybind11's TypeError,
    from a dispatch mode's result of the wrong kind) reaches Python with the
    type torch.ops gives it."""
    class Wrong(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return {} if func is max_pool._MAX_POOL.overload else func(*args, **(kwargs or {}))

    x = torch.randn(1, 2, 4, 4, 4)
    for call in (max_pool._MAX_POOL.direct, max_pool._MAX_POOL.overload):
        with Wrong(), pytest.raises(TypeError):
            call(x, [2], [], [0], [1], False)


def test_copies_are_the_same_object():
    import copy
    assert copy.copy(elu._ELU) == elu._ELU and copy.deepcopy(elu._ELU) == elu._ELU
    assert copy.deepcopy(elu._ELU).direct is elu._ELU.direct


def test_the_api_calls_it_in_eager_code_and_the_overload_in_compiled_code(monkeypatch):
    """Each module's Operator, indexed by compiling(): the direct call in
    eager code, the OpOverload under torch.compile (fullgraph: no break)."""
    used = []

    def spy(op, kind):
        fn = getattr(op, kind)

        def call(*args):
            used.append(kind)
            return fn(*args)
        return call

    monkeypatch.setattr(elu, "_ELU", _calls.Operator(spy(elu._ELU, "direct"), spy(elu._ELU, "overload")))
    x = torch.randn(2, 3)
    expected = torch.nn.functional.elu(x)
    assert torch.equal(torch_aclnn.elu(x), expected) and used == ["direct"]
    used.clear()
    torch._dynamo.reset()
    compiled = torch.compile(lambda t: torch_aclnn.elu(t), fullgraph=True, backend="eager")
    assert torch.equal(compiled(x), expected) and used == ["overload"]
    torch._dynamo.reset()
