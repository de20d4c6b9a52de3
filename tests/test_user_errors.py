"""What a user meets at the edges of the Python API (docs/spec.md §7, "Python
wrappers speak the same error language"): errors that name the function
called and the argument at fault, arguments torch accepts that we accept too,
the smooth_l1 reduction bound (§4 row 7), and the check report's answers to
a dtype with no kernel and its relative-error cells."""
import io
import json

import pytest
import torch
import torch.nn.functional as F

import torch_aclnn
from torch_aclnn.__main__ import main

TAG = r"\[torch_aclnn 161002\]"


def _raises(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (any exception: the question is whether it raises)
        return e
    return None


# ---------------------------------------------------------------------------
# Errors name the function the user called, and the empty axis.

def test_max_pool3d_errors_name_max_pool3d():
    x = torch.randn(2, 4, 4, dtype=torch.float32)  # 3-D: the contract wants 4-D or 5-D
    with pytest.raises(ValueError, match=TAG + " max_pool3d: "):
        torch_aclnn.max_pool3d(x, 2)
    with pytest.raises(TypeError, match=TAG + " max_pool3d: "):
        torch_aclnn.max_pool3d(torch.ones(1, 1, 4, 4, 4, dtype=torch.int32), 2)
    with pytest.raises(ValueError, match=TAG + " max_pool3d: "):  # a rule the Python side checks
        torch_aclnn.max_pool3d(torch.randn(1, 1, 4, 4, 4), 2, padding=2)
    # the operator's own function keeps its name
    with pytest.raises(ValueError, match=TAG + " max_pool3d_with_indices: "):
        torch_aclnn.max_pool3d_with_indices(x, 2)


@pytest.mark.parametrize("fn, name", [
    (lambda x: torch_aclnn.selu(x), "selu"),
    (lambda x: torch_aclnn.celu(x, 0.5), "celu"),
    (lambda x: torch_aclnn.huber_loss(x, x), "huber_loss"),
    (lambda x: torch_aclnn.huber_loss(x, x, weight=torch.ones(3)), "huber_loss"),
])
def test_composite_functions_name_themselves(fn, name):
    with pytest.raises(TypeError, match=TAG + f" {name}: "):
        fn(torch.ones(3, dtype=torch.int32))


def test_call_as_renames_contract_errors_only():
    from torch_aclnn.ops._calls import call_as

    def fail(e):
        raise e

    plain = RuntimeError("max_pool3d_with_indices: not one of ours")
    with pytest.raises(RuntimeError) as caught:
        call_as("max_pool3d", fail, plain)
    assert caught.value is plain
    with pytest.raises(IndexError, match=r"^\[torch_aclnn 161002\] max_pool3d: indices\[3\] is 99$"):
        call_as("max_pool3d", fail, IndexError("[torch_aclnn 161002] max_pool3d_with_indices: indices[3] is 99"))


@pytest.mark.parametrize("axis", [2, 3, 4])
def test_empty_input_axis_is_named_not_the_scale(axis):
    shape = [1, 1, 3, 3, 3]
    shape[axis] = 0
    x = torch.randn(shape)
    name = "DHW"[axis - 2]
    for fn in (lambda: torch_aclnn.upsample_nearest3d(x, scale_factor=2),
               lambda: torch_aclnn.upsample_trilinear3d(x, scale_factor=2)):
        with pytest.raises(ValueError, match=rf"input\.shape\[{axis}\] \({name}\) must be > 0, got \[") as e:
            fn()
        assert "scale_factor" not in str(e.value)
    # as torch, which refuses it too
    assert _raises(lambda: F.interpolate(x, scale_factor=2, mode="trilinear")) is not None


# ---------------------------------------------------------------------------
# What torch accepts, we accept.

def test_huber_loss_weight_as_torch():
    torch.manual_seed(0)
    a, b = torch.randn(4, 5, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)
    w = torch.rand(4, 5, dtype=torch.float64)
    for reduction in ("none", "mean", "sum"):
        for delta in (0.5, 1.0, 2.0):
            got = torch_aclnn.huber_loss(a, b, reduction, delta, weight=w)
            want = F.huber_loss(a, b, reduction=reduction, delta=delta, weight=w)
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    # broadcast target, as torch: the weight has input's shape
    with pytest.warns(UserWarning, match="target size"):  # (torch's own warning)
        want = F.huber_loss(a, b[:1], weight=w)
    torch.testing.assert_close(torch_aclnn.huber_loss(a, b[:1], weight=w), want)
    # differentiable through our operators, twice
    a.requires_grad_(True)
    w.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, w: torch_aclnn.huber_loss(a, b, "mean", 0.7, weight=w), (a, w))
    assert torch.autograd.gradgradcheck(lambda a, w: torch_aclnn.huber_loss(a, b, "sum", 0.7, weight=w), (a, w))
    with pytest.raises(ValueError, match=TAG + r" huber_loss: weight must have input's shape \[4, 5\], got \[5\]"):
        torch_aclnn.huber_loss(a, b, weight=torch.ones(5, dtype=torch.float64))
    with pytest.raises(TypeError, match=TAG + " huber_loss: weight must be a Tensor"):
        torch_aclnn.huber_loss(a, b, weight=[1.0])
    with pytest.raises(ValueError, match=TAG + r" huber_loss: reduction must be 0"):
        torch_aclnn.huber_loss(a, b, 7, weight=w)


