"""max_unpool3d / max_unpool3d_backward (docs/spec.md §5) beyond the generic OpInfo
tests of tests/test_common.py: the worked example, parity with
F.max_unpool3d and its autograd gradient, determinism for repeated indices,
the index rule, out=, layouts, and a compiled MaxPool3d -> MaxUnpool3d
training step."""
import pytest
import torch
import torch.nn.functional as F

import torch_aclnn as ta
from torch_aclnn.testing import OPS, make_layout
from torch_aclnn.testing.max_unpool import reference_backward, reference_forward

ops = torch.ops.torch_aclnn

WORKED_INDICES = [0, 0, 0, 3, 0, 0, 0, 8, 0, 0, 0, 11, 0, 0, 0, 13]


def test_worked_example():
    """docs/spec.md §5: (1, 1, 4, 4) ones, output_size [1, 4, 4], stride = padding = [1, 2, 3] -> ones."""
    go = torch.ones(1, 1, 4, 4)
    idx = torch.tensor(WORKED_INDICES).view(1, 1, 4, 4)
    out = ta.max_unpool3d_backward(go, go, idx, [1, 4, 4], [1, 2, 3], [1, 2, 3])
    assert torch.equal(out, torch.ones(1, 1, 4, 4))
    buf = torch.full((1, 1, 4, 4), float("nan"))
    assert ta.max_unpool3d_backward(go, go, idx, [1, 4, 4], [1, 2, 3], [1, 2, 3], out=buf) is buf
    assert torch.equal(buf, torch.ones(1, 1, 4, 4))
    # The same indices with distinct gradients: out[i] = grad_output[indices[i]].
    go = torch.arange(16.0).view(1, 1, 4, 4)
    out = ta.max_unpool3d_backward(go, go, idx, [1, 4, 4], [1, 2, 3], [1, 2, 3])
    assert out.flatten().tolist() == [float(v) for v in WORKED_INDICES]


# (input shape, kernel_size, stride, padding, output_size, dtype, layout)
F_CASES = [
    ((2, 3, 8, 8, 8), 2, None, 0, None, torch.float32, "contiguous"),
    ((1, 2, 7, 9, 8), 3, 2, 1, "shape", torch.float64, "contiguous"),  # overlapping windows, 5-element output_size
    ((3, 6, 6, 6), (2, 3, 2), (2, 3, 2), 0, None, torch.float32, "contiguous"),  # 4-D
    ((2, 4, 6, 6, 6), 2, None, 0, "spatial", torch.float16, "channels_last_3d"),
    ((2, 2, 5, 6, 7), (1, 2, 2), None, (0, 1, 1), "spatial", torch.bfloat16, "permuted"),
]


def _pool(shape, kernel, stride, padding, dtype, layout):
    x = make_layout(torch.randn(shape, dtype=torch.float64), layout)
    y, idx = F.max_pool3d(x, kernel, stride, padding, return_indices=True)
    if dtype.is_floating_point:
        y = y.to(dtype)
    else:
        y = (y * 100).to(dtype)
    return x, y, idx


def _output_size(x, which):
    return {None: None, "shape": list(x.shape), "spatial": list(x.shape[-3:])}[which]


@pytest.mark.parametrize("case", F_CASES, ids=lambda c: f"{list(c[0])}-k{c[1]}-{c[5]}-{c[6]}")
def test_matches_functional(case):
    shape, kernel, stride, padding, which, dtype, layout = case
    x, y, idx = _pool(shape, kernel, stride, padding, dtype, layout)
    size = _output_size(x, which)
    ours = ta.max_unpool3d(y, idx, kernel, stride, padding, size)
    theirs = F.max_unpool3d(y, idx, kernel, stride, padding, size)
    assert torch.equal(ours, theirs)


@pytest.mark.parametrize("case", [c for c in F_CASES if c[5].is_floating_point],
                         ids=lambda c: f"{list(c[0])}-k{c[1]}-{c[5]}-{c[6]}")
def test_gradient_matches_functional(case):
    shape, kernel, stride, padding, which, dtype, layout = case
    x, y, idx = _pool(shape, kernel, stride, padding, dtype, layout)
    size = _output_size(x, which)
    grads = []
    for fn in (ta.max_unpool3d, F.max_unpool3d):
        leaf = y.detach().clone().requires_grad_(True)
        out = fn(leaf, idx, kernel, stride, padding, size)
        torch.manual_seed(1)
        out.backward(torch.randn(out.shape, dtype=torch.float64).to(dtype))
        grads.append(leaf.grad)
    assert torch.equal(grads[0], grads[1])


