"""data/ is reproducible from the raw public data, and holds summaries rather than raw series."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.shared_data
def test_committed_data_matches_a_fresh_derivation(shared_data, tmp_path):
    out = tmp_path / "data"
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "derive_data.py"), "--source", str(shared_data), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    fresh = sorted(p.relative_to(out) for p in out.rglob("*.json"))
    # provider-schemas/ comes from the pinned cloud SDKs, not from the shared data; its own test re-derives it
    data = REPO / "data"
    committed = sorted(p.relative_to(data) for p in data.rglob("*.json") if "provider-schemas" not in p.parts)
    assert fresh == committed
    for rel in fresh:
        assert (out / rel).read_text() == (REPO / "data" / rel).read_text(), f"data/{rel} is stale: run make data"


def test_profiles_are_summaries_not_raw_series():
    zones = json.loads((REPO / "data" / "carbon" / "profiles.json").read_text())["zones"]
    for zone, prof in zones.items():
        if prof["monthHour"] is not None:
            assert len(prof["monthHour"]) == 12 and {len(row) for row in prof["monthHour"]} == {24}, zone


def test_no_raw_third_party_files_are_committed():
    raw_names = {"electricitymaps_data_centers.json", "gcp_pricing_cyclenerd.yml", "isocountry.csv"}
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    names = {Path(p).name for p in tracked}
    assert not (raw_names & names)
    assert not [n for n in names if n.endswith("_hourly.csv") or n.endswith("_ci.csv")]
