import pytest

from greenops.local.tools import ToolMissing, tool_path


@pytest.fixture(scope="session")
def tools():
    """Paths of the pinned tools; skips with the build command when they are missing."""
    try:
        return {name: tool_path(name) for name in ("pulumi", "opa", "helm", "etcd", "kube-apiserver")}
    except ToolMissing as exc:
        pytest.skip(str(exc))
