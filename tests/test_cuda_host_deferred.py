"""The deferred index checks (csrc/common/deferred.cpp), driven on the host
through the emulation module (built by tests/conftest.py)."""
import pytest


# ---------------------------------------------------------------------------
# Deferred index checks (csrc/common/deferred.cpp; docs/spec.md §7, "Index checks on
# CUDA"), driven by checks whose result arrives after a number of polls.

@pytest.fixture
def deferred(emulation):
    d = emulation.deferred
    d.set_synchronous(False)
    while d.pending():  # (a previous test's leftovers)
        try:
            d.raise_all()
        except IndexError:
            pass
    yield d
    d.set_synchronous(False)


def _tagged(n):
    return rf"^\[torch_aclnn 161002\] deferred: max_unpool3d: check {n} failed$"


def test_deferred_check_raises_once_arrived_and_only_once(deferred):
    deferred.submit(1, 2, True)       # arrives at the 3rd poll
    deferred.submit(2, 0, False)
    deferred.raise_arrived()
    deferred.raise_arrived()
    assert deferred.pending() == 2
    with pytest.raises(IndexError, match=_tagged(1)):
        deferred.raise_arrived()
    assert deferred.pending() == 1    # 2 waits for the next call
    deferred.raise_arrived()          # 2 arrived and passed: dropped
    assert deferred.pending() == 0
    deferred.raise_arrived()          # 1 was raised once, then gone


def test_deferred_checks_raise_in_call_order_one_at_a_time(deferred):
    for n in (1, 2, 3):
        deferred.submit(n, 0, n != 2)
    with pytest.raises(IndexError, match=_tagged(1)):
        deferred.raise_arrived()
    assert deferred.pending() == 2
    with pytest.raises(IndexError, match=_tagged(3)):
        deferred.raise_arrived()      # 2 passed and was dropped on the way
    assert deferred.pending() == 0


def test_deferred_checks_wait_for_an_earlier_check_on_its_way(deferred):
    """A call raises only what arrived before the first check still pending,
    so that failed checks raise in call order."""
    deferred.submit(1, 2, True)
    deferred.submit(2, 0, True)
    deferred.raise_arrived()          # 1 not arrived: 2 waits behind it
    deferred.raise_arrived()
    assert deferred.pending() == 2
    with pytest.raises(IndexError, match=_tagged(1)):
        deferred.raise_arrived()
    with pytest.raises(IndexError, match=_tagged(2)):
        deferred.raise_arrived()


def test_deferred_raise_all_waits_and_keeps_the_later_checks(deferred):
    deferred.submit(1, 100, False)
    deferred.submit(2, 100, True)
    deferred.submit(3, 100, True)
    with pytest.raises(IndexError, match=_tagged(2)):
        deferred.raise_all()           # waits for 1 (passed), raises 2
    assert deferred.pending() == 1
    with pytest.raises(IndexError, match=_tagged(3)):
        deferred.raise_all()
    deferred.raise_all()
    assert deferred.pending() == 0


def test_deferred_query_errors_lose_no_check(deferred):
    """A query that throws (a CUDA error) leaves its check pending, at the
    front, for a later call."""
    deferred.submit(1, 0, False)
    deferred.submit(2, 0, True, errors=2)
    with pytest.raises(RuntimeError, match="CUDA error while querying check 2"):
        deferred.raise_arrived()       # 1 passed and dropped; 2's query throws
    assert deferred.pending() == 1
    with pytest.raises(RuntimeError, match="CUDA error while querying check 2"):
        deferred.raise_all()           # its wait throws: put back
    assert deferred.pending() == 1
    with pytest.raises(IndexError, match=_tagged(2)):
        deferred.raise_all()
    assert deferred.pending() == 0


def test_synchronous_mode_raises_at_submission_untagged(deferred):
    assert deferred.set_synchronous(True) is False
    with pytest.raises(IndexError, match=r"^\[torch_aclnn 161002\] max_unpool3d: check 1 failed$"):
        deferred.submit(1, 100, True)  # waited for although not arrived
    deferred.submit(2, 100, False)
    assert deferred.pending() == 0
    assert deferred.set_synchronous(False) is True


def test_deferred_checks_are_bounded(deferred):
    """Beyond max_pending the oldest check is waited for (and raises if it failed)."""
    deferred.submit(0, 10 ** 6, True)
    for n in range(1, deferred.max_pending):
        deferred.submit(n, 10 ** 6, False)
    assert deferred.pending() == deferred.max_pending
    with pytest.raises(IndexError, match=_tagged(0)):
        deferred.submit(deferred.max_pending, 10 ** 6, False)
    assert deferred.pending() == deferred.max_pending


def test_deferred_bound_keeps_a_check_whose_wait_fails(deferred):
    deferred.submit(0, 10 ** 6, False, errors=1)
    for n in range(1, deferred.max_pending + 1):
        if n < deferred.max_pending:
            deferred.submit(n, 10 ** 6, False)
            continue
        with pytest.raises(RuntimeError, match="CUDA error while querying check 0"):
            deferred.submit(n, 10 ** 6, False)
    assert deferred.pending() == deferred.max_pending + 1  # 0 went back to the front
    deferred.raise_all()
    assert deferred.pending() == 0
