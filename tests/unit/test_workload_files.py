"""greenops:workloadsFrom: workloads from YAML files, validated with the same model and named errors
as greenops:workloads, each error pointing at its file and position."""

from __future__ import annotations

import pytest
import yaml

from greenops.stack.stack_config import StackConfigError, parse_stack_config
from tests.support.stack_workloads import NOW, workload


def write(path, doc) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")


def test_a_folder_of_files_per_tenant_one_workload_and_a_list(tmp_path):
    write(
        tmp_path / "workloads" / "media.yaml",
        {"tenant": "media", "workloads": [workload("a"), workload("b", tenant="x")]},
    )
    write(tmp_path / "workloads" / "single.yaml", workload("c"))
    write(tmp_path / "workloads" / "nested" / "more.yml", [workload("d"), workload("e")])
    config = parse_stack_config({"workloadsFrom": "workloads", "workloads": [workload("f")]}, now=NOW, root=tmp_path)
    assert [(w.name, w.tenant) for w in config.workloads] == [
        ("f", "default"),
        ("a", "media"),
        ("b", "x"),
        ("d", "default"),
        ("e", "default"),
        ("c", "default"),
    ]


def test_errors_name_the_file_the_position_and_the_field(tmp_path):
    write(tmp_path / "w" / "team.yaml", {"tenant": "team", "workloads": [workload("ok"), workload("bad", cpu=0)]})
    with pytest.raises(StackConfigError) as info:
        parse_stack_config({"workloadsFrom": ["w"]}, now=NOW, root=tmp_path)
    assert str(info.value) == "w/team.yaml[1] (bad).cpu: Input should be greater than 0"


def test_a_name_declared_twice_names_both_places(tmp_path):
    write(tmp_path / "w" / "one.yaml", [workload("twin")])
    with pytest.raises(
        StackConfigError, match=r"^duplicate workload names: 'twin' in greenops:workloads\[0\], w/one.yaml\[0\]$"
    ):
        parse_stack_config({"workloadsFrom": "w", "workloads": [workload("twin")]}, now=NOW, root=tmp_path)


@pytest.mark.parametrize(
    "setup, source, message",
    [
        (None, "missing", r"^greenops:workloadsFrom: missing: no such file or folder under "),
        ("empty-folder", "empty", r"^greenops:workloadsFrom: empty: no \*\.yaml file in this folder$"),
        ("broken", "broken.yaml", r"^broken\.yaml: not readable as YAML: .*line 1"),
        (
            "scalar",
            "scalar.yaml",
            r"^scalar\.yaml: expected a workload, a list of workloads or \{tenant, workloads\}, got int$",
        ),
        ("extra", "extra.yaml", r"^extra\.yaml: unknown key\(s\) \['owner'\] beside workloads"),
        (None, 7, r"^greenops:workloadsFrom: must be a path or a list of paths"),
    ],
)
def test_unreadable_sources_are_refused_by_name(tmp_path, setup, source, message):
    if setup == "empty-folder":
        (tmp_path / "empty").mkdir()
    elif setup == "broken":
        (tmp_path / "broken.yaml").write_text("workloads: [unclosed\n")
    elif setup == "scalar":
        (tmp_path / "scalar.yaml").write_text("7\n")
    elif setup == "extra":
        write(tmp_path / "extra.yaml", {"owner": "me", "workloads": []})
    with pytest.raises(StackConfigError, match=message):
        parse_stack_config({"workloadsFrom": source}, now=NOW, root=tmp_path)


def test_a_script_file_beside_the_workload_file_becomes_its_run(tmp_path):
    (tmp_path / "w" / "scripts").mkdir(parents=True)
    (tmp_path / "w" / "scripts" / "etl.sh").write_text("#!/bin/sh\necho 'été'\n", encoding="utf-8")
    write(tmp_path / "w" / "etl.yaml", workload("etl", run={"scriptFile": "scripts/etl.sh"}))
    [etl] = parse_stack_config({"workloadsFrom": ["w"]}, now=NOW, root=tmp_path).workloads
    assert etl.run is not None and etl.run.script == "#!/bin/sh\necho 'été'\n"


@pytest.mark.parametrize(
    "named,content,message",
    [
        ("../../outside.sh", None, "leaves the project folder"),
        ("missing.sh", None, "No such file or directory"),
        ("big.sh", "x" * 40_001, "is longer than a script may be (10000 characters)"),
        ("latin1.sh", b"\xe9t\xe9", "is not UTF-8 text"),
    ],
)
def test_a_bad_script_file_is_refused_naming_the_workload_and_the_field(tmp_path, named, content, message):
    (tmp_path / "outside.sh").write_text("echo", encoding="utf-8")
    project = tmp_path / "project"
    (project / "w").mkdir(parents=True)
    if isinstance(content, str):
        (project / "w" / named).write_text(content, encoding="utf-8")
    elif content is not None:
        (project / "w" / named).write_bytes(content)
    write(project / "w" / "etl.yaml", workload("etl", run={"scriptFile": named}))
    with pytest.raises(StackConfigError) as info:
        parse_stack_config({"workloadsFrom": ["w"]}, now=NOW, root=project)
    assert str(info.value).startswith("w/etl.yaml: run.scriptFile: ") and message in str(info.value)


def test_a_loop_of_links_is_refused_by_name(tmp_path):
    """Tenancy's second round: a symlink loop named in workloadsFrom gave a traceback."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(StackConfigError, match=r"^greenops:workloadsFrom: a: not a usable path \(Symlink loop"):
        parse_stack_config({"workloadsFrom": "a"}, now=NOW, root=tmp_path)