@pytest.mark.parametrize("make", [lambda: torch.tensor(0.5), lambda: torch.tensor(2),
                                  lambda: torch.tensor(0.5).double()])
def test_a_0dim_tensor_as_a_number(make):
    x = torch.randn(4, 64)  # (a multiple of every vector width: aten's vectorised path, bitwise ours)
    v = make()
    torch.testing.assert_close(torch_aclnn.elu(x, alpha=v), F.elu(x, alpha=v), rtol=0, atol=0)
    torch.testing.assert_close(torch_aclnn.celu(x, alpha=v), F.celu(x, alpha=v))
    torch.testing.assert_close(torch_aclnn.leaky_relu(x, v), F.leaky_relu(x, v), rtol=0, atol=0)
    torch.testing.assert_close(torch_aclnn.smooth_l1_loss(x, x * 0.5, beta=v), F.smooth_l1_loss(x, x * 0.5, beta=v))
    torch.testing.assert_close(torch_aclnn.huber_loss(x, x * 0.5, delta=v), F.huber_loss(x, x * 0.5, delta=v))


@pytest.mark.parametrize("value", [torch.tensor([0.5]), torch.tensor(0.5, requires_grad=True)])
def test_a_tensor_torch_refuses_as_a_number_is_refused(value):
    x = torch.randn(2, 3)
    assert _raises(lambda: F.elu(x, alpha=value)) is not None  # torch refuses it
    with pytest.raises(TypeError, match=TAG + " elu: alpha must be a real number"):
        torch_aclnn.elu(x, alpha=value)


@pytest.mark.parametrize("flag", [1, 0, "yes", None])
def test_python_flags_are_tested_for_truth_as_F_does(flag):
    x = torch.randn(1, 1, 4, 4, 4)
    for ours, theirs in ((torch_aclnn.elu, F.elu), (torch_aclnn.selu, F.selu), (torch_aclnn.celu, F.celu),
                         (torch_aclnn.leaky_relu, F.leaky_relu)):
        a, b = x.clone(), x.clone()
        got, want = ours(a, inplace=flag), theirs(b, inplace=flag)
        torch.testing.assert_close(got, want)
        assert (got is a) == (want is b) == bool(flag)
    got = torch_aclnn.max_pool3d(x, 2, return_indices=flag)
    want = F.max_pool3d(x, 2, return_indices=flag)
    assert isinstance(got, tuple) == isinstance(want, tuple) == bool(flag)


@pytest.mark.parametrize("value", [1, 0, 1.0, None])
def test_schema_bools_take_what_torch_takes(value):
    """ceil_mode is a bool of aten's schema: torch's argument parser refuses an
    int there (`F.max_pool3d(x, 2, ceil_mode=1)` is a TypeError); so do we,
    with the argument named. The test follows torch: should torch accept it,
    so must we."""
    x = torch.randn(1, 1, 5, 5, 5)
    torch_error = _raises(lambda: F.max_pool3d(x, 2, ceil_mode=value))
    if torch_error is None:
        torch.testing.assert_close(torch_aclnn.max_pool3d(x, 2, ceil_mode=value), F.max_pool3d(x, 2, ceil_mode=value))
    else:
        assert isinstance(torch_error, TypeError)
        expected = r"\[torch_aclnn 16100[12]\] max_pool3d: ceil_mode (must be a bool|is required)"
        with pytest.raises(TypeError, match=expected):
            torch_aclnn.max_pool3d(x, 2, ceil_mode=value)


# ---------------------------------------------------------------------------
# smooth_l1's 'mean' / 'sum' over a huge expanded broadcast (spec §4 row 7).

