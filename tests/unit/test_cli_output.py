"""The command line's output contract: -o json|yaml documents with stable keys, tables within 100 columns
with all-empty columns dropped, examples in every --help, and the documented exit codes."""

from __future__ import annotations

import argparse
import json

import pytest
import yaml

from greenops import cli
from greenops.common import output
from greenops.engine.reconcile_stack import Pass
from greenops.insight import explain, placements, report

SUBCOMMANDS = [
    ["catalog"],
    ["render"],
    ["up"],
    ["preview"],
    ["destroy"],
    ["refresh"],
    ["reconcile"],
    ["report"],
    ["placements"],
    ["token"],
    ["token", "issue"],
    ["token", "list"],
    ["token", "revoke"],
    ["dashboard"],
    ["explain"],
    ["demo"],
    ["serve"],
]


def test_catalog_json_has_the_documented_keys(capsys):
    assert cli.main(["catalog", "-o", "json"]) == 0
    regions = json.loads(capsys.readouterr().out)
    assert regions and all(list(r) == list(cli.CATALOG_FIELDS) for r in regions)
    assert all(isinstance(r["eu"], bool) and isinstance(r["gaps"], list) for r in regions)


def test_yaml_is_the_json_document(capsys):
    assert cli.main(["catalog", "--provider", "gcp", "-o", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert cli.main(["catalog", "--provider", "gcp", "-o", "yaml"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == as_json


def test_catalog_table_fits_100_columns(capsys):
    assert cli.main(["catalog"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["provider", "region", "country", "eu", "zone", "carbon", "data", "gaps"]
    assert max(len(line) for line in lines) <= output.WIDTH


def test_a_column_empty_in_every_row_is_dropped():
    text = output.table(["name", "nothing", "blank", "value"], [["a", None, "", "1"], ["b", "-", None, "2"]])
    assert text.splitlines() == ["name  value", "a     1", "b     2"]


def test_a_wide_table_renders_within_100_columns_one_line_per_row():
    text = output.table([f"column{i}" for i in range(19)], [["2023-03-15T02:20:00Z"] * 19, ["x"] * 19])
    lines = text.splitlines()
    assert len(lines) == 3 and max(len(line) for line in lines) <= 100
    assert "…" in lines[1]  # cut short, not wrapped: -o json has the whole value


def test_the_column_naming_the_row_is_never_cut_while_others_can_give_way():
    keys = [f"demo/batch-{zone}/0a1b2c3d4e5f" for zone in ("ca", "jp")]  # alike in their first 11 characters
    long = "northamerica-northeast1-and-more"
    text = output.table(["key", *(f"c{i}" for i in range(6))], [[k, *([long] * 6)] for k in keys])
    lines = text.splitlines()
    assert [line.split()[0] for line in lines[1:]] == keys and max(len(line) for line in lines) <= 100
    # the impact table names its rows by its second column
    impact = output.table(["verdict", "key", "rest"], [["loses", keys[0], long * 4]], whole=["key"])
    assert keys[0] in impact and max(len(line) for line in impact.splitlines()) <= 100


def test_cells_are_never_markup():
    assert "[red]quota[/red] <b>" in output.table(["reason"], [["[red]quota[/red] <b>"]])


def test_times_are_iso_utc():
    assert output.utc("2027-01-01T01:00:00+01:00") == "2027-01-01T00:00:00Z"
    assert output.utc(None) is None


def row(**extra: object) -> dict:
    base = {
        "workload": "etl",
        "phase": "Scheduled",
        "provider": "gcp",
        "region": "europe-west3",
        "zone": "DE",
        "start": "2027-01-01T02:00:00+00:00",
        "size": "e2-standard-4",
        "expected": 100.0,
        "baseline": 300.0,
        "cpu": 2,
        "memory": 4,
        "hours": 2,
    }
    return base | extra


def test_report_document_keys_and_table_width():
    rows = report.account([row(), row(workload="w" * 40, phase="Completed", runningSince="2027-01-01T02:05:00Z")])
    doc = report.document(rows)
    assert all(list(r) == [*report.COLUMNS, *report.NOTES, "gateLate"] for r in doc)
    assert doc[0]["start"] == "2027-01-01T02:00:00Z"
    text = report.table(rows)
    tables = text.split("completed: ")[0].splitlines()
    assert max(len(line) for line in tables) <= 100
    assert "in hindsight (gCO2/kWh):" in text  # a completed row has its running time to show
    assert "in hindsight" not in report.table(report.account([row()]))  # nothing judged: no such table


def test_placements_document_keys():
    doc = placements.document([{"key": "dev/etl/abc", "tenant": "t", "start": "2027-01-01T02:00:00Z", "extra": 1}])
    assert list(doc[0]) == list(placements.FIELDS)
    impact = placements.Impact("dev/etl/abc", "t", "azure/swedencentral", "must move", ["gcp/europe-west3"])
    assert list(placements.impact_document([impact])[0]) == list(placements.IMPACT_FIELDS)


def test_explain_document_keys():
    row = {
        "key": "dev/etl/abc",
        "path": "pulumi",
        "phase": "Scheduled",
        "tenant": "t",
        "created_at": "2027-01-01T00:00:00+00:00",
        "answer": {"scheduling_location": "DE", "scheduling_time": "2027-01-01T02:00:00Z", "expected_intensity": 90},
    }
    doc = explain.document(explain.account(row))
    assert list(doc) == list(cli.EXPLAIN_FIELDS)
    assert doc["bookedAt"] == "2027-01-01T00:00:00Z"
    json.dumps(doc)  # plain fields only


def test_reconcile_document_keys():
    done = Pass("same 3", [], None, resource_changes={"same": 3}, entries=[("placed", "etl", "gcp/x (DE) from t")])
    doc = done.document("dev")
    assert list(doc) == ["stack", "pass", "due", "resourceChanges", "changes", "nextChange"]
    assert doc["pass"] == "full" and doc["due"] is None
    assert doc["changes"] == [{"change": "placed", "workload": "etl", "detail": "gcp/x (DE) from t"}]


def test_every_documented_field_is_in_the_help():
    parser = cli.build_parser()
    for name, fields in (
        ("catalog", cli.CATALOG_FIELDS),
        ("report", report.COLUMNS),
        ("placements", placements.FIELDS),
        ("explain", cli.EXPLAIN_FIELDS),
    ):
        text = " ".join(subparser(parser, [name]).format_help().split())
        assert all(f in text for f in fields), name


def subparser(parser: argparse.ArgumentParser, path: list[str]) -> argparse.ArgumentParser:
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


@pytest.mark.parametrize("path", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_help_has_an_example(path):
    assert "Example" in subparser(cli.build_parser(), path).format_help()


def test_the_top_help_documents_the_exit_codes():
    text = cli.build_parser().format_help()
    assert all(f"  {code:<4} " in text for code, _ in cli.EXIT_CODES)


def test_a_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exit:
        cli.main(["catalog", "-o", "xml"])
    assert exit.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_a_refused_command_exits_2(capsys):
    assert cli.main(["reconcile", "--stack", "dev", "--watch", "-o", "json"]) == 2
    assert "not with --watch" in capsys.readouterr().err
    # the watch loop chooses its own passes: asking for both is refused, not guessed at
    assert cli.main(["reconcile", "--stack", "dev", "--watch", "--due"]) == 2
    assert "the watch loop runs due passes between full ones" in capsys.readouterr().err


def test_a_time_is_never_cut_while_other_columns_can_give_way():
    row = [
        "grid-settlement",
        "Scheduled",
        "azure",
        "germanywestcentral-and-more",
        "DE",
        "Standard_D4as_v4",
        "2026-11-30T02:00:00Z",
    ]
    text = output.table(["workload", "phase", "provider", "region", "zone", "size", "start"], [row], max_width=80)
    line = text.splitlines()[1]
    assert line.endswith("2026-11-30T02:00:00Z") and "…" in line and len(line) <= 80  # the region gave way
