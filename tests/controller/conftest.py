"""The cluster path's servers for the controller suite (tests.support.cluster_path), once per
module, and the controllers' logs in a failed test's report."""

from __future__ import annotations

import pytest

from tests.support.cluster_path import cluster_path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries the end of each controller's log (they live in its tmp_path,
    which a CI run does not keep): a timing failure on a loaded machine can then be read, not guessed."""
    outcome = yield
    report = outcome.get_result()
    tmp = item.funcargs.get("tmp_path") if report.when == "call" and report.failed else None
    for log in sorted(tmp.glob("*.log")) if tmp else []:
        report.sections.append(
            (f"controller log {log.name} (last 6000 characters)", log.read_text(errors="replace")[-6000:])
        )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with cluster_path(tmp_path_factory.mktemp("tls")) as servers:
        yield servers