def test_backward_of_backward_is_unpool():
    """d max_unpool3d_backward / d grad_output is max_unpool3d (spec autograd pairing)."""
    x = torch.randn(2, 3, 4, 4, 6, dtype=torch.float64)
    y, idx = F.max_pool3d(x, 2, return_indices=True)
    go = torch.randn(2, 3, 4, 4, 6, dtype=torch.float64, requires_grad=True)
    gi = ta.max_unpool3d_backward(go, y, idx, [4, 4, 6], [2, 2, 2], [0, 0, 0])
    v = torch.randn_like(gi)
    (ggo,) = torch.autograd.grad(gi, go, v)
    assert torch.equal(ggo, ta.max_unpool3d(v, idx, 2))


def test_functional_output_size_validation():
    """Output sizes F.max_unpool3d rejects are rejected with the same rule."""
    x = torch.randn(1, 2, 4, 4, 4)
    y, idx = F.max_pool3d(x, 2, return_indices=True)
    for size in ([4, 4, 6], [4, 2, 4]):  # default 4 +/- stride 2 is out of range
        with pytest.raises(ValueError, match="invalid output_size"):
            F.max_unpool3d(y, idx, 2, output_size=size)
        with pytest.raises(ValueError, match=r"^\[torch_aclnn 161002\] max_unpool3d: output_size\[\d\] must be "
                                             r"strictly between 2 and 6"):
            ta.max_unpool3d(y, idx, 2, output_size=size)
    assert ta.max_unpool3d(y, idx, 2, output_size=[5, 5, 3]).shape == (1, 2, 5, 5, 3)
    with pytest.raises(ValueError, match=r"output_size must have 3 \(D, H, W\) or 5 elements, got \[4, 4, 4, 4\]"):
        ta.max_unpool3d(y, idx, 2, output_size=[4, 4, 4, 4])
    with pytest.raises(ValueError, match=r"kernel_size must be an int or have 3 elements"):
        ta.max_unpool3d(y, idx, (2, 2))
    with pytest.raises(ValueError, match=r"kernel_size elements must be > 0, got \[2, 0, 2\]"):
        ta.max_unpool3d(y, idx, (2, 0, 2))
    with pytest.raises(ValueError, match=r"input must be 4-D .* got 3-D"):
        ta.max_unpool3d(y[0, 0], idx[0, 0], 2)


def test_none_arguments():
    x = torch.randn(1, 1, 2, 2, 2)
    y, idx = F.max_pool3d(x, 2, return_indices=True)
    nullptr = r"^\[torch_aclnn 161001\] max_unpool3d: {} is required, got None"
    with pytest.raises(TypeError, match=nullptr.format("input")):
        ta.max_unpool3d(None, idx, 2)
    with pytest.raises(TypeError, match=nullptr.format("indices")):
        ta.max_unpool3d(y, None, 2)
    with pytest.raises(TypeError, match=nullptr.format("kernel_size")):
        ta.max_unpool3d(y, idx, None)
    args = dict(grad_output=x, self=y, indices=idx, output_size=[2, 2, 2], stride=[2, 2, 2], padding=[0, 0, 0])
    for name in args:
        with pytest.raises(TypeError, match=rf"^\[torch_aclnn 161001\] max_unpool3d_backward: {name} is required"):
            ta.max_unpool3d_backward(**{**args, name: None})


@pytest.mark.parametrize("layout", ["contiguous", "channels_last_3d"])
def test_repeated_indices_largest_position_wins(layout):
    # Plane (n, c) sends every element to output position c; all but plane 0
    # of each batch also hit position 7.
    x = torch.arange(2 * 3 * 8, dtype=torch.float32).view(2, 3, 2, 2, 2)
    idx = torch.arange(3).view(1, 3, 1, 1, 1).expand(2, 3, 2, 2, 2).clone()
    idx[:, 1:, 1, 1, 1] = 7
    x, idx = make_layout(x, layout), make_layout(idx, layout)
    out = ops.max_unpool3d(x, idx, [2, 2, 2], [1, 1, 1], [0, 0, 0]).flatten(2)
    for n in range(2):
        for c in range(3):
            plane = x[n, c].flatten()
            expected = torch.zeros(8)
            if c == 0:
                expected[0] = plane[7]
            else:
                expected[c] = plane[6]  # the last position sending to c
                expected[7] = plane[7]
            assert torch.equal(out[n, c], expected), (n, c)


