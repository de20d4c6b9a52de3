"""What the tests of torch_aclnn.patch share (tests/test_patch.py,
tests/test_patch_dispatcher.py, tests/test_dropin.py): no level left patched
between tests, and torch's own error under a patch."""
import pytest

import torch_aclnn


@pytest.fixture(autouse=True)
def _clean():
    """Each test starts and ends with no level patched (autouse in every file that imports it)."""
    assert not torch_aclnn.is_patched()
    yield
    torch_aclnn.unpatch()
    assert not torch_aclnn.is_patched()


def raises_torchs_error(fn, level: str):
    """``fn()`` raises a RuntimeError, and under ``patched(level=level)`` one
    with the same message: torch's own error. Returns the patch's stats."""
    with pytest.raises(RuntimeError) as want:
        fn()
    with torch_aclnn.patched(level=level) as stats:
        with pytest.raises(RuntimeError) as got:
            fn()
    assert str(got.value) == str(want.value)
    return stats
