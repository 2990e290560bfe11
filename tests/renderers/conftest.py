import pytest

from greenops.renderers import RenderSettings
from tests.support.common import AZURE_SUBSCRIPTION
from tests.support.common import SSH_KEY as TEST_KEY


@pytest.fixture
def settings():
    return RenderSettings(ssh_public_key=TEST_KEY, azure_subscription_id=AZURE_SUBSCRIPTION)
