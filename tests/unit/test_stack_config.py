from pathlib import Path

import pytest
import yaml

from greenops.stack.stack_config import StackConfigError, parse_stack_config
from tests.support.common import NOW

STACKS = Path(__file__).resolve().parents[2] / "stacks"


def stack_raw(name: str) -> dict:
    config = yaml.safe_load((STACKS / f"Pulumi.{name}.yaml").read_text())["config"]
    return {k.split(":", 1)[1]: v for k, v in config.items()}


@pytest.mark.parametrize("stack", ["dev", "staging", "prod", "prod-workloads"])
def test_shipped_stacks_validate(stack):
    parse_stack_config(stack_raw(stack), now=NOW)


def test_dev_stack_samples_cover_the_issue_cases():
    ws = parse_stack_config(stack_raw("dev"), now=NOW).workloads
    assert len(ws) >= 5
    assert {p for w in ws for p in w.eligible_providers} == {"azure", "gcp", "aws"}
    assert any(w.data_residency.value == "eu" for w in ws)
    assert any(w.max_latency < 2000 for w in ws)
    assert any((w.deadline - NOW).days > 180 for w in ws)


def test_bad_workload_is_named_with_field_and_reason():
    raw = {
        "workloads": [
            {
                "name": "ok-one",
                "cpu": 1,
                "memory": 1,
                "duration": 1,
                "deadline": "2027-01-01T00:00:00Z",
                "originRegion": "westeurope",
            },
            {
                "name": "broken",
                "cpu": 0,
                "memory": 1,
                "duration": "1x",
                "deadline": "2027-01-01T00:00:00Z",
                "originRegion": "westeurope",
            },
        ]
    }
    with pytest.raises(StackConfigError) as info:
        parse_stack_config(raw, now=NOW)
    msg = str(info.value)
    assert "greenops:workloads[1] (broken).cpu: Input should be greater than 0" in msg
    assert 'greenops:workloads[1] (broken).duration: "1x" is not a duration: whole hours as a number (6)' in msg
    assert "ok-one" not in msg


def test_duplicate_names_are_refused():
    w = {
        "name": "twin",
        "cpu": 1,
        "memory": 1,
        "duration": 1,
        "deadline": "2027-01-01T00:00:00Z",
        "originRegion": "westeurope",
    }
    with pytest.raises(
        StackConfigError,
        match=r"duplicate workload names: 'twin' in greenops:workloads\[0\], "
        r"greenops:workloads\[1\]$",
    ):
        parse_stack_config({"workloads": [w, dict(w)]}, now=NOW)


def test_bad_render_settings_name_the_key():
    with pytest.raises(StackConfigError, match="greenops:render.namespaces: Extra inputs are not permitted"):
        parse_stack_config({"render": {"namespaces": "x"}}, now=NOW)


def test_workloads_must_be_a_list():
    with pytest.raises(StackConfigError, match="greenops:workloads: must be a list"):
        parse_stack_config({"workloads": {"name": "x"}}, now=NOW)


def test_a_ca_certificate_that_is_not_pem_is_named():
    with pytest.raises(StackConfigError, match=r"greenops:endpoints\.caCertificate: .*not a PEM certificate"):
        parse_stack_config({"endpoints": {"caCertificate": "-----BEGIN CERTIFICATE-----\nnope\n"}}, now=NOW)
