"""Regal, the Rego linter, over the policies with the project's configuration: any finding fails.

`.regal/config.yaml` says which rules are turned off or narrowed, and why; tools/README.md sums it
up. Skipped when the regal binary is not built (tools/install.sh builds it; CI always does)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.common import require_tool

pytestmark = pytest.mark.tools

REPO = Path(__file__).resolve().parents[2]
REGO = REPO / "greenops" / "policies" / "rego"
CONFIG = REPO / ".regal" / "config.yaml"


def test_regal_reports_nothing():
    regal = require_tool("regal")
    result = subprocess.run(
        [regal, "lint", "--config-file", str(CONFIG), "--format", "json", str(REGO)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.stdout.strip(), f"regal printed no report (exit {result.returncode}): {result.stderr}"
    report = json.loads(result.stdout)
    findings = [
        f"{v['location']['file']}:{v['location']['row']}: {v['category']}/{v['title']}: {v['description']}"
        for v in report.get("violations", [])
    ]
    assert findings == [], "regal lint findings:\n" + "\n".join(findings)
    assert result.returncode == 0, result.stderr
    # every policy and test file was linted, none skipped as unparsable
    assert report["summary"]["files_scanned"] == len(list(REGO.glob("*.rego")))
