"""The helper of tests/compat (see conftest.py there)."""
import os

import pytest


def need(ok: bool, what: str) -> None:
    """Skips (or, under TORCH_ACLNN_COMPAT_REQUIRE=1, fails) unless ``ok``."""
    if ok:
        return
    if os.environ.get("TORCH_ACLNN_COMPAT_REQUIRE") == "1":
        pytest.fail(f"{what} (TORCH_ACLNN_COMPAT_REQUIRE=1: this check must run, not skip)", pytrace=False)
    pytest.skip(what)
