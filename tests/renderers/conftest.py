import pytest

from greenops.renderers import RenderSettings
from tests.conftest import AZURE_SUBSCRIPTION

TEST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestKeyForRenderingOnly greenops-test"


@pytest.fixture
def settings():
    return RenderSettings(ssh_public_key=TEST_KEY, azure_subscription_id=AZURE_SUBSCRIPTION)
