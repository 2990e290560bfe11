"""Why a Pulumi operation failed, told briefly and without losing the cause.

Pulumi's output ends with a Diagnostics section (each resource's ``error:`` lines) and a summary.
The stack's own diagnostics can follow the cause at any length: a warning per workload the
program registered before the engine stopped (a shard of 30 workloads printed 30), or the
traceback of a program cut off mid-registration. So the last lines of the output alone can miss
the cause; it is looked for in the whole output.
"""

from __future__ import annotations

# error lines that follow the cause rather than state it
NOT_THE_CAUSE = ("an unhandled error occurred", "error: update failed", "the client connection is closing")


def causes(output: str) -> list[str]:
    """The distinct ``error:`` lines that state a cause, in the order Pulumi printed them."""
    stripped = (ln.strip() for ln in output.splitlines())
    return list(
        dict.fromkeys(ln for ln in stripped if ln.startswith("error:") and not any(n in ln for n in NOT_THE_CAUSE))
    )


def failure_text(output: str, most_causes: int = 5, last_lines: int = 15) -> str:
    """The causes first (at most ``most_causes``), then the output's last lines for context (the
    summary, or a crash with no ``error:`` line), each cause said once."""
    found = causes(output)[:most_causes]
    tail = [ln.rstrip() for ln in output.splitlines() if ln.strip() and ln.strip() not in found][-last_lines:]
    return "\n".join([*found, *tail])
