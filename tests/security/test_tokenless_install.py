"""Secure by default: a platform install, or external access, without the credentials it needs is
refused at preview by key, never warned about."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.platform import PlatformSecrets
from components.platform_config import PlatformConfig
from greenops.stack.program import missing_credentials

REPO = Path(__file__).resolve().parents[2]
# The prod stack turns monitoring on, so Prometheus's scrape token is among what it needs.
KEYS = ("schedulerAdminToken", "opaSchedulerToken", "opaToken", "opaAdminToken", "metricsToken")


def prod_platform() -> PlatformConfig:
    stack = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    return PlatformConfig.model_validate(stack["config"]["greenops:platform"])


def test_the_prod_platform_without_tokens_is_refused_naming_every_key():
    message = missing_credentials(prod_platform(), PlatformSecrets())
    assert message is not None
    for key in KEYS:
        assert f"greenops:{key}" in message
    assert "external access exposes both services" in message


@pytest.mark.parametrize("left_out", KEYS)
def test_each_token_alone_is_required(left_out: str):
    given = {
        "scheduler_admin_token": "a" * 32,
        "opa_scheduler_token": "b" * 32,
        "opa_token": "c" * 32,
        "opa_admin_token": "d" * 32,
        "metrics_token": "e" * 32,
    }
    field = {
        "schedulerAdminToken": "scheduler_admin_token",
        "opaSchedulerToken": "opa_scheduler_token",
        "opaToken": "opa_token",
        "opaAdminToken": "opa_admin_token",
        "metricsToken": "metrics_token",
    }[left_out]
    given.pop(field)
    message = missing_credentials(prod_platform(), PlatformSecrets(**given))
    assert message is not None and f"greenops:{left_out}" in message
    assert [k for k in KEYS if f"greenops:{k}" in message] == [left_out]


def test_the_complete_set_passes_and_the_prod_stack_shows_how_to_set_it():
    secrets = PlatformSecrets(
        scheduler_admin_token="a", opa_scheduler_token="b", opa_token="c", opa_admin_token="d", metrics_token="e"
    )
    assert missing_credentials(prod_platform(), secrets) is None
    text = (REPO / "stacks" / "Pulumi.prod.yaml").read_text()
    for key in KEYS:
        assert f"pulumi config set --secret greenops:{key}" in text


def test_a_platform_without_opa_or_scheduler_needs_neither():
    config = PlatformConfig.model_validate(
        {
            **prod_platform().model_dump(by_alias=True),
            "policy": {"enabled": False},
            "scheduler": {"enabled": False},
            "externalAccess": {"enabled": False},
            "reconciler": {"enabled": False},
        }
    )
    assert missing_credentials(config, PlatformSecrets()) is None
