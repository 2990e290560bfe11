"""Shards: a workload's shard is its own (stable as others come and go), every workload is in exactly
one shard, and the shard stack files carry the base stack's settings and secrets."""

from __future__ import annotations

import pytest
import yaml

from greenops.common.errors import GreenOpsError
from greenops.common.shard_names import shard_of
from greenops.engine.shards import GENERATED, write_shard_stacks


def test_every_workload_has_one_stable_shard():
    names = [f"w{i}" for i in range(3000)]
    before = {n: shard_of(n, 8) for n in names}
    after = {n: shard_of(n, 8) for n in names + [f"new-{i}" for i in range(500)]}
    assert all(after[n] == before[n] for n in names)  # adding workloads moves none of the others
    sizes = [sum(1 for s in before.values() if s == k) for k in range(8)]
    assert min(sizes) > 300 and max(sizes) < 450, sizes  # about 3000 / 8 each


def test_shard_stack_files_copy_the_base_with_its_secrets(tmp_path):
    (tmp_path / "stacks").mkdir()
    base = {
        "encryptionsalt": "v1:abc",
        "config": {"greenops:workloadsFrom": "workloads", "greenops:kubeconfig": {"secure": "v1:xyz"}},
    }
    (tmp_path / "stacks" / "Pulumi.batch.yaml").write_text(yaml.safe_dump(base))
    assert write_shard_stacks(tmp_path, "batch", 3) == ["batch-shard-0", "batch-shard-1", "batch-shard-2"]
    text = (tmp_path / "stacks" / "Pulumi.batch-shard-2.yaml").read_text()
    assert text.startswith(GENERATED.format(base="batch"))
    shard = yaml.safe_load(text)
    assert shard["encryptionsalt"] == "v1:abc" and shard["config"]["greenops:kubeconfig"] == {"secure": "v1:xyz"}
    assert shard["config"]["greenops:shard"] == {"index": 2, "count": 3}


@pytest.mark.parametrize(
    "stack, count, message",
    [
        ("missing", 2, r"stack 'missing': Pulumi.missing.yaml not found"),
        ("batch", 0, r"--shards 0: at least one shard"),
        ("batch-shard-0", 2, r"stack 'batch-shard-0' is itself a shard; shard its base stack"),
    ],
)
def test_sharding_is_refused_by_name(tmp_path, stack, count, message):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.batch.yaml").write_text(yaml.safe_dump({"config": {}}))
    (tmp_path / "stacks" / "Pulumi.batch-shard-0.yaml").write_text(
        yaml.safe_dump({"config": {"greenops:shard": {"index": 0, "count": 2}}})
    )
    with pytest.raises(GreenOpsError, match=message):
        write_shard_stacks(tmp_path, stack, count)


def test_a_failed_shard_shows_the_cause_not_what_followed_it():
    """When one resource fails, the engine stops and the resources in flight report that, often
    before the cause: the line must still show the cause."""
    from greenops.engine.shards import ShardRun

    output = "\n".join(
        [
            "Diagnostics:",
            "    error: update failed",
            "    error: kubernetes:yaml/v2:ConfigGroup resource 'job-3-vm' has a problem: grpc: the client "
            "connection is closing",
            "    error: Exception calling application: workload 'too-far' was not placed: policy refused it",
            "    error: an unhandled error occurred: Program exited with non-zero exit code: 1",
            "Resources:",
            "    2 errored",
        ]
    )
    line = ShardRun("batch-shard-1", 2, 4.1, output).line()
    assert line.splitlines()[1:] == [
        "    error: Exception calling application: workload 'too-far' was not placed: policy refused it"
    ]
