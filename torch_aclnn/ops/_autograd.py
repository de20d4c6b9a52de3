"""The operators' autograd.Function for forward mode and torch.func, built
around their C++ derivatives (csrc/autograd/)."""
from __future__ import annotations

import importlib
from typing import Any, Callable

import torch


def register_autograd(qualname: str, jvp: Callable) -> type:
    """The operator's torch.autograd.Function, for the calls its C++ Autograd
    kernel (csrc/autograd/kernel.cpp) does not record itself: those with a
    forward-mode tangent and those inside torch.func transforms. Its backward
    is the operator's C++ formula (csrc/autograd/<family>.cpp, through
    ``torch_aclnn._C._derivative``), which plain autograd runs without this
    class; ``jvp(args, dtype, *tangents)`` is the forward-mode formula, given
    the call's arguments in schema order (the tensors the derivative keeps,
    stand-ins for those it keeps "like", None for the others), the result's
    dtype and one tangent (or None) per argument; for an operator with
    several results (values and integer indices) the arguments are followed
    by the kept results, and the jvp returns the first result's tangent
    (the others are not differentiable). ``generate_vmap_rule``
    builds its vmap rule from the operators' own (_vmap.register_vmap),
    which torch.func's transforms over it (jacrev, jacfwd, hessian, vmap of
    grad) need. Returns the class.

    ``forward`` calls the operator again: Function.apply runs it with grad
    mode and forward grad mode off, so that call goes below autograd, as the
    Function torch.library generates does with its explicit redispatch."""
    namespace, name = qualname.split("::")
    op = getattr(getattr(torch.ops, namespace), name).default
    C = importlib.import_module("torch_aclnn._C")
    keep = C._derivative_keep(qualname)
    several = len(op._schema.returns) > 1

    def forward(*args: Any) -> Any:
        return op(*args)

    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        values = tuple(inputs) + (tuple(output) if several else ())
        kept = [x for x, k in zip(values, keep) if k == "value"]
        ctx.save_for_backward(*kept)
        ctx.save_for_forward(*kept)
        # (for "like": shape, dtype and device only, as the C++ node keeps them)
        ctx.inputs = [(x.shape, x.dtype, x.device) if k == "like" else None if isinstance(x, torch.Tensor) else x
                      for x, k in zip(values, keep)]
        if several:
            ctx.mark_non_differentiable(*output[1:])
        ctx.dtype = (output[0] if several else output).dtype

    def arguments(ctx: Any) -> list:
        kept = iter(ctx.saved_tensors)
        return [next(kept) if k == "value" else _stand_in(*x) if k == "like" else x for x, k in zip(ctx.inputs, keep)]

    def backward(ctx: Any, grad: torch.Tensor, *_: Any) -> tuple:
        return C._derivative(qualname, arguments(ctx), ctx.needs_input_grad, grad)

    def forward_ad(ctx: Any, *tangents: Any) -> Any:
        tangent = jvp(arguments(ctx), ctx.dtype, *tangents)
        return (tangent,) + (None,) * (len(op._schema.returns) - 1) if several else tangent

    # The grad_fn of its results is "<namespace>_<name>_defaultBackward" (it names the overload).
    function = type(f"{namespace}_{name}_default", (torch.autograd.Function,), {
        "__doc__": f"The autograd.Function of {qualname}.",
        "__module__": jvp.__module__,
        "forward": staticmethod(forward),
        "setup_context": staticmethod(setup_context),
        "backward": staticmethod(backward),
        "jvp": staticmethod(forward_ad),
        "generate_vmap_rule": True,
    })
    C._set_autograd_formula(qualname, function.apply)
    return function


def reverse(qualname: str, args: list, index: int, v: torch.Tensor) -> torch.Tensor:
    """The operator's C++ backward formula for argument ``index`` alone,
    applied to ``v``: for a derivative that is elementwise (a diagonal
    Jacobian), also its forward-mode tangent."""
    needs = [i == index for i in range(len(args))]
    return importlib.import_module("torch_aclnn._C")._derivative(qualname, args, needs, v)[index]


def _stand_in(shape, dtype, device) -> torch.Tensor:
    """A tensor of this shape, dtype and device with one element of memory (a
    derivative's ``like`` argument: only those are read)."""
    return torch.empty((), dtype=dtype, device=device).expand(shape)