def test_repeated_indices_deterministic():
    """Same bits on every run and thread count, and under
    torch.use_deterministic_algorithms(True), equal to the spec's rule."""
    g = torch.Generator().manual_seed(3)
    dev = torch.get_default_device()
    x = torch.randn(2, 8, 8, 8, 8, generator=g, device="cpu").to(dev)
    idx = torch.randint(0, 64, x.shape, generator=g, device="cpu").to(dev)  # 512 values per plane onto 64 of 512 positions
    expected = reference_forward(x, idx, [8, 8, 8], [1, 1, 1], [0, 0, 0]).float()
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        for n in sorted({1, 2, threads}):
            torch.set_num_threads(n)
            for layout in ("contiguous", "channels_last_3d", "sliced"):
                xs, ids = make_layout(x, layout), make_layout(idx, layout)
                assert torch.equal(ops.max_unpool3d(xs, ids, [8, 8, 8], [1, 1, 1], [0, 0, 0]), expected)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_integer_dtypes(dtype):
    """aten's CPU max_unpool3d has no integer dtype (its CUDA one has); ours
    has all five, exact (int64 beyond 2**53 too)."""
    x = make_layout(torch.randn(2, 3, 4, 6, 4), "sliced")
    y, idx = F.max_pool3d(x, 2, return_indices=True)
    info = torch.iinfo(dtype)
    vals = torch.randint(info.min, info.max, y.shape, dtype=torch.int64).to(dtype)
    expected = torch.zeros(2, 3, 4 * 6 * 4, dtype=dtype).scatter_(2, idx.flatten(2), vals.flatten(2))
    if vals.device.type == "cpu":
        with pytest.raises(NotImplementedError):
            torch.ops.aten.max_unpool3d(vals, idx, [4, 6, 4], [2, 2, 2], [0, 0, 0])
    else:
        aten = torch.ops.aten.max_unpool3d(vals, idx, [4, 6, 4], [2, 2, 2], [0, 0, 0])
        assert torch.equal(aten, expected.view(2, 3, 4, 6, 4))
    assert torch.equal(ta.max_unpool3d(vals, idx, 2), expected.view(2, 3, 4, 6, 4))
    go = torch.randint(info.min, info.max, (2, 3, 4, 6, 4), dtype=torch.int64).to(dtype)
    assert torch.equal(ta.max_unpool3d_backward(go, vals, idx, [4, 6, 4], [2, 2, 2], [0, 0, 0]),
                       go.flatten(2).gather(2, idx.flatten(2)).view(idx.shape))


# ---------------------------------------------------------------------------
# Row 15: the index rule, on real (CPU) kernels.

def _index_error(op_name, pos, value, bound):
    where = ", ".join(str(p) for p in pos)
    return rf"^\[torch_aclnn 161002\] {op_name}: indices\[{where}\] = {value} is outside \[0, {bound}\)"


@pytest.mark.parametrize("layout", ["contiguous", "channels_last_3d", "permuted"])
def test_first_bad_index_is_reported(layout):
    """Several bad indices spread over parallel chunks: the first in logical
    order is named, whatever the layout and thread split."""
    x = torch.randn(2, 8, 32, 32, 32)
    y, idx = F.max_pool3d(x, 2, return_indices=True)  # 65536 elements: two parallel_for chunks
    go = torch.randn(2, 8, 32, 32, 32)
    idx = idx.clone()
    idx[1, 7, 15, 15, 15] = -1
    idx[1, 2, 0, 0, 9] = 32 ** 3
    idx[0, 3, 8, 0, 0] = 10 ** 12
    y, idx, go = make_layout(y, layout), make_layout(idx, layout), make_layout(go, layout)
    msg = _index_error("max_unpool3d", [0, 3, 8, 0, 0], 10 ** 12, 32 ** 3)
    with pytest.raises(IndexError, match=msg):
        ta.max_unpool3d(y, idx, 2)
    with pytest.raises(IndexError, match=msg.replace("max_unpool3d", "max_unpool3d_backward")):
        ta.max_unpool3d_backward(go, y, idx, [32, 32, 32], [2, 2, 2], [0, 0, 0])
    with pytest.raises(IndexError, match=msg.replace("max_unpool3d", "max_unpool3d_backward")):
        ta.max_unpool3d_backward(go, y, idx, [32, 32, 32], [2, 2, 2], [0, 0, 0], out=torch.empty(y.shape))


