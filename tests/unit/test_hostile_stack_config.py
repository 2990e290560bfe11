"""A hostile tenant's stack config and workload files: each bad value is one line naming the file
or object, the field and the reason; nothing reads outside the project, nothing is echoed without
bound, and nothing ends in a traceback."""

from __future__ import annotations

import os
import time

import pytest
import yaml

from greenops.common.errors import MAX_MESSAGE_CHARS
from greenops.stack.stack_config import MAX_REPORTED_ERRORS, StackConfigError, parse_stack_config
from greenops.stack.workload_files import MAX_WORKLOADS
from tests.support.stack_workloads import NOW, workload


def refused(raw: dict, root=None) -> str:
    with pytest.raises(StackConfigError) as info:
        parse_stack_config(raw, now=NOW, root=root)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


# --- greenops:workloadsFrom stays inside the project -------------------------------------------


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / "workloads").mkdir(parents=True)
    (root / "workloads" / "ok.yaml").write_text(yaml.safe_dump([workload("ok")]))
    (tmp_path / "outside.yaml").write_text("password: hunter2-outside\nname: [unclosed\n")
    return root


@pytest.mark.parametrize(
    "entry, reason",
    [
        ("/etc/passwd", "an absolute path outside the project folder"),
        ("../outside.yaml", "outside the project folder"),
        ("workloads/../../outside.yaml", "outside the project folder"),
    ],
)
def test_workloads_from_refuses_paths_outside_the_project(project, entry, reason):
    msg = refused({"workloadsFrom": ["workloads", entry]}, root=project)
    assert msg.startswith(f"greenops:workloadsFrom: {entry}: ")
    assert reason in msg
    assert "root:" not in msg and "hunter2" not in msg


def test_a_symbolic_link_out_of_the_project_is_refused(project):
    os.symlink(project.parent / "outside.yaml", project / "workloads" / "link.yaml")
    msg = refused({"workloadsFrom": "workloads"}, root=project)
    assert msg.startswith("greenops:workloadsFrom: workloads/link.yaml: ")
    assert "outside the project folder" in msg and "hunter2" not in msg
    msg = refused({"workloadsFrom": "workloads/link.yaml"}, root=project)
    assert msg.startswith("greenops:workloadsFrom: workloads/link.yaml: ") and "outside the project folder" in msg


def test_a_link_to_a_folder_outside_is_refused(project, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "w.yaml").write_text(yaml.safe_dump([workload("far")]))
    os.symlink(tmp_path / "elsewhere", project / "far")
    assert "outside the project folder" in refused({"workloadsFrom": "far"}, root=project)


def test_an_absolute_path_inside_the_project_is_read(project):
    config = parse_stack_config({"workloadsFrom": str(project / "workloads")}, now=NOW, root=project)
    assert [w.name for w in config.workloads] == ["ok"]


def test_errors_quote_no_file_content_beyond_a_bounded_field_value(project):
    (project / "workloads" / "ok.yaml").unlink()
    (project / "workloads" / "leak.yaml").write_text(
        yaml.safe_dump(
            [
                workload(
                    "leak",
                    tenant="s3cr3t-token-" + "x" * 500,
                    deadline="s3cr3t-deadline-" + "y" * 500,
                    notes="hunter2",
                )
            ]
        )
    )
    msg = refused({"workloadsFrom": "workloads"}, root=project)
    assert "hunter2" not in msg
    # an over-long tenant is refused by its length, quoting none of it
    assert "tenant: is 513 characters long" in msg and "s3cr3t-token-" not in msg
    # a malformed deadline is quoted, cut to 80 characters
    assert "s3cr3t-deadline-" in msg and "y" * 100 not in msg and '..." is not valid' in msg


# --- one line naming file or object, field and reason, never a traceback -----------------------


@pytest.mark.parametrize(
    "duration",
    ["99999999999999999999h", 1e300, float("inf"), float("nan"), "745h", "31d", -1, "0h"],
)
def test_durations_out_of_bounds_are_one_line(duration):
    msg = refused({"workloads": [workload("long", duration=duration)]})
    assert msg.startswith("greenops:workloads[0] (long).duration: ")


