import os

import pytest

from greenops.local.tools import ToolMissing, tool_path


class _Tools:
    def __getitem__(self, name: str) -> str:
        try:
            return tool_path(name)
        except ToolMissing as exc:
            # CI builds the tools first, so a missing one there is a failure, never a skip.
            if os.environ.get("CI"):
                pytest.fail(str(exc))
            pytest.skip(str(exc))


@pytest.fixture(scope="session")
def tools():
    """``tools["opa"]`` is the path of a pinned tool; skips locally (fails in CI) when missing."""
    return _Tools()