@pytest.mark.parametrize("value", [-1, -(2 ** 63), 64, 2 ** 63 - 1])
def test_out_of_range_index_is_never_used(value):
    """Extreme indices raise IndexError (never an out-of-bounds read or write):
    4-D, the bound itself, int64 extremes."""
    y = torch.randn(2, 2, 2, 2)
    idx = torch.arange(8).view(1, 2, 2, 2).repeat(2, 1, 1, 1) * 8
    idx[1, 1, 0, 1] = value
    msg = _index_error("max_unpool3d", [1, 1, 0, 1], value, 64)
    with pytest.raises(IndexError, match=msg):
        ops.max_unpool3d(y, idx, [4, 4, 4], [2, 2, 2], [0, 0, 0])
    with pytest.raises(IndexError, match=msg.replace("max_unpool3d", "max_unpool3d_backward")):
        ops.max_unpool3d_backward(torch.randn(2, 4, 4, 4), y, idx, [4, 4, 4], [2, 2, 2], [0, 0, 0])


@pytest.mark.parametrize("value", [-1, -(2 ** 63), 4096, 2 ** 63 - 1])
def test_out_of_range_index_inside_a_dense_block(value):
    """The backward checks dense planes a block of indices at a time: a bad
    index in the middle of a block is still found, named and never used."""
    idx = torch.arange(4096).view(1, 1, 16, 16, 16).flip(-1).contiguous()
    idx[0, 0, 3, 14, 5] = value
    go = torch.randn(1, 1, 16, 16, 16)
    msg = _index_error("max_unpool3d_backward", [0, 0, 3, 14, 5], value, 4096)
    with pytest.raises(IndexError, match=msg):
        ops.max_unpool3d_backward(go, go, idx, [16, 16, 16], [1, 1, 1], [0, 0, 0])
    good = idx.clone()
    good[0, 0, 3, 14, 5] = 7
    assert torch.equal(ops.max_unpool3d_backward(go, go, good, [16, 16, 16], [1, 1, 1], [0, 0, 0]),
                       go.flatten().gather(0, good.flatten()).view(good.shape))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("value", [-1, -(2 ** 63), 2 ** 63 - 1, 1024, 2 ** 32, "in window + 2**32"])
def test_out_of_range_index_inside_a_window_run(value, dtype):
    """The backward's 2x2x2-window runs (below) compare indices as int32
    offsets: a bad index in such a run, including one equal to a valid index
    modulo 2**32, is still found, named and never used."""
    x = torch.randn(1, 1, 4, 4, 64, dtype=dtype)
    y, idx = F.max_pool3d(x, 2, return_indices=True)  # pooled (2, 2, 32), 1024 outputs
    idx = idx.clone()
    v = idx[0, 0, 1, 1, 20].item() + 2 ** 32 if value == "in window + 2**32" else value
    idx[0, 0, 1, 1, 20] = v
    msg = _index_error("max_unpool3d_backward", [0, 0, 1, 1, 20], v, 1024)
    with pytest.raises(IndexError, match=msg):
        ops.max_unpool3d_backward(x, y, idx, [4, 4, 64], [2, 2, 2], [0, 0, 0])
    with pytest.raises(IndexError, match=msg):
        ops.max_unpool3d_backward(x, y, idx, [4, 4, 64], [2, 2, 2], [0, 0, 0],
                                  grad_input=torch.empty(y.shape, dtype=dtype))


def test_index_rule_is_not_checked_by_meta():
    """Meta (fake) kernels cannot read data: a bad index passes there and is caught by the real kernel."""
    y = torch.randn(1, 1, 2, 2, 2, device="meta")
    idx = torch.full((1, 1, 2, 2, 2), 99, device="meta")
    assert ops.max_unpool3d(y, idx, [2, 2, 2], [1, 1, 1], [0, 0, 0]).shape == (1, 1, 2, 2, 2)


# ---------------------------------------------------------------------------
# out=, layouts, autograd storage.

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int16, torch.int64])
def test_out_variant_writes_in_place(dtype):
    """out= (contiguous, as row 1 requires) over every backward sample: the
    result is written into out and equals the functional result."""
    info = OPS["max_unpool3d_backward"]
    for s in info.samples(torch.get_default_device(), dtype):
        expected = info.op(*s.args)
        out = torch.full(expected.shape, 7, dtype=dtype)
        assert info.out_op(*s.args, grad_input=out) is None
        assert torch.equal(out, expected), s


