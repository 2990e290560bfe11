"""Stack files (stacks/Pulumi.<stack>.yaml) that the command line reads itself: read through the
shared YAML loader, and a file of the wrong shape is one line naming the file and what is wrong."""

from __future__ import annotations

import pytest

from greenops import cli
from greenops.common.errors import GreenOpsError
from greenops.engine.shards import write_shard_stacks
from greenops.stack.files import read_stack_file


def project_with(tmp_path, text: str):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.t.yaml").write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    "text, message",
    [
        ("- config\n- greenops:workloads\n", "the top level must be a mapping (config: ...), got list"),
        ("config: [1, 2]\n", "config must be a mapping of namespace:key to values, got list"),
        ("config:\n  7: x\n", "config: key 7 is not a namespace:key string"),
        ("config:\n  greenops:render: &r {}\n  greenops:direct: *r\n", "line 2: anchors and aliases"),
        ("7\n", "the top level must be a mapping (config: ...), got int"),
    ],
)
def test_a_stack_file_of_the_wrong_shape_is_one_line(tmp_path, text, message):
    message = f"stacks/Pulumi.t.yaml: {message}"
    project = project_with(tmp_path, text)
    with pytest.raises(GreenOpsError) as info:
        read_stack_file(project / "stacks" / "Pulumi.t.yaml", project)
    assert str(info.value).startswith(message)
    for read in (lambda: cli._stack_raw("t", project), lambda: write_shard_stacks(project, "t", 2)):
        with pytest.raises(GreenOpsError) as info:
            read()
        assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_an_empty_stack_file_has_no_settings(tmp_path):
    project = project_with(tmp_path, "")
    assert read_stack_file(project / "stacks" / "Pulumi.t.yaml", project) == {}
    assert cli._stack_raw("t", project) == {}


def test_the_greenops_keys_of_a_stack_file(tmp_path):
    project = project_with(tmp_path, "config:\n  greenops:provisioning: direct\n  kubernetes:context: x\n")
    assert cli._stack_raw("t", project) == {"provisioning": "direct"}
