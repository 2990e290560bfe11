from datetime import UTC, datetime

import pytest

from greenops.catalog import select_size
from greenops.models import Decision
from greenops.renderers import RenderSettings
from tests.conftest import AZURE_SUBSCRIPTION

TEST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestKeyForRenderingOnly greenops-test"


@pytest.fixture
def settings():
    return RenderSettings(ssh_public_key=TEST_KEY, azure_subscription_id=AZURE_SUBSCRIPTION)


@pytest.fixture
def decide(catalog):
    def make(workload, provider, region, at=datetime(2026, 11, 25, 2, tzinfo=UTC)):
        r = catalog.region(provider, region)
        return Decision(
            provider=provider,
            region=region,
            zone=r.zone,
            scheduling_time=at,
            vm_size=select_size(catalog, provider, region, workload.cpu, workload.memory).name,
            image=catalog.image(provider, region),
            expected_intensity=50,
            baseline_intensity=200,
        )

    return make
