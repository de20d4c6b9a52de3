"""The 1-element cases of the benchmarks (``bench --kind overhead``): one
call's cost through torch_aclnn's Python API against torch's own call, for
every operator. The throughput cases are in bench_cases.py, the Case/Setup
types in case.py."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import ops
from .case import Case, Setup, _aten, _name, _ours


def overhead_cases(grad: bool):
    """1-element calls with autograd off (grad=False: no input requires grad)
    or on (every floating input requires grad, so both sides record the call
    for backward), each through torch_aclnn's Python API (what a user calls:
    the operator's direct call, ops/_calls.py Operator, after argument checks
    where the call needs them) against the
    torch call a user makes for the same result: the torch.nn.functional
    function where torch has one, else torch.ops.aten's operator (an index
    gather for max_unpool3d_backward, which aten lacks)."""
    up, elu_ops, sl1_ops = ops.upsample, ops.elu, ops.smooth_l1
    unpool_ops, pool_ops = ops.max_unpool, ops.max_pool
    tri_ops = ops.upsample_trilinear
    unpool_ops, pool_ops, avg_ops = ops.max_unpool, ops.max_pool, ops.avg_pool
    unpool_ops, pool_ops, adaptive_ops = ops.max_unpool, ops.max_pool, ops.adaptive_avg_pool
    f32 = torch.float32
    one5 = [1, 1, 1, 1, 1]

    def randn(shape):
        return torch.randn(shape).requires_grad_(grad)

    def ups(fwd, mode, aten_bwd):
        def f(size):
            x = randn(one5)
            return Setup(lambda: getattr(up, fwd)(x, [1, 1, 1]), lambda: F.interpolate(x, [1, 1, 1], mode=mode), [x],
                         entry=lambda: getattr(_ours, fwd).default(x, [1, 1, 1], None, None, None))

        def b(size):
            g = randn(one5)
            return Setup(lambda: getattr(up, f"{fwd}_backward")(g, [1, 1, 1], one5),
                         lambda: aten_bwd(g, [1, 1, 1], one5), [g],
                         entry=lambda: getattr(_ours, f"{fwd}_backward").default(g, [1, 1, 1], one5, None, None, None))
        return [(fwd, f, f"F.interpolate ({mode})"),
                (f"{fwd}_backward", b, _name(aten_bwd))]

    def elu(size):
        x = randn(1)
        return Setup(lambda: elu_ops.elu(x), lambda: F.elu(x), [x], entry=lambda: _ours.elu.default(x, 1.0, 1.0, 1.0))

    def elu_b(size):
        g, x = randn(1), randn(1)
        return Setup(lambda: elu_ops.elu_backward(g, 1.0, 1.0, 1.0, False, x),
                     lambda: _aten.elu_backward(g, 1.0, 1.0, 1.0, False, x), [g, x],
                     entry=lambda: _ours.elu_backward.default(g, 1.0, 1.0, 1.0, False, x))

    lrelu_ops = ops.leaky_relu

    def lrelu(size):
        x = randn(1)
        return Setup(lambda: lrelu_ops.leaky_relu(x, 0.01), lambda: F.leaky_relu(x, 0.01), [x],
                     entry=lambda: _ours.leaky_relu.default(x, 0.01))

    def lrelu_b(size):
        g, x = randn(1), randn(1)
        return Setup(lambda: lrelu_ops.leaky_relu_backward(g, x, 0.01, False),
                     lambda: _aten.leaky_relu_backward(g, x, 0.01, False), [g, x],
                     entry=lambda: _ours.leaky_relu_backward.default(g, x, 0.01, False))

    def sl1(size):
        a, b = randn(1), randn(1)
        return Setup(lambda: sl1_ops.smooth_l1_loss(a, b), lambda: F.smooth_l1_loss(a, b), [a, b],
                     entry=lambda: _ours.smooth_l1_loss.default(a, b, 1, 1.0))

    def sl1_b(size):
        g, a, b = randn(()), randn(1), randn(1)
        return Setup(lambda: sl1_ops.smooth_l1_loss_backward(g, a, b, "mean", 1.0),
                     lambda: _aten.smooth_l1_loss_backward(g, a, b, 1, 1.0), [g, a, b],
                     entry=lambda: _ours.smooth_l1_loss_backward.default(g, a, b, 1, 1.0))

    def unpool(size):
        x, idx = randn(one5), torch.zeros(one5, dtype=torch.int64)
        return Setup(lambda: unpool_ops.max_unpool3d(x, idx, 1), lambda: F.max_unpool3d(x, idx, 1), [x, idx],
                     entry=lambda: _ours.max_unpool3d.default(x, idx, [1, 1, 1], [1, 1, 1], [0, 0, 0]))

    def unpool_b(size):
        g, x, idx = randn(one5), randn(one5), torch.zeros(one5, dtype=torch.int64)
        return Setup(lambda: unpool_ops.max_unpool3d_backward(g, x, idx, [1, 1, 1], [1, 1, 1], [0, 0, 0]),
                     lambda: g.flatten(-3).gather(-1, idx.flatten(-3)).view(x.shape), [g, idx],
                     entry=lambda: _ours.max_unpool3d_backward.default(g, x, idx, [1, 1, 1], [1, 1, 1], [0, 0, 0]))

    def pool(size):
        x = randn(one5)
        return Setup(lambda: pool_ops.max_pool3d_with_indices(x, 1), lambda: F.max_pool3d(x, 1, return_indices=True),
                     [x], entry=lambda: _ours.max_pool3d_with_indices.default(x, [1], [], [0], [1], False))

    def tri(size):
        x = randn(one5)
        return Setup(lambda: tri_ops.upsample_trilinear3d(x, [1, 1, 1]),
                     lambda: F.interpolate(x, [1, 1, 1], mode="trilinear"), [x],
                     entry=lambda: _ours.upsample_trilinear3d.default(x, [1, 1, 1], False, None, None, None))

    def tri_b(size):
        g = randn(one5)
        return Setup(lambda: tri_ops.upsample_trilinear3d_backward(g, [1, 1, 1], one5, False),
                     lambda: _aten.upsample_trilinear3d_backward(g, [1, 1, 1], one5, False), [g],
                     entry=lambda: _ours.upsample_trilinear3d_backward.default(g, [1, 1, 1], one5, False, None, None,
                                                                               None))

    def pool_b(size):
        g, x, idx = randn(one5), randn(one5), torch.zeros(one5, dtype=torch.int64)
        return Setup(lambda: pool_ops.max_pool3d_with_indices_backward(g, x, idx, 1),
                     lambda: _aten.max_pool3d_with_indices_backward(g, x, [1], [1], [0], [1], False, idx), [g, idx],
                     entry=lambda: _ours.max_pool3d_with_indices_backward.default(g, x, idx, [1], [], [0], [1], False))

    def avg(size):
        x = randn(one5)
        return Setup(lambda: avg_ops.avg_pool3d(x, 1), lambda: F.avg_pool3d(x, 1), [x],
                     entry=lambda: _ours.avg_pool3d.default(x, [1], [], [0], False, True, None))

    def avg_b(size):
        g, x = randn(one5), randn(one5)
        return Setup(lambda: avg_ops.avg_pool3d_backward(g, x, 1),
                     lambda: _aten.avg_pool3d_backward(g, x, [1], [1], [0], False, True, None), [g],
                     entry=lambda: _ours.avg_pool3d_backward.default(g, x, [1], [], [0], False, True, None))
    def adaptive(size):
        x = randn(one5)
        return Setup(lambda: adaptive_ops.adaptive_avg_pool3d(x, 1), lambda: _aten._adaptive_avg_pool3d(x, [1, 1, 1]),
                     [x], entry=lambda: _ours.adaptive_avg_pool3d.default(x, [1, 1, 1]))

    def adaptive_b(size):
        g, x = randn(one5), randn(one5)
        return Setup(lambda: adaptive_ops.adaptive_avg_pool3d_backward(g, x),
                     lambda: _aten._adaptive_avg_pool3d_backward(g, x), [g],
                     entry=lambda: _ours.adaptive_avg_pool3d_backward.default(g, x))

    entries = (ups("upsample_nearest3d", "nearest", _aten.upsample_nearest3d_backward)
               + ups("upsample_nearest_exact3d", "nearest-exact", _aten._upsample_nearest_exact3d_backward)
               + [("elu", elu, "F.elu"), ("elu_backward", elu_b, "aten.elu_backward"),
                  ("smooth_l1_loss", sl1, "F.smooth_l1_loss (mean)"),
                  ("smooth_l1_loss_backward", sl1_b, "aten.smooth_l1_loss_backward (mean)"),
                  ("max_unpool3d", unpool, "F.max_unpool3d"),
                  ("max_unpool3d_backward", unpool_b, "gather"),
                  ("max_pool3d_with_indices", pool, "F.max_pool3d (return_indices)"),
                  ("max_pool3d_with_indices_backward", pool_b, "aten.max_pool3d_with_indices_backward"),
                  ("leaky_relu", lrelu, "F.leaky_relu"), ("leaky_relu_backward", lrelu_b, "aten.leaky_relu_backward"),
                  ("upsample_trilinear3d", tri, "F.interpolate (trilinear)"),
                  ("upsample_trilinear3d_backward", tri_b, "aten.upsample_trilinear3d_backward"),
                  ("avg_pool3d", avg, "F.avg_pool3d"), ("avg_pool3d_backward", avg_b, "aten.avg_pool3d_backward"),
                  ("adaptive_avg_pool3d", adaptive, "aten._adaptive_avg_pool3d"),
                  ("adaptive_avg_pool3d_backward", adaptive_b, "aten._adaptive_avg_pool3d_backward")])
    name, target = ("1 element, autograd on", 1.2) if grad else ("1 element", 1.5)
    return [Case(op, name, f32, "functional", build, kind="overhead", aten_name=aten, target_overhead=target)
            for op, build, aten in entries]