def test_out_aliasing_grad_output():
    """out= that is grad_output itself (same shape when the unpool is a
    permutation) gives the gather of the original values."""
    g = torch.Generator().manual_seed(5)
    dev = torch.get_default_device()
    go = torch.randn(2, 3, 2, 3, 4, generator=g, device="cpu").to(dev)
    idx = torch.stack([torch.randperm(24, generator=g, device="cpu") for _ in range(6)]).view(2, 3, 2, 3, 4).to(dev)
    expected = reference_backward(go, go, idx, [2, 3, 4], [1, 1, 1], [0, 0, 0]).float()
    res = ta.max_unpool3d_backward(go, go, idx, [2, 3, 4], [1, 1, 1], [0, 0, 0], out=go)
    assert res is go
    assert torch.equal(go, expected)


def test_result_layouts():
    """Results follow the input's layout: max_unpool3d's that of self, the
    backward's that of indices (the tensor it streams); aten's are contiguous."""
    x = torch.randn(2, 3, 4, 4, 4).to(memory_format=torch.channels_last_3d)
    y, idx = F.max_pool3d(x, 2, return_indices=True)
    assert idx.is_contiguous(memory_format=torch.channels_last_3d)
    out = ta.max_unpool3d(y, idx, 2)
    assert out.is_contiguous(memory_format=torch.channels_last_3d)
    assert ta.max_unpool3d(y.contiguous(), idx, 2).is_contiguous()
    go = torch.randn(2, 3, 4, 4, 4)
    assert ta.max_unpool3d_backward(go, y, idx, [4, 4, 4], [2, 2, 2], [0, 0, 0]).is_contiguous(
        memory_format=torch.channels_last_3d)
    assert ta.max_unpool3d_backward(go, y, idx.contiguous(), [4, 4, 4], [2, 2, 2], [0, 0, 0]).is_contiguous()


def test_autograd_does_not_keep_self():
    """The gradient needs only indices and self's shape: modifying the pooled
    values in place after the forward is fine (nothing of them is saved)."""
    x = torch.randn(1, 2, 4, 4, 4, requires_grad=True)
    y, idx = F.max_pool3d(x, 2, return_indices=True)
    y = y * 1.0
    out = ta.max_unpool3d(y, idx, 2)
    y.mul_(2.0)
    out.sum().backward()
    assert torch.equal(x.grad, F.max_unpool3d(torch.ones_like(y), idx, 2))


# ---------------------------------------------------------------------------
# torch.compile of a MaxPool3d -> MaxUnpool3d training step.

