"""The Pulumi Automation API behind the ``greenops`` command: one stack, the project's own
program, the pinned CLI and a project-local file backend by default."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any, Literal, cast, overload

from pulumi import automation as auto

from greenops.common.clock import system_clock
from greenops.common.errors import GreenOpsError
from greenops.common.toolpaths import REPO, TOOLS_BIN, pulumi_env
from greenops.engine.stale_lock import clear_stale_locks
from greenops.observability import spans, tracing

PROJECT = "greenops-platform"


class StackLocked(GreenOpsError):
    """Another update holds the stack's lock."""


def project_dir() -> Path:
    """The Pulumi project (its Pulumi.yaml and stacks/): ``GREENOPS_PROJECT_DIR`` when set (a CI
    checkout elsewhere), else this repository."""
    return Path(os.environ.get("GREENOPS_PROJECT_DIR") or REPO)


def checkpoint_env() -> dict[str, str]:
    """The state is written once, when an operation ends, not after every step. The file backend
    rewrites the whole state file per step, so `up` grew with the square of the stack: 100
    workloads took 95 s and 300 took 809 s with every step written, 21 s and 53 s without
    (benchmarks/scale.py). A run killed half-way leaves the state of the run before it, and the
    next run converges without losing or doubling anything: a placement is booked under its
    reservation key, so placing again replays the booking, and objects are server-side applied, so
    applying again upserts them (tests/e2e/test_watch.py kills a pass with -9).
    ``GREENOPS_CHECKPOINTS=every-step`` writes every step again."""
    if os.environ.get("GREENOPS_CHECKPOINTS") == "every-step":
        return {}
    return {"PULUMI_SKIP_CHECKPOINTS": "true"}


def inline_stack(
    name: str,
    program: Callable[[], None],
    work_dir: Path,
    env: dict[str, str] | None = None,
    project: str = PROJECT,
) -> auto.Stack:
    """Stack ``name`` running ``program`` in-process with the pinned CLI, in ``work_dir`` and with
    ``env`` on top of the tools' environment. A ``work_dir`` without a project file (tests,
    benchmarks) is given one naming ``project``; one with it (Pulumi.yaml, .yml or .json) keeps its own."""
    envs = pulumi_env(env)
    # A project file of any of Pulumi's names is the project's own: passing settings would rewrite it.
    has_project = any((work_dir / f"Pulumi.{ext}").exists() for ext in ("yaml", "yml", "json"))
    settings = None if has_project else auto.ProjectSettings(name=project, runtime="python")
    return auto.create_or_select_stack(
        stack_name=name,
        project_name=project,
        program=program,
        opts=auto.LocalWorkspaceOptions(
            work_dir=str(work_dir),
            pulumi_home=envs["PULUMI_HOME"],
            env_vars=envs,
            pulumi_command=auto.PulumiCommand(root=str(TOOLS_BIN.parent)),
            project_settings=settings,
        ),
    )


def stack(name: str, work_dir: Path | None = None, env: dict[str, str] | None = None) -> auto.Stack:
    """``name`` of the project in ``work_dir`` (default: project_dir()), run in-process."""

    root = work_dir or project_dir()
    made: list[auto.Stack] = []
    made.append(inline_stack(name, pass_program(root, lambda: made[0]), root, {**checkpoint_env(), **(env or {})}))
    return made[0]


def pass_program(root: Path, stack_of: Callable[[], auto.Stack]) -> Callable[[], None]:
    """The program as the Automation API runs it: handed what the stack (``stack_of()``) has before
    the pass, read from the state and outputs, and the pass's instant from the stack's environment
    (an inline program runs in the caller's process, whose environment is not the stack's)."""
    from greenops.stack import program

    def run_program() -> None:  # Pulumi ignores what an inline program returns (unless it is awaitable)
        st = stack_of()
        program.run(
            root=root,
            records=lambda: records_in_state(st),
            now=system_clock(st.workspace.env_vars),
            placement_rows=lambda: placements(st),
        )

    return run_program


def records_in_state(st: auto.Stack) -> dict[str, Any]:
    """The placements' records as the state has them now: a direct-mode pass declares from these
    rather than from the stack's outputs, which a failed update leaves as they were."""
    from greenops.direct.records import records_in_state as in_deployment

    return in_deployment(st.export_stack().deployment or {})


@overload
def run(st: auto.Stack, op: Literal["up"], stream: bool = True) -> auto.UpResult: ...


@overload
def run(
    st: auto.Stack, op: str, stream: bool = True
) -> auto.UpResult | auto.PreviewResult | auto.RefreshResult | auto.DestroyResult: ...


def run(
    st: auto.Stack, op: str, stream: bool = True
) -> auto.UpResult | auto.PreviewResult | auto.RefreshResult | auto.DestroyResult:
    """``up``, ``preview``, ``refresh`` or ``destroy``, streaming Pulumi's progress; a clear error
    when locked. A lock left by a run that died on this host is cleared, said, and the op retried once."""
    try:
        return _run(st, op, stream)
    except StackLocked:
        cleared = clear_stale_locks(
            st.workspace.env_vars.get("PULUMI_BACKEND_URL"), st.workspace.project_settings().name, st.name
        )
        if not cleared:
            raise
        print("\n".join(cleared), flush=True)
        return _run(st, op, stream)


def _run(
    st: auto.Stack, op: str, stream: bool
) -> auto.UpResult | auto.PreviewResult | auto.RefreshResult | auto.DestroyResult:
    out = sys.stdout.write if stream else None
    # The operation's span goes to the engine as TRACEPARENT: the engine starts the dynamic
    # provider with the CLI's environment, so Placement's spans are its children.
    with (
        tracing.tracer(__name__).start_as_current_span(
            spans.PULUMI, attributes={spans.STACK: st.name, spans.OPERATION: op}
        ),
        # (a LocalWorkspace's env_vars is its dict, typed as the Workspace's Mapping)
        tracing.context_in_env(cast(MutableMapping[str, str], st.workspace.env_vars)),
    ):
        return _operation(st, op, out)


def _operation(
    st: auto.Stack, op: str, out: Callable[[str], Any] | None
) -> auto.UpResult | auto.PreviewResult | auto.RefreshResult | auto.DestroyResult:
    try:
        if op == "up":
            return st.up(on_output=out, color="never")
        if op == "preview":
            return st.preview(on_output=out, color="never")
        if op == "refresh":
            return st.refresh(on_output=out, color="never")
        if op == "destroy":
            return st.destroy(on_output=out, color="never")
    except auto.ConcurrentUpdateError:
        raise StackLocked(
            f"stack {st.name} is being updated by another run (its lock is held); try again when it ends"
        ) from None
    except auto.CommandError as exc:
        if _lock_race(str(exc)):
            raise StackLocked(
                f"stack {st.name} is being updated by another run (its lock was being taken "
                "while this run looked); try again when it ends"
            ) from None
        raise GreenOpsError(f"pulumi {op} of stack {st.name} failed:\n{_tail(str(exc))}") from None
    raise ValueError(op)


def _lock_race(text: str) -> bool:
    """The file backend lists its lock folder non-atomically: a run that looks while another writes
    its lock file fails with this instead of ConcurrentUpdateError. It is the same situation."""
    return "could not list bucket" in text and "/.pulumi/locks/" in text


def placements(st: auto.Stack) -> list[dict[str, Any]]:
    out = st.outputs().get("placements")
    return list(out.value) if out else []


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join([ln for ln in text.splitlines() if ln.strip()][-lines:])
