import pytest

from tests.conftest import require_tool


class _Tools:
    def __getitem__(self, name: str) -> str:
        return require_tool(name)


@pytest.fixture(scope="session")
def tools():
    """``tools["opa"]`` is the path of a pinned tool (see tests.conftest.require_tool)."""
    return _Tools()