def test_the_longest_duration_the_scheduler_takes_is_accepted():
    [w] = parse_stack_config({"workloads": [workload("month", duration="744h")]}, now=NOW).workloads
    assert w.duration_hours == 744


@pytest.mark.parametrize("deadline", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_deadlines_at_the_edge_of_time_are_one_line(deadline):
    msg = refused({"workloads": [workload("edge", deadline=deadline)]})
    assert msg.startswith("greenops:workloads[0] (edge).deadline: ")


@pytest.mark.parametrize(
    "field, value",
    [
        ("cpu", 1e-300),
        ("cpu", 10**30),
        ("cpu", "2"),
        ("memory", 1e-300),
        ("memory", 0.0009),
        ("memory", 1e300),
        ("memory", "4"),
        ("memory", "4" * 100_000),
        ("maxLatency", 10**30),
    ],
)
def test_sizes_are_numbers_within_bounds(field, value):
    msg = refused({"workloads": [workload("w", **{field: value})]})
    assert msg.startswith(f"greenops:workloads[0] (w).{field}: ") and len(msg) < 200


def test_the_smallest_memory_and_largest_sizes_are_accepted():
    [w] = parse_stack_config(
        {"workloads": [workload("w", cpu=100_000, memory=0.001, maxLatency=1_000_000)]}, now=NOW
    ).workloads
    assert (w.cpu, w.memory, w.max_latency) == (100_000, 0.001, 1_000_000)


def test_ten_thousand_bad_workloads_fail_fast_with_a_bounded_message():
    bad = [workload(f"w{i}", memory="4" * 1000) for i in range(10_000)]
    t = time.perf_counter()
    msg = refused({"workloads": bad})
    assert time.perf_counter() - t < 5
    assert msg.count("memory: ") == MAX_REPORTED_ERRORS
    assert msg.endswith(f"(stopped after {MAX_REPORTED_ERRORS} errors)")
    assert len(msg) < MAX_REPORTED_ERRORS * MAX_MESSAGE_CHARS


def test_more_workloads_than_a_stack_holds_are_refused_before_validation(tmp_path):
    (tmp_path / "w.yaml").write_text(yaml.safe_dump([{"name": f"w{i}"} for i in range(MAX_WORKLOADS + 1)]))
    msg = refused({"workloadsFrom": "w.yaml"}, root=tmp_path)
    assert msg == (
        f"greenops:workloadsFrom: more than {MAX_WORKLOADS} workloads (w.yaml[{MAX_WORKLOADS}] is one too many): "
        "split them over stacks (greenops --shards)"
    )


def test_a_workload_file_with_nested_aliases_is_refused_fast(tmp_path):
    from tests.unit.test_hostile_yaml import BOMB

    (tmp_path / "bomb.yaml").write_text(BOMB)
    t = time.perf_counter()
    msg = refused({"workloadsFrom": "bomb.yaml"}, root=tmp_path)
    assert time.perf_counter() - t < 1
    assert msg.startswith("bomb.yaml: line 1: anchors and aliases")


def test_a_huge_name_is_quoted_with_a_bound():
    msg = refused({"workloads": [workload("n" * 1_000_000)]})
    assert len(msg) < 2 * MAX_MESSAGE_CHARS and "…" in msg


def test_names_that_are_not_strings_do_not_count_as_duplicates_and_are_named():
    huge = [["x"] * 1000] * 1000
    msg = refused({"workloads": [{**workload("a"), "name": huge}, {**workload("b"), "name": huge}]})
    assert "duplicate" not in msg
    assert msg.startswith("greenops:workloads[0].name: Input should be a valid string")


def test_unknown_keys_are_bounded():
    msg = refused({"k" * 10_000: 1, **{f"x{i}": 1 for i in range(1000)}})
    assert msg.startswith("unknown key(s) ") and len(msg) < MAX_MESSAGE_CHARS + 100


def test_a_bad_provisioning_value_is_quoted_with_a_bound():
    msg = refused({"provisioning": "d" * 100_000})
    assert msg.startswith("greenops:provisioning: 'ddd") and len(msg) < 300