@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_reduction_over_a_huge_broadcast_fails_at_once(device, reduction):
    a = torch.zeros(1, device=device).expand(2 ** 31, 1)
    b = torch.zeros(1, device=device).expand(1, 2 ** 31)
    with pytest.raises(ValueError, match=TAG + r" smooth_l1_loss: 'mean' and 'sum' reduce at most 2\^48 elements"):
        torch_aclnn.smooth_l1_loss(a, b, reduction)
    # just past the bound, and just within it (meta: nothing is computed)
    a = torch.zeros(1, device="meta").expand(2 ** 24, 1)
    with pytest.raises(ValueError, match="at most 2\\^48"):
        torch_aclnn.smooth_l1_loss(a, torch.zeros(1, device="meta").expand(1, 2 ** 24 + 1), reduction)
    assert torch_aclnn.smooth_l1_loss(a, torch.zeros(1, device="meta").expand(1, 2 ** 24), reduction).shape == ()


@pytest.mark.slow
def test_reduction_past_2_30_elements_sums_blocks():
    """Past 2^30 elements the CPU kernel adds its chunks' sums within blocks of
    2^30 elements, then the blocks' sums: the result is the float64 sum to
    rounding, and the same at any thread count."""
    rows, cols = 2 ** 15, 2 ** 15 + 7  # 2^30 + 7 * 2^15 elements: two blocks
    a = torch.linspace(-2, 2, rows, dtype=torch.float32).view(rows, 1)
    b = torch.linspace(-1, 1, cols, dtype=torch.float32).view(1, cols)
    got = torch_aclnn.smooth_l1_loss(a, b, "sum")
    want = sum(F.smooth_l1_loss(a[i:i + 1024].double().expand(-1, cols), b.double().expand(min(1024, rows - i), cols),
                                reduction="sum") for i in range(0, rows, 1024))
    torch.testing.assert_close(got.double(), want, rtol=1e-6, atol=0)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert torch.equal(torch_aclnn.smooth_l1_loss(a, b, "sum"), got)
    finally:
        torch.set_num_threads(threads)


# ---------------------------------------------------------------------------
# The check report.

def test_check_says_an_operator_has_no_kernel_in_a_dtype(capsys):
    assert main(["check", "--op", "elu", "--dtype", "int8"]) == 2
    captured = capsys.readouterr()
    assert "elu has no int8 kernel (its dtypes: float32" in captured.err
    assert "ALL PASSED" not in captured.out


def test_check_cells_show_the_relative_error(capsys, tmp_path):
    out = tmp_path / "check.json"
    assert main(["check", "--op", "elu", "--dtype", "float32", "--quick", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    cells = [line for line in text.splitlines() if line.startswith("| elu | float32 |")]
    assert cells and "rel err" in cells[0] and "max err" not in cells[0]
    report = json.loads(out.read_text())
    (row,) = [r for r in report["numerics"] if r["op"] == "elu"]
    for layout in row["layouts"].values():
        assert 0 <= layout["max_relative_error"] < 1e-5 and layout["ok"]


def test_check_report_is_the_same_in_worker_processes(tmp_path):
    """--jobs spreads whole operators over spawned processes; each operator is seeded on its own, so
    the report is the same text in one process or several, and whichever operators are asked for."""
    from torch_aclnn.harness import check

    ops = ["elu", "leaky_relu_backward"]
    texts = []
    for jobs, asked in ((1, ops), (2, ops), (1, ops[1:])):
        out = io.StringIO()
        assert check.run("cpu", [torch.float32], asked, quick=True, stream=out, jobs=jobs) == 0
        texts.append(out.getvalue())
    assert texts[0] == texts[1]
    rows = [line for line in texts[0].splitlines() if line.startswith("| leaky_relu_backward |")]
    assert len(rows) == 2 and all(row in texts[2] for row in rows)


def test_check_report_fails_an_operator_whose_worker_raises():
    """What a worker cannot report (here: an operator it does not know) is a FAIL row with the
    reason, and the other operators are still reported."""
    from torch_aclnn.harness import check
    from torch_aclnn.harness._progress import Progress

    bar = Progress(2, stream=io.StringIO())
    out = check._reports(["elu", "no_such_op"], "cpu", [torch.float32], True, 0, 2, bar)
    numerics, row, failures = out["no_such_op"]
    assert numerics == [] and row["opcheck"][0] == "FAIL" and "KeyError" in failures[0]
    assert out["elu"][1]["opcheck"] == ("ok", "") and out["elu"][2] == []
