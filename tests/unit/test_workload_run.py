"""A workload's ``run`` (what its VM runs) on the Pulumi path: kept exactly as written, bounded,
refused by name, and absent from the spec when not given, so existing workloads keep their keys."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from greenops.models import Workload, spec_digest
from greenops.models.contract import MAX_SCRIPT_CHARS
from tests.support.common import NOW

BASE = {
    "name": "etl",
    "cpu": 2,
    "memory": 4,
    "duration": "2h",
    "deadline": "2026-11-30T00:00:00Z",
    "originRegion": "westeurope",
}


def workload(**over) -> Workload:
    return Workload.model_validate({**BASE, **over}, context={"now": NOW})


def test_without_a_run_the_spec_and_its_key_are_what_they_were():
    spec = workload().spec()
    assert "run" not in spec
    # the digest a workload of these fields had before run existed (its key must not move)
    assert spec_digest(spec) == "346b09b49d90"  # computed on the commit before run existed


def test_a_run_is_kept_exactly_as_written():
    script = "  #!/bin/sh\n\techo 'done'  \n\n"
    w = workload(run={"script": script})
    assert w.run is not None and w.run.script == script
    assert w.spec()["run"] == {"script": script}
    assert spec_digest(w.spec()) != spec_digest(workload().spec())  # a new script is a new placement


@pytest.mark.parametrize(
    "run",
    [
        {"script": ""},
        {"script": "x" * (MAX_SCRIPT_CHARS + 1)},
        {},
        "echo",
        {"script": "echo", "env": {}},
        {"script": 5},
    ],
)
def test_a_bad_run_is_refused_by_name(run):
    with pytest.raises(ValidationError) as caught:
        workload(run=run)
    assert [e["loc"][0] for e in caught.value.errors()] == ["run"]


def test_the_longest_script_is_taken():
    assert workload(run={"script": "x" * MAX_SCRIPT_CHARS}).run is not None
