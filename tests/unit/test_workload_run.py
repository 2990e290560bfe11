"""A workload's ``run`` (what its VM runs) on the Pulumi path: kept exactly as written, bounded,
refused by name, and absent from the spec when not given, so existing workloads keep their keys."""

from __future__ import annotations

import subprocess

import pytest
from pydantic import ValidationError

from greenops.models import Workload, spec_digest
from greenops.models.contract import MAX_SCRIPT_CHARS
from greenops.renderers.user_data import MissingRunSecret, report_script, user_data
from tests.support.cloud_init import written
from tests.support.common import NOW, require_cloud_init

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


def test_the_run_gets_its_secret_env_and_the_values_never_need_quoting(tmp_path):
    """The env file the user-data writes, sourced by its runcmd as cloud-init runs it (paths moved
    into a scratch directory): the script sees each value byte for byte, quotes and dollars too."""
    values = {"db": "s3cr3t-'quoted' \"$HOME\" `x` \\n", "api": "plain"}
    script = '#!/bin/sh\nprintf %s "$DB_PASSWORD" > "$OUT/db"; printf %s "$API_KEY" > "$OUT/api"\n'
    env = [{"name": "DB_PASSWORD", "secret": "db"}, {"name": "API_KEY", "secret": "api"}]
    w = workload(run={"script": script, "env": env})
    report = report_script("https://scheduler.example/reservations/s/etl/1/completion", "gor_" + "x" * 43)
    text = user_data(w, report, values)
    assert text is not None and "s3cr3t" not in text  # base64 only
    checked = subprocess.run(
        [require_cloud_init(), "schema", "-c", "/dev/stdin"], input=text, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr  # cloud-init takes it, env and report too
    command = written(text, tmp_path)
    assert oct((tmp_path / "run.env").stat().st_mode)[-3:] == "600"
    (tmp_path / "report.sh").write_text("#!/bin/sh\nexit 0\n")  # the report itself: tests/scheduler/test_completion.py
    assert subprocess.run(command, env={"OUT": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=30).returncode == 0
    assert (tmp_path / "db").read_text() == values["db"] and (tmp_path / "api").read_text() == "plain"
    assert (tmp_path / "exit-status").read_text().strip() == "0"


def test_a_run_secret_that_is_not_given_is_named_and_nothing_is_rendered():
    w = workload(run={"script": "true", "env": [{"name": "TOKEN", "secret": "api.token"}]})
    with pytest.raises(
        MissingRunSecret, match=rf"workload '{w.name}': run.env\[0\].secret 'api.token' \(TOKEN\): no such key"
    ):
        user_data(w, secrets={"other": "x"})


@pytest.mark.parametrize(
    "env, why",
    [
        ([{"name": "db", "secret": "k"}], "name"),
        ([{"name": "DB", "secret": "a b"}], "secret"),
        ([{"name": "DB", "secret": "k", "value": "hunter2"}], "value"),
        ([{"name": "DB", "secret": "k"}, {"name": "DB", "secret": "j"}], "more than once"),
        ([{"name": f"V{i}", "secret": "k"} for i in range(33)], "at most 32"),
    ],
)
def test_a_malformed_env_is_refused_naming_the_field(env, why):
    with pytest.raises(ValidationError) as caught:
        workload(run={"script": "true", "env": env})
    assert why in str(caught.value).replace("Extra inputs", "value: extra inputs"), str(caught.value)


def test_a_run_without_env_keeps_its_spec_and_key():
    assert workload(run={"script": "true"}).spec()["run"] == {"script": "true"}