class _AutoEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Conv3d(2, 4, 3, padding=1)
        self.pool = torch.nn.MaxPool3d(2, return_indices=True)
        self.dec = torch.nn.Conv3d(4, 2, 3, padding=1)

    def forward(self, x):
        y, idx = self.pool(torch.relu(self.enc(x)))
        return self.dec(ta.max_unpool3d(y, idx, 2, output_size=x.shape[-3:]))


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_compile_training_step(backend):
    """fullgraph=True, dynamic=True over two input shapes: no graph break, and
    gradients and the SGD step match eager."""
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    torch.manual_seed(0)
    eager = _AutoEncoder()
    compiled_model = _AutoEncoder()
    compiled_model.load_state_dict(eager.state_dict())
    counter = CompileCounterWithBackend(backend)
    compiled = torch.compile(compiled_model, backend=counter, fullgraph=True, dynamic=True)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, compiled_model)]
    # Distinct sizes (no two input axes equal), so neither shape specialises the graph.
    for shape in ((3, 2, 8, 12, 10), (4, 2, 6, 10, 14)):
        x = torch.randn(shape)
        for model, opt in zip((eager, compiled), opts):
            opt.zero_grad()
            loss = (model(x) - x).square().mean()
            loss.backward()
            opt.step()
        for p_e, p_c in zip(eager.parameters(), compiled_model.parameters()):
            torch.testing.assert_close(p_c.grad, p_e.grad, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(p_c, p_e, rtol=1e-4, atol=1e-5)
    if backend == "aot_eager":
        # One dynamic graph for both shapes. (Inductor's Conv3d lowering
        # specialises the W axis and recompiles once, with F.max_unpool3d too.)
        assert counter.frame_count == 1
    ops_in_graph = {str(n.target) for gm in counter.graphs for n in gm.graph.nodes if n.op == "call_function"}
    assert any("max_unpool3d" in t for t in ops_in_graph), ops_in_graph


# ---------------------------------------------------------------------------
# The backward's 2x2x2-window runs (AVX-512 builds, outputs at least twice
# the input per axis): 16 or 32 elements of a row (4-byte elements; 2-byte
# ones: 32) read their four rows of grad_output in order and pick each value
# from its window; a run with an index outside its window goes through the
# element gather.

def _gather(go, idx):
    return go.flatten(-3).gather(-1, idx.flatten(-3)).view(idx.shape)


@pytest.mark.parametrize("extra", [0, 1], ids=["2x", "2x+1"])
@pytest.mark.parametrize("width", [15, 16, 17, 31, 32, 33, 48, 50, 64, 65, 97])
@pytest.mark.parametrize("bits", [32, 16])
def test_backward_window_runs(bits, width, extra):
    """Rows of one, two and three runs and tails, outputs of exactly twice the
    input and one more per axis, 4-byte elements (float32 with NaN payloads
    and -0.0, int32) and 2-byte ones (bfloat16 and float16 with NaN payloads
    and -0.0, int16): bitwise the gather of their bits."""
    size = (4 + extra, 6 + extra, 2 * width + extra)
    x = torch.randn(2, 3, *size)
    y, idx = F.max_pool3d(x, 2, return_indices=True)
    bits_dtype, nan = (torch.int32, (0x7F800001, 0x7FFFFFFF)) if bits == 32 else (torch.int16, (0x7F81, 0x7FFF))
    go = torch.randint(-(2 ** (bits - 1)), 2 ** (bits - 1), (2, 3, *size), dtype=bits_dtype)
    go.view(-1)[::7] = -(2 ** (bits - 1))  # -0.0
    go.view(-1)[::5] = torch.randint(*nan, go.view(-1)[::5].shape, dtype=bits_dtype)  # NaNs
    want = _gather(go, idx)  # gathered as integers: every bit kept (aten's bfloat16 gather rewrites some NaNs)
    dtypes = (torch.float32, torch.int32) if bits == 32 else (torch.bfloat16, torch.float16, torch.int16)
    for g in (go.view(dt) for dt in dtypes):
        got = ops.max_unpool3d_backward(g, y.to(g.dtype), idx, list(size), [2, 2, 2], [0, 0, 0])
        assert torch.equal(got.view(bits_dtype), want), g.dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_backward_indices_outside_their_windows(dtype):
    """Indices of overlapping 3x3x3 windows, uniformly random ones, and 2x2x2
    ones with a single index per run moved elsewhere: the runs fall back to
    the gather, element for element."""
    size = [6, 8, 66]
    x = torch.randn(2, 2, *size)
    go = torch.randn(2, 2, *size, dtype=dtype)
    y, idx = F.max_pool3d(x, 2, return_indices=True)  # pooled (3, 4, 33)
    overlapping = F.max_pool3d(x, 3, 2, 1, return_indices=True)[1]
    uniform = torch.randint(0, 6 * 8 * 66, idx.shape)
    moved = idx.clone()
    moved[..., ::16] = torch.randint(0, 6 * 8 * 66, moved[..., ::16].shape)  # one per run of 16
    neighbour = idx.clone()
    neighbour[..., 5] += 2  # the next window's element: one row over
    for ix in (overlapping, uniform, moved, neighbour):
        got = ops.max_unpool3d_backward(go, y.to(dtype), ix, size, [2, 2, 2], [0, 0, 0])
        assert torch.equal(got, _gather(go, ix))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_backward_window_runs_split_over_threads(dtype):
    """101 planes of 3 x 5 x 33 elements: parallel chunks start and end inside
    rows and runs, on 1, 2 and 3 threads."""
    size = [6, 10, 66]
    x = torch.randn(1, 101, *size, dtype=dtype)
    y, idx = F.max_pool3d(x, 2, return_indices=True)
    go = torch.randn(1, 101, *size, dtype=dtype)
    want = _gather(go, idx)
    threads = torch.get_num_threads()
    try:
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            assert torch.equal(ops.max_unpool3d_backward(go, y, idx, size, [2, 2, 2], [0, 0, 0]), want), n
    finally:
        torch.set_num_threads(threads)
