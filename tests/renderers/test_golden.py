"""Golden files: one workload per provider. Regenerate with ``UPDATE_GOLDEN=1 pytest``."""

import os
from pathlib import Path

import pytest
import yaml

from greenops.renderers import render
from tests.support.references import group_reported

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.parametrize(
    "provider,region", [("azure", "swedencentral"), ("gcp", "europe-west9"), ("aws", "eu-north-1")]
)
def test_golden(make_workload, decide, settings, provider, region):
    w = make_workload(name="golden-vm", tenant="team-a", cpu=4, memory=8)
    text = yaml.safe_dump_all(
        render(w, decide(w, provider, region), settings, observed=group_reported(w.name)), sort_keys=False
    )
    path = GOLDEN / f"{provider}.yaml"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} missing: run UPDATE_GOLDEN=1 pytest {__file__}"
    assert text == path.read_text(encoding="utf-8")
