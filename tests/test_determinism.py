"""Determinism and thread safety, generic over every operator: bitwise equal
results across repeated runs, across torch.set_num_threads(1) / (2), from 8
Python threads at once, and under torch.use_deterministic_algorithms(True)."""
import threading

import pytest
import torch

from torch_aclnn.testing import OPS, results


def _samples(info, dtype=None):
    dtype = dtype or (torch.float32 if torch.float32 in info.dtypes else info.dtypes[0])
    return list(info.samples(torch.get_default_device(), dtype))


def _run_all(info, samples):
    return [info.op(*s.args, **s.kwargs) for s in samples]


def _same(a, b):
    """Every result of every call bitwise equal (NaN included)."""
    a = [x for r in a for x in results(r)]
    b = [y for r in b for y in results(r)]
    return len(a) == len(b) and all(
        torch.equal(x, y) or (x.dtype.is_floating_point and torch.equal(x.isnan(), y.isnan())
                              and torch.equal(x.nan_to_num(), y.nan_to_num())) for x, y in zip(a, b))


@pytest.mark.parametrize("name", list(OPS))
def test_repeatable_and_thread_count_independent(name):
    info = OPS[name]
    samples = _samples(info)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        first = _run_all(info, samples)
        again = _run_all(info, samples)
        torch.set_num_threads(1)
        single = _run_all(info, samples)
    finally:
        torch.set_num_threads(old)
    assert _same(first, again)
    assert _same(first, single)


@pytest.mark.parametrize("name", list(OPS))
def test_deterministic_algorithms_mode(name):
    info = OPS[name]
    samples = _samples(info)
    expected = _run_all(info, samples)
    old = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        got = _run_all(info, samples)
    finally:
        torch.use_deterministic_algorithms(old)
    assert _same(expected, got)


def test_eight_threads_concurrently():
    """8 Python threads calling every operator at once get the single-threaded bits."""
    work = [(info, s) for info in OPS.values() for s in _samples(info)]
    expected = [info.op(*s.args, **s.kwargs) for info, s in work]
    results = [[None] * len(work) for _ in range(8)]
    errors = []

    def worker(t):
        try:
            order = range(len(work)) if t % 2 == 0 else reversed(range(len(work)))
            for i in order:
                info, s = work[i]
                results[t][i] = info.op(*s.args, **s.kwargs)
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=300)
    assert not errors, errors
    for t in range(8):
        assert _same(expected, results[t]), f"thread {t}"
