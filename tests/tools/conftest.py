import pytest

from tests.support.common import require_tool


class _Tools:
    def __getitem__(self, name: str) -> str:
        return require_tool(name)


@pytest.fixture(scope="session")
def tools():
    """``tools["opa"]`` is the path of a pinned tool (see tests.support.common.require_tool)."""
    return _Tools()
