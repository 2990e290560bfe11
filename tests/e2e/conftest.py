"""The end-to-end suites' cluster, once per module (tests.support.cluster_stacks)."""

from __future__ import annotations

import pytest

from tests.support.cluster_stacks import webhook_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with webhook_cluster(tmp_path_factory) as servers:
        yield servers
