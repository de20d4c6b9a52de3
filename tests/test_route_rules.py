"""The drop-in rule's tensor rules (csrc/aten_routes/rules.h) read alike in both
languages: torch_aclnn/_dropin.py's reading (the function level, traced by
torch.compile) and the C++ one of the dispatcher-level routes
(torch_aclnn._C._route_takes) give the same verdict on every case here; and
one function per language tells a contract error from any other."""
import importlib
import math
import warnings

import pytest
import torch
import torch.nn.functional as F

import torch_aclnn
from torch_aclnn import _dropin
from torch_aclnn.ops._errors import is_contract_error

_C = importlib.import_module("torch_aclnn._C")

# an operator each input rule serves (its kernels exist on the CPU)
OPERATOR = {"elementwise": "elu", "upsample": "upsample_nearest3d", "max_pool": "max_pool3d_with_indices",
            "avg_pool": "avg_pool3d", "adaptive_pool": "adaptive_avg_pool3d"}


def test_every_input_rule_is_covered():
    assert sorted(_dropin._INPUTS) == sorted(OPERATOR)


def _tensors():
    """(id, tensor): every rank up to 9 with each axis empty in turn; the other
    dtypes; 4-D and 5-D layouts (channels_last, W not fastest, strided,
    expanded)."""
    for dim in range(10):
        yield f"{dim}d", torch.zeros([2] * dim)
        for axis in range(dim):
            sizes = [2] * dim
            sizes[axis] = 0
            yield f"{dim}d-empty{axis}", torch.zeros(sizes)
    for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.bool, torch.complex64):
        yield f"{dtype}", torch.zeros(2, 3, 4, 5, 6, dtype=dtype)
        yield f"4d-{dtype}", torch.zeros(3, 4, 5, 6, dtype=dtype)
    x4 = torch.randn(3, 4, 5, 6)
    yield "4d-channels_last", x4.to(memory_format=torch.channels_last)
    yield "4d-C-fastest", x4.permute(1, 2, 3, 0).contiguous().permute(3, 0, 1, 2)
    yield "4d-H-fastest", x4.transpose(2, 3)
    yield "4d-strided-W", x4[..., ::2]
    yield "4d-expanded", torch.randn(1, 4, 5, 6).expand(3, 4, 5, 6)
    x5 = torch.randn(2, 3, 4, 5, 6)
    yield "5d-channels_last_3d", x5.to(memory_format=torch.channels_last_3d)
    yield "5d-transposed", x5.transpose(2, 4)
    yield "5d-strided", x5[:, :, ::2]


TENSORS = list(_tensors())


@pytest.mark.parametrize("rule", sorted(OPERATOR))
@pytest.mark.parametrize("name,t", TENSORS, ids=[name for name, _ in TENSORS])
def test_input_rules_read_alike(rule, name, t):
    reason = _dropin._input(t, OPERATOR[rule], rule)
    assert (reason is None) == _C._route_takes(rule, t), reason


def test_the_input_rules_route_what_torch_computes():
    """Spot checks of the tables themselves (what each rule is for)."""
    take = _C._route_takes
    assert take("elementwise", torch.zeros([1] * 8)) and not take("elementwise", torch.zeros([1] * 9))
    assert take("upsample", torch.zeros(0, 1, 1, 1, 1)) and not take("upsample", torch.zeros(1, 0, 1, 1, 1))
    assert not take("upsample", torch.zeros(1, 1, 1, 1))
    assert take("max_pool", torch.zeros(0, 1, 1, 1, 1)) and not take("max_pool", torch.zeros(0, 1, 1, 1))
    assert not take("max_pool", torch.zeros(3, 4, 5, 6).to(memory_format=torch.channels_last))
    assert take("avg_pool", torch.zeros(3, 4, 5, 6).to(memory_format=torch.channels_last))
    assert take("adaptive_pool", torch.zeros(0, 1, 1, 1)) and not take("adaptive_pool", torch.zeros(1, 0, 1, 1))
    assert not take("elementwise", torch.zeros(2, dtype=torch.int32))


REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _loss_cases():
    x = torch.randn(2, 3, 4)
    for reduction in REDUCTIONS:
        yield "same", x, torch.randn(2, 3, 4), reduction, 1.0
        yield "broadcast", x, torch.randn(3, 4), reduction, 1.0
        yield "broadcast-dtypes", x, torch.randn(3, 4, dtype=torch.float64), reduction, 1.0
        yield "dtypes", x, torch.randn(2, 3, 4, dtype=torch.float64), reduction, 1.0
        yield "input-strided", x.transpose(0, 2), torch.randn(4, 3, 2), reduction, 1.0
        yield "target-strided", torch.randn(4, 3, 2), x.transpose(0, 2), reduction, 1.0
        yield "target-expanded", x, torch.randn(1, 3, 4).expand(2, 3, 4), reduction, 1.0
        yield "9d", torch.zeros([1] * 9), torch.zeros([1] * 9), reduction, 1.0
        yield "int", x, torch.zeros(2, 3, 4, dtype=torch.int64), reduction, 1.0
        for beta in (0.0, -1.0, math.nan, math.inf, 65504.0, 65520.0, 3.4e38, 3.5e38):
            yield f"beta{beta}", x, x, reduction, beta
            yield f"half-beta{beta}", x.half(), x.half(), reduction, beta
            yield f"double-beta{beta}", x.double(), x.double(), reduction, beta


LOSSES = list(_loss_cases())


@pytest.mark.parametrize("name,x,y,reduction,beta", LOSSES,
                         ids=[f"{c[0]}-{c[3]}" for c in LOSSES])
def test_loss_rule_reads_alike(name, x, y, reduction, beta):
    reason = _dropin._loss_args(x, y, reduction, beta)
    assert (reason is None) == _C._route_takes("loss", x, y, REDUCTIONS[reduction], beta), reason


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("value", [0.0, -2.5, 3.4e38, -3.4e38, 3.5e38, -1e300, math.inf, -math.inf, math.nan])
def test_scalar_rule_reads_alike(dtype, value):
    t = torch.zeros(2, dtype=dtype)
    assert _dropin._scalars_fit(t, value) == _C._route_takes("scalar", t, value)


@pytest.mark.parametrize("exc", [TypeError, ValueError, IndexError, RuntimeError])
@pytest.mark.parametrize("message", ["[torch_aclnn 161002] elu: self must have at most 8 dims, got 9",
                                     "[torch_aclnn 161001] elu: self is required, got None"])
def test_contract_errors_are_told_apart_by_one_function(exc, message):
    assert is_contract_error(exc(message))


@pytest.mark.parametrize("message", [
    # an earlier call's deferred index check is not this call's
    "[torch_aclnn 161002] deferred: max_unpool3d: indices must be in [0, 8), got 9",
    # torch_aclnn's other errors, and tags that only look alike
    "[torch_aclnn] no route for aten::elu",
    "[torch_aclnn 161003] elu: x",
    "[torch_aclnn 161002] no operator named",
    "elu: [torch_aclnn 161002] elu: x",
])
def test_other_errors_are_not_contract_errors(message):
    assert not is_contract_error(ValueError(message))


def test_only_the_contract_types_are_contract_errors():
    message = "[torch_aclnn 161002] elu: x"
    assert not is_contract_error(KeyError(message))
    assert not is_contract_error(type("Sub", (ValueError,), {})(message))


def test_a_loss_whose_torch_result_follows_the_target_stays_torchs():
    """reduction='none' with a broadcast input and a transposed target: torch's
    result takes the target's layout, so the call is torch's (takes_loss wants
    both operands contiguous)."""
    x, y = torch.randn(1, 3, 4), torch.randn(4, 3, 2).transpose(0, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (F's warning on shapes that differ)
        want = F.smooth_l1_loss(x, y, reduction="none")
        with torch_aclnn.patched(level="function") as stats:
            got = F.smooth_l1_loss(x, y, reduction="none")
    assert not stats.routed
    assert got.stride() == want.stride() != tuple(torch.empty(want.shape).stride())
    assert torch.equal(got, want)
