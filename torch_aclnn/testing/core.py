"""The OpInfo machinery every test, the check report and the benchmarks share.

Each operator family describes its operators once, in
``torch_aclnn/testing/<family>.py``, as :class:`OpInfo` objects: how to make
sample inputs, a float64 reference written from the spec, the inputs that
must raise (one per contract-error row), and the aten counterpart with the
samples whose results equal aten's bitwise. Generic tests (``tests/test_common.py``) and
``python -m torch_aclnn check`` iterate over them.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import torch

# Layouts every sample generator should cover (where the rank allows).
#   contiguous        plain row-major
#   channels_last_3d  torch.channels_last_3d (5-D only; aclnn's NDHWC)
#   permuted          a dense but non-contiguous view (last two axes transposed in memory)
#   sliced            a strided view (every other element of the last axis)
LAYOUTS = ("contiguous", "channels_last_3d", "permuted", "sliced")

FLOATING = (torch.float32, torch.float64, torch.float16, torch.bfloat16)

# Tolerances against the float64 reference, stated once for every operator.
# Low-precision kernels compute in float32 and round once, so their error is
# within one rounding of the output dtype (plus float32 accumulation).
TOLERANCES = {
    torch.float64: dict(rtol=1e-10, atol=1e-12),
    torch.float32: dict(rtol=2e-6, atol=1e-6),
    torch.float16: dict(rtol=1e-3, atol=1e-4),
    torch.bfloat16: dict(rtol=8e-3, atol=1e-3),
}


def tolerance(dtype: torch.dtype) -> dict:
    """rtol/atol for comparing a ``dtype`` result against the float64 reference
    (exact for integer dtypes)."""
    return TOLERANCES.get(dtype, dict(rtol=0.0, atol=0.0))


def assert_same_step(eager_loss: torch.Tensor, compiled_loss: torch.Tensor, eager_model: torch.nn.Module,
                     compiled_model: torch.nn.Module) -> None:
    """Backpropagates both losses and checks that the losses and every
    parameter's gradient agree (a compiled training step against eager)."""
    eager_loss.backward()
    compiled_loss.backward()
    torch.testing.assert_close(compiled_loss, eager_loss)
    for pe, pc in zip(eager_model.parameters(), compiled_model.parameters()):
        torch.testing.assert_close(pc.grad, pe.grad)


def assert_compiled_steps(make: Callable[[], torch.nn.Module], loss_fn: Callable, steps: Iterable[tuple]) -> None:
    """A training step compiled with fullgraph and dynamic shapes (backward
    through AOTAutograd) against eager: ``loss_fn(model, *args)`` for each
    ``args`` of ``steps``, on two models ``make()`` builds alike, gives the
    same loss and gradients (:func:`assert_same_step`); the gradients are
    cleared after each step."""
    eager_model, compiled_model = make(), make()
    compiled = torch.compile(loss_fn, fullgraph=True, dynamic=True, backend="aot_eager")
    for args in steps:
        assert_same_step(loss_fn(eager_model, *args), compiled(compiled_model, *args), eager_model, compiled_model)
        eager_model.zero_grad(set_to_none=True)
        compiled_model.zero_grad(set_to_none=True)


def results(x) -> tuple:
    """An operator's results as a tuple: (x,) for one tensor, x itself for
    several (max_pool3d_with_indices: values, indices)."""
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def first(x) -> torch.Tensor:
    """An operator's differentiable result: its only one, or the first of
    several (the others are integer indices)."""
    return results(x)[0]


def node_name(op: str) -> str:
    """``grad_fn.name()`` of a recorded call of torch_aclnn operator ``op``
    ("max_pool3d_with_indices" or "max_pool3d_with_indices.default"):
    "torch_aclnn::MaxPool3dWithIndicesBackward", named as aten names its nodes."""
    return "torch_aclnn::" + "".join(p[:1].upper() + p[1:] for p in op.split(".")[0].split("_")) + "Backward"


def make_layout(t: torch.Tensor, layout: str) -> torch.Tensor:
    """The same values as ``t`` in the memory layout ``layout`` (see LAYOUTS).
    Layouts a rank cannot express fall back to contiguous."""
    t = t.detach()
    if layout == "contiguous" or t.dim() == 0:
        return t.contiguous()
    if layout == "channels_last_3d":
        if t.dim() != 5:
            return t.contiguous()
        return t.contiguous(memory_format=torch.channels_last_3d)
    if layout == "permuted":
        if t.dim() < 2:
            return t.contiguous()
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == "sliced":
        shape = list(t.shape)
        if not shape:
            return t.contiguous()
        shape[-1] *= 2
        base = torch.zeros(shape, dtype=t.dtype, device=t.device)
        view = base[..., ::2]
        view.copy_(t)
        return view
    raise ValueError(f"unknown layout {layout!r}")


