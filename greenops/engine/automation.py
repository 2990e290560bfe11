"""The Pulumi Automation API behind the ``greenops`` command: one stack, the project's own
program, the pinned CLI and a project-local file backend by default."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from pulumi import automation as auto

from greenops.common.clock import system_clock
from greenops.common.errors import GreenOpsError
from greenops.common.toolpaths import REPO, TOOLS_BIN, pulumi_env
from greenops.direct.records import COMPONENT_TYPE
from greenops.engine.diagnostics import failure_text
from greenops.engine.stack_lock import StackLocked, holding, lock_race, pulumi_holders
from greenops.engine.stale_lock import clear_stale_locks
from greenops.observability import spans, tracing
from greenops.placing.due import Due

if TYPE_CHECKING:
    from greenops.stack.stack_config import StackConfig

PROJECT = "greenops-platform"


__all__ = ["StackLocked"]  # (where callers have always found it)


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


def pass_program(
    root: Path,
    stack_of: Callable[[], auto.Stack],
    only: set[str] | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> Callable[[], None]:
    """The program as the Automation API runs it: handed what the stack (``stack_of()``) has before
    the pass, read from the state and outputs (or the ``rows`` its caller read already), and the
    pass's instant from the stack's environment (an inline program runs in the caller's process,
    whose environment is not the stack's). ``only``: the due workloads of a targeted pass."""
    from greenops.stack import program

    def run_program() -> None:  # Pulumi ignores what an inline program returns (unless it is awaitable)
        st = stack_of()
        program.run(
            root=root,
            records=lambda: records_in_state(st),
            now=system_clock(st.workspace.env_vars),
            placement_rows=(lambda: rows) if rows is not None else (lambda: placements(st)),
            only=only,
        )

    return run_program


def stack_config(st: auto.Stack) -> StackConfig:
    """The stack's ``greenops:*`` config as the program validates it (the same keys, the same
    project folder): the workloads it declares now, for one."""
    from greenops.stack.stack_config import KEYS, StackConfigError, parse_stack_config

    raw: dict[str, Any] = {}
    try:
        settings = st.get_all_config()
    except auto.CommandError as exc:  # no passphrase, an unreadable stack file: said, not a traceback
        raise GreenOpsError(f"stack {st.name}: cannot read its config:\n{failure_text(str(exc))}") from None
    for key, value in settings.items():
        namespace, _, name = key.partition(":")
        if namespace == "greenops" and name in KEYS:
            try:  # as pulumi.Config.get_object reads it, else the plain string it is
                raw[name] = json.loads(value.value)
            except ValueError:
                raw[name] = value.value
    try:
        return parse_stack_config(raw, root=_root(st))
    except StackConfigError as exc:
        raise GreenOpsError(f"stack {st.name}: {exc}") from None


def _root(st: auto.Stack) -> Path:
    """The project folder the stack's program runs in (workloadsFrom paths are relative to it)."""
    return Path(st.workspace.work_dir or project_dir())


def _urn(st: auto.Stack, type_token: str, name: str = "") -> str:
    """The URN (or its prefix, without ``name``) of a resource the program registers at the top
    level: the stack is its parent."""
    stack = st.name.rsplit("/", 1)[-1]  # a URN names the stack alone, not its organization and project
    return f"urn:pulumi:{stack}::{st.workspace.project_settings().name}::{type_token}" + (f"::{name}" if name else "")


def workload_target(st: auto.Stack, name: str) -> str:
    """One target for a workload's component and, by name, every resource under it, present or to
    come: its Placement (``<name>-placement``), its objects' group (``<name>-vm``) and their objects
    (``<name>-vm:<namespace>/<name>[-<suffix>]``), a direct VM's resources (``<name>-<suffix>``). A
    URN names its parents' types, not their names, so the name must be the workload's alone: a
    caller makes sure no other workload's name begins with it (overlapping_names). One pattern per
    workload, since the engine matches every target against every resource."""
    # (in a target, * stops at a ':' or '/', ** does not: a group's objects are "<group>:<ns>/<name>")
    return _urn(st, COMPONENT_TYPE) + f"**::{name}**"


def overlapping_names(due: Iterable[str], every: Iterable[str]) -> list[str]:
    """Due workloads whose target could also match another workload's resources: one whose name
    begins another's, either way round (``etl`` and ``etl2``; ``etl-nic`` is also the name of
    ``etl``'s network interface)."""
    names = set(every)
    return sorted(d for d in due if any(n != d and (n.startswith(d) or d.startswith(n)) for n in names))


def up_due(
    st: auto.Stack, due: Due, rows: list[dict[str, Any]], config: StackConfig, stream: bool = True
) -> auto.UpResult:
    """``up`` of the due workloads only: their resources are the targets and the program registers
    only them; the engine keeps every other resource as it is, and deletes none of them. The
    render-mode CRDs are targets too: the Kubernetes provider learns a kind's scope from the CRDs
    it is handed in the same update, and nothing depends on them in the state
    (RenderModeCrds.known), so targeting them reaches no other workload."""
    from components import render_mode

    program = pass_program(_root(st), lambda: st, only=due.names, rows=rows)
    targets = [workload_target(st, name) for name in sorted(due.names)]
    if config.kubernetes.mode == "render" or config.kubernetes.install_crd_stubs:
        crds = _urn(st, render_mode.COMPONENT_TYPE)
        targets += [f"{crds}::{render_mode.NAME}", f"{crds}$**"]
    return run(st, "up", stream=stream, targets=targets, program=program)


def records_in_state(st: auto.Stack) -> dict[str, Any]:
    """The placements' records as the state has them now: a direct-mode pass declares from these
    rather than from the stack's outputs, which a failed update leaves as they were."""
    from greenops.direct.records import records_in_state as in_deployment

    return in_deployment(st.export_stack().deployment or {})


Targeted = tuple[list[str], Callable[[], None]] | None  # an up's targets and the program that registers them


@overload
def run(
    st: auto.Stack,
    op: Literal["up"],
    stream: bool = True,
    targets: list[str] | None = None,
    program: Callable[[], None] | None = None,
) -> auto.UpResult: ...


@overload
def run(
    st: auto.Stack,
    op: str,
    stream: bool = True,
    targets: list[str] | None = None,
    program: Callable[[], None] | None = None,
) -> auto.UpResult | auto.PreviewResult | auto.RefreshResult | auto.DestroyResult: ...


def run(
    st: auto.Stack,
    op: str,
    stream: bool = True,
    targets: list[str] | None = None,
    program: Callable[[], None] | None = None,
) -> auto.UpResult | auto.PreviewResult | auto.RefreshResult | auto.DestroyResult:
    """``up``, ``preview``, ``refresh`` or ``destroy``, streaming Pulumi's progress; a clear error
    when locked. A lock left by a run that died on this host is cleared, said, and the op retried once."""
    targeted = (targets, program) if targets is not None and program is not None else None
    with hold(st):
        try:
            return _run(st, op, stream, targeted)
        except StackLocked:
            cleared = clear_stale_locks(*_locks_of(st))
            if not cleared:
                raise
            print("\n".join(cleared), flush=True)
            return _run(st, op, stream, targeted)


def hold(st: auto.Stack) -> AbstractContextManager[None]:
    """This run's hold on ``st`` (greenops/engine/stack_lock.py): StackLocked at once when another
    greenops run holds it. Nested holds of one thread are one."""
    return holding(*_locks_of(st), st.workspace.work_dir)


def _locks_of(st: auto.Stack) -> tuple[str | None, str, str]:
    """Where ``st``'s locks are: its backend's URL, its project and its name."""
    return st.workspace.env_vars.get("PULUMI_BACKEND_URL"), st.workspace.project_settings().name, st.name


def _run(
    st: auto.Stack, op: str, stream: bool, targeted: Targeted = None
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
        return _operation(st, op, out, targeted)


def _operation(
    st: auto.Stack, op: str, out: Callable[[str], Any] | None, targeted: Targeted = None
) -> auto.UpResult | auto.PreviewResult | auto.RefreshResult | auto.DestroyResult:
    try:
        if op == "up" and targeted is not None:
            # (the engine neither updates nor deletes a resource no target names, registered or not)
            targets, program = targeted
            return st.up(on_output=out, color="never", target=targets, program=program)
        if op == "up":
            return st.up(on_output=out, color="never")
        if op == "preview":
            return st.preview(on_output=out, color="never")
        if op == "refresh":
            return st.refresh(on_output=out, color="never")
        if op == "destroy":
            return st.destroy(on_output=out, color="never")
    except auto.ConcurrentUpdateError:
        raise _locked(st) from None
    except auto.CommandError as exc:
        if lock_race(str(exc)):  # another run's lock was being written or removed as this one looked
            raise _locked(st) from None
        raise GreenOpsError(f"pulumi {op} of stack {st.name} failed:\n{failure_text(str(exc))}") from None
    raise ValueError(op)


def _locked(st: auto.Stack) -> StackLocked:
    """The refusal when Pulumi's own lock turned this run away: a run outside greenops holds it (a
    plain ``pulumi up``), or one that died; named as its lock file names it."""
    held_by = pulumi_holders(*_locks_of(st))
    who = "; ".join(held_by) or "its lock is held"
    return StackLocked(f"stack {st.name} is being updated by another run ({who}); try again when it ends")


def placements(st: auto.Stack) -> list[dict[str, Any]]:
    return placements_in(st.outputs())


def placements_in(outputs: Mapping[str, auto.OutputValue]) -> list[dict[str, Any]]:
    """The placement rows of a stack's outputs: an ``up``'s own (its result carries the outputs the
    SDK read when it ended), so a pass need not run ``pulumi stack output`` again, seconds at 1000
    workloads."""
    out = outputs.get("placements")
    return list(out.value) if out else []
