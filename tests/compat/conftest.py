"""tests/compat: checks that need what `make compat` / `make npu-import-check`
(.ci/compat) set up: a built sdist and wheel, wheels built against other
torch releases, the real torch_npu. Elsewhere they skip; with
TORCH_ACLNN_COMPAT_REQUIRE=1 (as .ci/compat runs them) a missing input fails
instead, so a skip is never counted as a pass."""
import os

import pytest

from compat_util import need


@pytest.fixture
def compat_env():
    """The .ci/compat input named NAME (TORCH_ACLNN_COMPAT_NAME), or a skip."""
    def get(name: str) -> str:
        value = os.environ.get(f"TORCH_ACLNN_COMPAT_{name}", "")
        need(bool(value), f"TORCH_ACLNN_COMPAT_{name} is not set (run by make compat)")
        return value
    return get
