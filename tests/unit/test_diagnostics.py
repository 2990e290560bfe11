"""A failed operation's message keeps its cause, however much the engine printed after it."""

from __future__ import annotations

from greenops.engine.diagnostics import causes, failure_text
from greenops.engine.shards import ShardRun

CAUSE = "error: Exception calling application: workload 'too-far' was not placed: policy refused it"


def stopped_engine_output(traceback_lines: int) -> str:
    """The shape of a real ``pulumi up`` whose Placement failed while the program was still
    registering: the cause in Diagnostics, then the stack's own, a warning per workload it had
    registered and the program's traceback."""
    held = [
        f"    warning: workload 'job-{i}': Instance job-{i} is held until its SecurityGroup reports" for i in range(30)
    ]
    traceback = [
        f'      File "/venv/lib/python3.11/site-packages/pulumi/x.py", line {i}, in f' for i in range(traceback_lines)
    ]
    return "\n".join(
        [
            " code: 255",
            " stdout: Updating (batch-shard-1):",
            f" +  pulumi-python:dynamic:Resource too-far-placement creating (0s) {CAUSE}",
            "Diagnostics:",
            "  pulumi-python:dynamic:Resource (too-far-placement):",
            f"    {CAUSE}",
            "  kubernetes:yaml/v2:ConfigGroup (job-3-vm):",
            "    error: grpc: the client connection is closing",
            "  pulumi:pulumi:Stack (greenops-platform-batch-shard-1):",
            *held,
            "    error: an unhandled error occurred: Program exited with non-zero exit code: 1",
            "    Traceback (most recent call last):",
            *traceback,
            "    grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC: StatusCode.UNAVAILABLE>",
            "    error: update failed",
            "Resources:",
            "    + 16 created",
            "    2 errored",
            "Duration: 3s",
            " stderr: ",
        ]
    )


def test_the_cause_leads_even_after_a_long_traceback():
    output = stopped_engine_output(traceback_lines=60)
    text = failure_text(output)
    assert text.splitlines()[0] == CAUSE
    assert text.count(CAUSE) == 1  # said once, not again from the Diagnostics section
    assert text.splitlines()[-3:] == ["    2 errored", "Duration: 3s", " stderr:"]
    assert len(text.splitlines()) <= 20  # bounded, however long the output


def test_only_causes_are_causes():
    assert causes(stopped_engine_output(traceback_lines=3)) == [CAUSE]


def test_a_crash_with_no_error_line_is_told_by_its_last_lines():
    output = "\n".join(["Updating (dev):", "panic: runtime error: index out of range", "goroutine 1 [running]:"])
    assert failure_text(output).splitlines()[-2:] == [
        "panic: runtime error: index out of range",
        "goroutine 1 [running]:",
    ]


def test_a_shard_that_failed_through_greenops_names_its_cause():
    """What ``greenops up --shards`` sees of a failed shard: greenops's own error message, on stderr."""
    stderr = "greenops: pulumi up of stack batch-shard-1 failed:\n" + failure_text(stopped_engine_output(60))
    line = ShardRun("batch-shard-1", 2, 4.8, stderr).line()
    assert line.splitlines()[1:] == [f"    {CAUSE}"]