def make_tensor(shape: Sequence[int], dtype: torch.dtype, device=None, *, low: float = -4.0,
                high: float = 4.0, layout: str = "contiguous", requires_grad: bool = False,
                generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """Random values in [low, high) (integers for integer dtypes) in a layout, on ``device``
    (default: torch's default device). Values are drawn on the CPU (from ``generator``, a CPU
    generator, if given), so a seed gives the same values on every device."""
    if dtype.is_floating_point:
        t = torch.rand(shape, dtype=torch.float64, generator=generator, device="cpu") * (high - low) + low
    else:
        t = torch.randint(int(low), int(high), shape, dtype=torch.int64, generator=generator, device="cpu")
    t = make_layout(t.to(dtype=dtype, device=device if device is not None else torch.get_default_device()), layout)
    if requires_grad:
        t.requires_grad_(True)
    return t


@dataclasses.dataclass
class SampleInput:
    """Positional args and kwargs of one call of the operator."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    desc: str = ""
    layout: str = "contiguous"
    # True when this sample's result equals aten's bitwise (fp32/fp64); set
    # per sample, since for some sizes aten's index arithmetic rounds
    # differently (docs/ops/upsample.md).
    exact_vs_aten: bool = False

    def __repr__(self) -> str:  # short ids in pytest output
        return f"SampleInput({self.desc or self.layout})"

    def tensors(self) -> list:
        return [a for a in self.args if isinstance(a, torch.Tensor)]

    def map_tensors(self, fn: Callable[[torch.Tensor], Any]) -> "SampleInput":
        conv = lambda a: fn(a) if isinstance(a, torch.Tensor) else a  # noqa: E731
        return dataclasses.replace(self, args=tuple(conv(a) for a in self.args),
                                   kwargs={k: conv(v) for k, v in self.kwargs.items()})


@dataclasses.dataclass
class ErrorInput:
    """A call that breaks one contract rule and the exception it must raise."""

    sample: SampleInput
    exc: type
    match: str  # regex the message must match after the "[torch_aclnn 16100x] op: " prefix
    code: int = 161002
    # Raised only where data is read (CPU/CUDA kernels), not by Meta/fake kernels.
    data_dependent: bool = False
    # Which overload the call targets: "default" or the out= overload's name.
    overload: str = "default"

    def __repr__(self) -> str:
        return f"ErrorInput({self.sample.desc})"


@dataclasses.dataclass
class OpInfo:
    name: str
    family: str
    dtypes: tuple
    sample_inputs: Callable[[Any, torch.dtype, bool], Iterable[SampleInput]]
    reference: Callable[..., torch.Tensor]
    error_inputs: Callable[[Any], Iterable[ErrorInput]]
    aten: Optional[Callable[..., torch.Tensor]] = None
    # Positional arguments gradcheck differentiates (the others are held fixed).
    grad_argnums: tuple = (0,)
    # The out= overload ("grad_input") and the name of its out keyword.
    out_overload: Optional[str] = None
    out_kwarg: str = "grad_input"
    # The out= tensor must be contiguous (max_unpool3d_backward, docs/spec.md §5 row 1).
    out_contiguous_only: bool = False
    # The result dtype of a sample when it is not the dtype the sample was made with.
    result_dtype: Optional[Callable[[SampleInput], torch.dtype]] = None

    @property
    def packet(self):
        return getattr(torch.ops.torch_aclnn, self.name)

    @property
    def op(self):
        return self.packet.default

    @property
    def out_op(self):
        return getattr(self.packet, self.out_overload) if self.out_overload else None

    def samples(self, device="cpu", dtype=torch.float32, requires_grad=False) -> Iterator[SampleInput]:
        yield from self.sample_inputs(device, dtype, requires_grad)

    def errors(self, device="cpu") -> Iterator[ErrorInput]:
        yield from self.error_inputs(device)


def with_backward(forward: OpInfo, **backward: Any) -> list:
    """``forward`` and the OpInfo of its gradient: ``<name>_backward``, of the
    same family and dtypes, with the out= overload ``grad_input``;
    ``backward`` gives its other fields."""
    return [forward, OpInfo(name=f"{forward.name}_backward", family=forward.family, dtypes=forward.dtypes,
                            out_overload="grad_input", **backward)]
