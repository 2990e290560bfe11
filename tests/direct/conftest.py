from __future__ import annotations

import pulumi
import pytest

from greenops.renderers import RenderSettings
from tests.support.common import AZURE_SUBSCRIPTION, REGION_PER_CLOUD, SSH_KEY

from .mocks import PARENT_TYPE, DirectMocks


@pytest.fixture
def mocks() -> DirectMocks:
    m = DirectMocks()
    # preview=False: under a preview, outputs of other resources arrive as unknowns and cannot be checked
    pulumi.runtime.set_mocks(m, project="greenops-platform", stack="test", preview=False)
    return m


@pytest.fixture
def settings() -> RenderSettings:
    return RenderSettings(ssh_public_key=SSH_KEY, azure_subscription_id=AZURE_SUBSCRIPTION, gcp_project="greenops-test")


@pytest.fixture
def workload(make_workload):
    return make_workload(name="train-1", tenant="ML-team")


@pytest.fixture
def placed(workload, decide):
    """The decision placing the sample workload on ``cloud``."""

    def make(cloud: str):
        return decide(workload, cloud, REGION_PER_CLOUD[cloud])

    return make


@pytest.fixture
def parent(mocks, workload) -> pulumi.ComponentResource:
    return pulumi.ComponentResource(PARENT_TYPE, workload.name)
