#!/usr/bin/env python3
"""One stack of N workloads, declared in files (greenops:workloadsFrom), through the Automation API:
the real engine on the file backend, render mode, real OPA and scheduler on loopback.

    .venv/bin/python benchmarks/scale.py --workloads 100 300 1000
    .venv/bin/python benchmarks/scale.py --workloads 100 300 --api-server   # objects applied to kube-apiserver
    .venv/bin/python benchmarks/scale.py --workloads 1000 --with-pulumi-logs   # what the CLI's log costs
    .venv/bin/python benchmarks/scale.py --workloads 10000 --shards 10 --concurrency 2

Every run places its workloads at one simulated instant (--at, default AT below: the services and
the stack run on that clock), so the decisions, and which runs have ended by a given gate, are the
same from run to run.

For each N it prints the wall time of
  preview (nothing deployed), up (placing all), preview and up unchanged, and a reconcile pass
  (`up` at a clock where about 10 % of the Scheduled workloads' gates have opened),
and the peak RSS of the pulumi CLI and of the Python processes (the program's, the dynamic
provider's), and the size of the state file. Then the same operations on the floor (benchmarks/
floor.py: the same engine, backend and resource graph, with providers that do nothing), each
operation's ratio to it, and at 1000 workloads each goal's figure beside its target.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import yaml
from kubernetes.utils.quantity import parse_quantity
from pulumi import automation as auto

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import floor  # noqa: E402
from benchmarks.pulumi_up import KEY, SUBSCRIPTION, workloads  # noqa: E402
from greenops.common.clock import parse_time, stamp  # noqa: E402
from greenops.engine import automation, reconcile_stack  # noqa: E402
from greenops.engine.automation import checkpoint_env  # noqa: E402
from greenops.engine.reconcile_stack import WAKE_MARGIN  # noqa: E402
from greenops.local.controlplane import LocalControlPlane  # noqa: E402
from greenops.local.opa import OpaServer  # noqa: E402
from greenops.local.scheduler import SchedulerServer  # noqa: E402
from greenops.local.webhook import namespace_manifest  # noqa: E402
from greenops.stack.stack_config import parse_stack_config  # noqa: E402

PROJECT = "greenops-platform"
RECONCILE = "reconcile (10 % gates)"
RECONCILE_DUE = "reconcile --due (next 10 %)"
UNATTENDED = "unattended pass (last)"
OPS = [
    ("preview (empty)", "preview"),
    ("up (place all)", "up"),
    ("preview (unchanged)", "preview"),
    ("up (unchanged)", "up"),
]


# What the in-cluster reconciler's workspace pod holds under its one memory limit: the engine's
# processes, not the benchmark's OPA and scheduler ("other", "python (other)").
POD = ("pulumi CLI", "plugins", "python (program)", "python (dynamic provider)")


class PeakMemory:
    """Samples this process's tree every 0.2 s; keeps the peak RSS per kind of process, the peak of
    the engine's processes together (``pod``: what a workspace pod's limit meets), and the CPU time
    each kind spent (``cpu_since``: where an operation's time went, by process)."""

    def __init__(self):
        self.peaks: dict[str, int] = {}
        self.pod = 0
        self._cpu: dict[int, tuple[str, float]] = {}  # pid -> (kind, CPU seconds at its last sample)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._sample()  # now, so that a mark taken at once has every process's CPU so far
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def cpu_mark(self) -> dict[int, tuple[str, float]]:
        with self._lock:
            return dict(self._cpu)

    def cpu_since(self, mark: dict[int, tuple[str, float]]) -> dict[str, float]:
        """CPU seconds per kind of process since ``mark`` (a process that ended between two samples
        loses at most its last 0.2 s)."""
        with self._lock:
            now = dict(self._cpu)
        spent: dict[str, float] = {}
        for pid, (k, cpu) in now.items():
            spent[k] = spent.get(k, 0.0) + cpu - mark.get(pid, (k, 0.0))[1]
        return {k: round(v, 1) for k, v in sorted(spent.items()) if v >= 0.05}

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()

    def _sample(self) -> None:
        me = psutil.Process()
        totals: dict[str, int] = {}
        for p in [me, *me.children(recursive=True)]:
            try:
                k, times, rss = kind(p), p.cpu_times(), p.memory_info().rss
            except psutil.Error:
                continue
            totals[k] = totals.get(k, 0) + rss
            with self._lock:
                self._cpu[p.pid] = (k, times.user + times.system)
        for k, v in totals.items():
            self.peaks[k] = max(self.peaks.get(k, 0), v)
        self.pod = max(self.pod, sum(totals.get(k, 0) for k in POD))


def kind(p: psutil.Process) -> str:
    name = p.name()
    if name == "pulumi":
        return "pulumi CLI"
    if name.startswith("pulumi-resource") or name.startswith("pulumi-language"):
        return "plugins"
    if name.startswith("python") and "pulumi.dynamic" in " ".join(p.cmdline()):
        return "python (dynamic provider)"
    if name.startswith("python"):
        return "python (program)" if p.pid == os.getpid() else "python (other)"
    return "other"


def tenant_of(i: int, n: int) -> str:
    """20 workloads per tenant, or more past 5120 workloads: a token names at most 256 tenants (40
    workloads of at most 8 vCPU still fit the default quota of 512)."""
    return f"team-{i // max(20, -(-n // 256)):03d}"


def write_workloads(folder: Path, n: int, now: datetime) -> None:
    """One file per tenant, as a platform team would keep them: 20 workloads per tenant, so every
    tenant stays within the default quota (512 vCPU) and nothing is refused for it."""
    by_tenant: dict[str, list[dict]] = {}
    for i, w in enumerate(workloads(n, now)):
        w.pop("tenant")
        by_tenant.setdefault(tenant_of(i, n), []).append(w)
    folder.mkdir(parents=True)
    for tenant, items in by_tenant.items():
        (folder / f"{tenant}.yaml").write_text(yaml.safe_dump({"tenant": tenant, "workloads": items}), encoding="utf-8")


@dataclass(frozen=True)
class Credentials:
    """What the stacks present: a Pulumi-path token per tenant (greenops:schedulerTokens) and OPA's
    query token; for the sharded CLI runs' own reads (the placements table), one token for every
    tenant (GREENOPS_SCHEDULER_TOKEN, as a CI step's secret)."""

    per_tenant: dict[str, str]
    shared: str
    opa: str


def credentials(scheduler: SchedulerServer, opa: OpaServer, sizes: list[int]) -> Credentials:
    tenants = sorted({tenant_of(i, n) for n in sizes for i in range(n)})
    if len(tenants) > 256:
        raise SystemExit(f"{max(sizes)} workloads are {len(tenants)} tenants: a token names at most 256")
    return Credentials(
        per_tenant={t: scheduler.issue(f"scale-{t}", [t], paths=["pulumi"]) for t in tenants},
        shared=scheduler.issue("scale-ci", tenants, paths=["pulumi"]),
        opa=opa.query_token,
    )


def next_tenth(gates_at: list[datetime], after: datetime) -> datetime:
    """The instant by which about another tenth of the gates (sorted) have come after ``after``; at
    least the first gate after it, since gates come in clusters (many runs wait for one hour)."""
    later = [g for g in gates_at if g > after]
    return later[min(len(later) - 1, max(0, len(gates_at) // 10 - 1))] if later else after


def gates(stack: auto.Stack) -> list[datetime]:
    rows = stack.outputs()["placements"].value
    return sorted(
        datetime.fromisoformat(r["nextChangeAt"].replace("Z", "+00:00"))
        for r in rows
        if r["phase"] == "Scheduled" and r.get("nextChangeAt")
    )


def run(
    n: int,
    opa_url: str,
    scheduler_url: str,
    creds: Credentials,
    skip_checkpoints: bool,
    t0: datetime,
    pulumi_logs: bool = False,
    cluster: LocalControlPlane | None = None,
    with_floor: bool = True,
    cli_profile: Path | None = None,
) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="greenops-scale-"))
    (tmp / "state").mkdir()
    write_workloads(tmp / "workloads", n, t0)
    env = {
        "GREENOPS_NOW": stamp(t0),  # the program's and the Placement's clock (the scheduler's too)
        "PULUMI_BACKEND_URL": f"file://{tmp / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "bench",
        **(checkpoint_env() if skip_checkpoints else {}),
    }
    if pulumi_logs:
        # greenops turns the CLI's automatic log off in its own Pulumi home (toolpaths.without_automatic_log)
        env["GREENOPS_PULUMI_LOGS"] = "on"
    made: list[auto.Stack] = []  # the program reads the stack's state and outputs before each pass, as the CLI's does
    stack = automation.inline_stack(f"scale{n}", automation.pass_program(tmp, lambda: made[0]), tmp, env)
    made.append(stack)
    stack.set_all_config(
        {
            "greenops:workloadsFrom": auto.ConfigValue("workloads"),
            "greenops:endpoints": auto.ConfigValue(
                json.dumps({"opaUrl": opa_url, "schedulerUrl": scheduler_url, "timeoutSeconds": 30})
            ),
            "greenops:kubernetes": auto.ConfigValue(
                json.dumps(
                    # against the API server: objects server-side applied; no operator runs, so a run counts
                    # from when its objects are applied
                    {"mode": "cluster", "installCrdStubs": True, "readiness": "applied"}
                    if cluster
                    else {"mode": "render", "renderDir": str(tmp / "out")}
                )
            ),
            "greenops:render": auto.ConfigValue(
                json.dumps({"sshPublicKey": KEY, "skipAwait": True, "azureSubscriptionId": SUBSCRIPTION})
            ),
            "greenops:schedulerTokens": auto.ConfigValue(json.dumps(creds.per_tenant), secret=True),
            "greenops:opaToken": auto.ConfigValue(creds.opa, secret=True),
        }
    )
    if cluster:
        stack.set_config("greenops:kubeconfig", auto.ConfigValue(cluster.kubeconfig_path.read_text(), secret=True))
    row: dict = {
        "n": n,
        "objects": "applied to kube-apiserver" if cluster else "rendered to files",
        "checkpoints": "final only" if skip_checkpoints else "every step",
        "pulumi's automatic log": "on" if pulumi_logs else "off",
    }
    graphs: dict[str, list[floor.Node]] = {}
    with PeakMemory() as memory:
        for label, op in OPS:
            t, mark = time.perf_counter(), memory.cpu_mark()
            result = getattr(stack, op)(color="never")
            row[label] = time.perf_counter() - t
            row[f"{label}: CPU s"] = memory.cpu_since(mark)
            print(f"  ... n={n} {label}: {row[label]:.1f} s", file=sys.stderr, flush=True)
            if label == "up (place all)":
                row["resources"] = sum(result.summary.resource_changes.values())
                graphs[label] = floor.graph(stack.export_stack().deployment)
        due = gates(stack)
        if due:
            at = due[max(0, len(due) // 10 - 1)]  # about 10 % of the gates are open at this clock
            stack.workspace.env_vars["GREENOPS_NOW"] = stamp(at)
            t, mark = time.perf_counter(), memory.cpu_mark()
            result = stack.up(color="never")
            row[RECONCILE] = time.perf_counter() - t
            row[f"{RECONCILE}: CPU s"] = memory.cpu_since(mark)
            row["reconcile changes"] = {k: v for k, v in result.summary.resource_changes.items() if k != "same"}
            graphs[RECONCILE] = floor.graph(stack.export_stack().deployment)
            # the pass after it, as a watch loop's next one: it removes the groups of the runs that
            # ended (the clock jumped to the tenth gate), so the due pass below meets a steady state
            stack.up(color="never")
            # the next tenth of the gates, by a pass of the due workloads alone (greenops reconcile --due)
            later = next_tenth(due, at)
            stack.workspace.env_vars["GREENOPS_NOW"] = stamp(later)
            t, mark = time.perf_counter(), memory.cpu_mark()
            done = reconcile_stack.reconcile_once(stack, due_only=True)
            row[RECONCILE_DUE] = time.perf_counter() - t
            row[f"{RECONCILE_DUE}: CPU s"] = memory.cpu_since(mark)
            row["due pass"] = done.counts
            if cli_profile:
                row["CLI profile of the due pass"] = newest(cli_profile, "up.*.cpu")
            print(f"  ... n={n} {RECONCILE_DUE}: {row[RECONCILE_DUE]:.1f} s ({done.counts})", file=sys.stderr)
            stack.workspace.env_vars["GREENOPS_NOW"] = stamp(t0)
    row["peak RSS MB"] = {k: round(v / 2**20) for k, v in sorted(memory.peaks.items())}
    row["peak RSS MB, engine processes at once"] = round(memory.pod / 2**20)
    state = tmp / "state" / ".pulumi" / "stacks" / PROJECT / f"scale{n}.json"
    row["state MB"] = round(state.stat().st_size / 2**20, 1) if state.exists() else None
    stack.destroy(color="never")
    stack.workspace.remove_stack(f"scale{n}")
    if with_floor:
        row["floor"] = run_floor(f"floor{n}", tmp, env, graphs)
    return row


def run_floor(name: str, tmp: Path, env: dict[str, str], graphs: dict[str, list[floor.Node]]) -> dict[str, float]:
    """The same operations on the floor program (benchmarks/floor.py): the graph the real stack had
    after placing all for the first four, the one it had after the reconcile for the last; same
    CLI, backend, checkpoint and log settings."""
    placed = graphs["up (place all)"]
    # the dynamic provider's process imports the do-nothing provider from this checkout
    floor_env = {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    stack = automation.inline_stack(name, floor.program(placed), tmp, floor_env)
    times = {}
    for label, op in [*OPS, (RECONCILE, "up")]:
        if label not in graphs and label == RECONCILE:
            continue
        nodes = graphs.get(label, placed) if label == RECONCILE else placed
        if label == "preview (empty)":
            nodes = floor.previewed(nodes)
        t = time.perf_counter()
        getattr(stack, op)(color="never", program=floor.program(nodes))
        times[label] = time.perf_counter() - t
        print(f"  ... floor {label}: {times[label]:.1f} s", file=sys.stderr, flush=True)
    stack.destroy(color="never", program=floor.program([]))
    stack.workspace.remove_stack(name)
    return times


def profiling_cli(folder: Path) -> None:
    """Every pulumi command of this process's stacks from now on writes the CLI's CPU and memory
    profiles and execution trace to ``folder/<command>.<pid>.{cpu,mem,trace}`` (`go tool pprof`):
    the Automation API has no switch for the CLI's ``--profiling``, so a wrapper adds it."""
    from greenops.common.toolpaths import TOOLS_BIN

    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "cli" / "bin" / "pulumi"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    # named after the command (its first word that is not a flag: the SDK puts its flags first)
    wrapper.write_text(
        "#!/bin/sh\n"
        'for word in "$@"; do case "$word" in -*) ;; *) command=$word; break ;; esac; done\n'
        f'exec "{TOOLS_BIN / "pulumi"}" "$@" --profiling "{folder}/$command"\n'
    )
    wrapper.chmod(0o755)
    automation.TOOLS_BIN = wrapper.parent  # read when each stack is made (automation.inline_stack)


def newest(folder: Path, pattern: str) -> str | None:
    found = sorted(folder.glob(pattern), key=lambda f: f.stat().st_mtime)
    return str(found[-1]) if found else None


@contextlib.contextmanager
def api_server():
    """etcd + kube-apiserver on loopback, with the namespace the workloads' objects go to, and the
    controller manager's garbage collector: the provider deletes in the foreground, and that
    finalizer is the collector's to remove."""
    with LocalControlPlane(with_controller_manager=True) as cp:
        with cp.client() as client:
            client.post("/api/v1/namespaces", json=namespace_manifest("greenops", None)).raise_for_status()
        yield cp


def unattended(
    run_pass: Callable[[datetime], float],
    stacks: list[auto.Stack],
    start: datetime,
    window: timedelta,
    budget_seconds: float | None = None,
    concurrency: int = 2,
) -> dict:
    """Unattended reconcile over ``window`` of simulated time from ``start``: passes of the due
    workloads of every shard, each at the simulated instant the previous one ended (its real
    duration added) when something is due by then, else at the next recorded change (a gate
    opening, a run ending: reconcile_stack.upcoming over every shard's rows, read after each pass), as a
    watch loop sleeps until it. A gate opens at the instant of the pass that sees it due, and its
    objects are applied when that pass ends: the lateness is that end minus the gate. The lead
    (interval + provisioning margin) keeps a run on time while the lateness stays within the
    interval: the margin is then left for the VM to come up. ``budget_seconds`` of real time ends
    the simulation early: the window then reported is the part simulated."""
    from concurrent.futures import ThreadPoolExecutor

    def rows() -> list[dict]:
        # a `pulumi stack output` per shard, as many at once as the shards run (real time, not simulated)
        with ThreadPoolExecutor(concurrency) as pool:
            return [r for shard in pool.map(automation.placements, stacks) for r in shard]

    first = rows()
    gates_at = sorted(parse_time(r["nextChangeAt"]) for r in first if r["phase"] == "Scheduled" and r["nextChangeAt"])
    took: dict[datetime, float] = {}  # each pass's simulated instant -> its real duration
    now, end = start, start + window
    began = time.monotonic()
    while now < end:
        if budget_seconds is not None and time.monotonic() - began > budget_seconds:
            break
        took[now] = run_pass(now)
        print(f"  ... unattended pass at {stamp(now)}: {took[now]:.1f} s", file=sys.stderr, flush=True)
        now += timedelta(seconds=took[now])
        if budget_seconds is not None and time.monotonic() - began > budget_seconds:
            end = min(end, now)  # out of real time: the window simulated ends with this pass
            break
        following = reconcile_stack.upcoming(rows())
        if following is None:
            break  # nothing will ever change: a watch loop would only run its beats
        if following[0] + WAKE_MARGIN > now:
            now = following[0] + WAKE_MARGIN  # nothing changes before then: a watch loop sleeps
    lead = timedelta(seconds=parse_stack_config({}).lead_seconds)
    late = []
    last = rows()
    for r in last:
        opened = r.get("gateOpenedAt")
        if opened and start <= parse_time(opened) < end:
            applied = parse_time(opened) + timedelta(seconds=took.get(parse_time(opened), 0.0))
            late.append((applied - (parse_time(r["start"]) - lead)).total_seconds())
    return {
        "simulated minutes": round((min(end, now) - start).total_seconds() / 60, 1),
        "passes": len(took),
        "gates due in the window": sum(1 for g in gates_at if start <= g < end),
        "gates opened": len(late),
        "worst lateness s": round(max(late, default=0.0), 1),
        "interval s (the lateness the lead allows)": parse_stack_config({}).reconcile.interval_seconds,
        "mean pass s": round(sum(took.values()) / max(1, len(took)), 1),
        "missed windows (re-placed or failed)": sum(missed_in(r, start, end) for r in last),
    }


def missed_in(row: dict, start: datetime, end: datetime) -> int:
    """Runs of ``row`` whose window was missed between ``start`` and ``end``: Scheduled followed by
    Scheduled (placed again) or Failed, as greenops.engine.reconcile_stack.transitions counts them."""
    events = row.get("events") or []
    return sum(
        1
        for before, after in itertools.pairwise(events)
        if before["phase"] == "Scheduled"
        and after["phase"] in ("Scheduled", "Failed")
        and start <= parse_time(after["at"]) < end
    )


def run_sharded(
    n: int,
    shards: int,
    concurrency: int,
    opa_url: str,
    scheduler_url: str,
    creds: Credentials,
    t0: datetime,
    simulate_minutes: float = 0,
    with_floor: bool = True,
    simulate_budget_minutes: float | None = None,
    floor_shards: int | None = None,
) -> dict:
    """The same N workloads as `greenops <op> --stack scale --shards <shards>`: separate processes,
    ``concurrency`` at a time, as a user runs them."""
    import subprocess

    from greenops.common.toolpaths import REPO
    from greenops.engine import automation

    tmp = Path(tempfile.mkdtemp(prefix="greenops-shards-"))
    (tmp / "state").mkdir()
    (tmp / "stacks").mkdir()
    write_workloads(tmp / "workloads", n, t0)
    (tmp / "Pulumi.yaml").write_text(
        yaml.safe_dump(
            {
                "name": PROJECT,
                "main": str(REPO),
                "stackConfigDir": "stacks",
                "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": str(REPO / ".venv")}},
            }
        )
    )
    (tmp / "stacks" / "Pulumi.scale.yaml").write_text(
        yaml.safe_dump(
            {
                "config": {
                    "greenops:workloadsFrom": "workloads",
                    "greenops:endpoints": {"opaUrl": opa_url, "schedulerUrl": scheduler_url, "timeoutSeconds": 30},
                    "greenops:kubernetes": {"mode": "render", "renderDir": str(tmp / "out")},
                    "greenops:render": {"sshPublicKey": KEY, "skipAwait": True, "azureSubscriptionId": SUBSCRIPTION},
                }
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GREENOPS_"))}
    env.update(
        {
            "GREENOPS_PROJECT_DIR": str(tmp),
            "PULUMI_BACKEND_URL": f"file://{tmp / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": "bench",
            "GREENOPS_NOW": stamp(t0),
            "GREENOPS_SCHEDULER_TOKEN": creds.shared,
            "GREENOPS_OPA_TOKEN": creds.opa,
        }
    )
    # a token per tenant, as docs/operations/scale.md advises: the scheduler's rate limit is per
    # principal, and 10 000 first placements through one shared token take at least 17 minutes.
    # Set on the base stack, so every generated shard carries it (encrypted, with the base's salt).
    automation.stack(
        "scale", work_dir=tmp, env={k: env[k] for k in ("PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE")}
    ).set_config("greenops:schedulerTokens", auto.ConfigValue(json.dumps(creds.per_tenant), secret=True))
    greenops = [sys.executable, "-m", "greenops.cli"]
    shard_args = ["--stack", "scale", "--shards", str(shards), "--concurrency", str(concurrency)]
    row: dict = {"n": n, "shards": shards, "concurrency": concurrency}

    def timed_op(label: str, *extra: str) -> None:
        t = time.perf_counter()
        done = subprocess.run([*greenops, *extra, *shard_args], env=env, capture_output=True, text=True)
        row[label] = time.perf_counter() - t
        summary = [ln for ln in done.stdout.splitlines() if "shard(s) ok" in ln]
        row[f"{label}: shards"] = summary[-1] if summary else (done.stdout + done.stderr)[-500:]
        if done.returncode != 0:  # a failed shard's lines (greenops names its cause), now rather than never
            failed = [ln for ln in done.stdout.splitlines() if "FAILED" in ln or ln.startswith("    ")]
            print(f"  ... {label}: exit {done.returncode}\n" + "\n".join(failed[:20]), file=sys.stderr, flush=True)
            raise SystemExit(f"{label} failed on a shard: see above")

    with PeakMemory() as memory:
        timed_op("preview (empty)", "preview")
        timed_op("up (place all)", "up")
        stacks = [
            automation.stack(
                f"scale-shard-{i}",
                work_dir=tmp,
                env={k: env[k] for k in ("PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE")},
            )
            for i in range(shards)
        ]
        graphs = [{"up (place all)": floor.graph(st.export_stack().deployment)} for st in stacks]
        due = sorted(g for st in stacks for g in gates(st))
        if due:
            at = due[max(0, len(due) // 10 - 1)]
            timed_op(RECONCILE, "reconcile", "--now", stamp(at))
            for shard, st in zip(graphs, stacks, strict=True):
                shard[RECONCILE] = floor.graph(st.export_stack().deployment)
            subprocess.run([*greenops, "reconcile", "--now", stamp(at), *shard_args], env=env, capture_output=True)
            # the next tenth of the gates, each shard by a pass of its due workloads alone
            later = next_tenth(due, at)
            timed_op(RECONCILE_DUE, "reconcile", "--due", "--now", stamp(later))
            if simulate_minutes:

                def one_pass(now: datetime) -> float:
                    timed_op(UNATTENDED, "reconcile", "--due", "--now", stamp(now))
                    return float(row[UNATTENDED])

                # from when the pass above ended, in simulated time
                began = later + timedelta(seconds=row[RECONCILE_DUE])
                budget = simulate_budget_minutes * 60 if simulate_budget_minutes else None
                row["unattended"] = unattended(
                    one_pass, stacks, began, timedelta(minutes=simulate_minutes), budget, concurrency
                )
    row["peak RSS MB (all shards at once)"] = {k: round(v / 2**20) for k, v in sorted(memory.peaks.items())}
    states = list((tmp / "state" / ".pulumi" / "stacks" / PROJECT).glob("scale-shard-*.json"))
    row["state MB (largest shard)"] = round(max(f.stat().st_size for f in states) / 2**20, 1) if states else None
    subprocess.run([*greenops, "destroy", *shard_args], env=env, capture_output=True, text=True)
    if not with_floor:
        return row
    # The floor of each shard, one after the other (inline programs share the SDK's process-wide
    # settings, so they cannot run side by side here); the shards' sum over the concurrency is the
    # floor of running them that many at a time.
    # the state written once per operation, as greenops writes each shard's: with a write per step
    # the floor of one 1000-workload shard's `up` ran past ten minutes
    backend = {**{k: env[k] for k in ("PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE")}, **checkpoint_env()}
    # ``floor_shards`` of them stand for all: the hash spreads the workloads evenly over the shards
    sample = graphs[: floor_shards or shards]
    times = [run_floor(f"floor-shard-{i}", tmp, backend, g) for i, g in enumerate(sample)]
    every = [label for label in times[0] if all(label in t for t in times)]
    scale = shards / len(sample)
    row["floor"] = {label: sum(t[label] for t in times) * scale / concurrency for label in every}
    if len(sample) < shards:
        row["floor from"] = f"{len(sample)} of {shards} shards, scaled by {scale:g}"
    return row


def print_floor(row: dict) -> None:
    """Each operation beside the floor's, and the ratio (the goal: at most 1.5)."""
    if not row.get("floor"):
        return
    print(f"  {'vs the floor':26} {'greenops':>9} {'floor':>9} {'ratio':>6}")
    for label, base in row["floor"].items():
        if label in row:
            print(f"  {label:26} {row[label]:7.1f} s {base:7.1f} s {row[label] / base:5.2f}x", flush=True)


# The issue's goals at 1000 workloads (seconds; MB): what each row is measured against.
GOALS_1000 = [("preview (unchanged)", 20.0), ("up (place all)", 40.0), (RECONCILE, 20.0), (RECONCILE_DUE, 20.0)]
FLOOR_RATIO = 1.5
FIRST_PLACEMENT_10000 = 600.0
# The simulated instant every run places at: which runs have ended by a given gate depends on it.
AT = "2027-01-10T18:00:00Z"
RSS_MB = 1024


def print_goals(row: dict) -> None:
    if "shards" in row:
        if row["n"] >= 10000 and "up (place all)" in row:
            label, target = "up (place all)", FIRST_PLACEMENT_10000
            print(f"  goals at {row['n']} workloads:")
            print(f"    {label:26} {row[label]:7.1f} s  (goal <= {target:.0f} s: {met(row[label] <= target)})")
        return
    if row["n"] != 1000:
        return
    print("  goals at 1000 workloads:")
    for label, target in GOALS_1000:
        if label in row:
            print(f"    {label:26} {row[label]:7.1f} s  (goal <= {target:.0f} s: {met(row[label] <= target)})")
    # the engine's processes; "python (other)" is the benchmark's own OPA and scheduler helpers
    peak = max((v for k, v in row.get("peak RSS MB", {}).items() if k != "python (other)"), default=0)
    print(f"    {'peak RSS (largest process)':26} {peak:7d} MB (goal <= {RSS_MB} MB: {met(peak <= RSS_MB)})")
    ratios = [row[k] / v for k, v in (row.get("floor") or {}).items() if k in row]
    if ratios:
        worst = max(ratios)
        label = "worst ratio to the floor"
        print(f"    {label:26} {worst:7.2f} x  (goal <= {FLOOR_RATIO}: {met(worst <= FLOOR_RATIO)})")


def met(ok: bool) -> str:
    return "met" if ok else "missed"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", type=int, nargs="+", default=[100, 300])
    parser.add_argument(
        "--at",
        default=AT,
        help=f"the instant the workloads are placed at (default {AT}, so runs are comparable; 'now': the wall clock)",
    )
    parser.add_argument("--shards", type=int, default=0, help="run each N as `greenops --shards` over this many stacks")
    parser.add_argument("--concurrency", type=int, default=2, help="with --shards: shards at a time")
    parser.add_argument(
        "--simulate-minutes",
        type=float,
        default=0,
        help="with --shards: then this many simulated minutes of unattended due passes, and the worst gate lateness",
    )
    parser.add_argument(
        "--simulate-budget-minutes",
        type=float,
        help="with --simulate-minutes: stop simulating after this many real minutes, reporting the part simulated",
    )
    parser.add_argument(
        "--floor-shards",
        type=int,
        help="with --shards: the floor of this many shards, scaled to all of them (each shard's floor runs alone)",
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="leave out the floor (with --shards, each shard's runs one after the other: as long again as the run)",
    )
    parser.add_argument(
        "--every-step",
        action="store_true",
        help="write the state after every step (Pulumi's default; greenops writes it once, at the end)",
    )
    parser.add_argument(
        "--api-server",
        action="store_true",
        help="apply the objects to a local etcd + kube-apiserver instead of rendering them to files",
    )
    parser.add_argument(
        "--with-pulumi-logs",
        action="store_true",
        help="let the CLI write its automatic log ($PULUMI_HOME/logs; greenops turns it off), to show what it costs",
    )
    parser.add_argument(
        "--cli-profile",
        type=Path,
        help="write the pulumi CLI's CPU and memory profiles of every command to this folder (go tool pprof)",
    )
    parser.add_argument(
        "--workspace-memory",
        help="hold every Go process's heap as the in-cluster reconciler's workspace of this memory does "
        "(e.g. 2Gi: GOMEMLIMIT at 45 %% of it), and report the engine's processes at once against it",
    )
    args = parser.parse_args()
    if args.cli_profile and args.shards:
        # the shards run in greenops processes of their own, which the wrapper does not reach
        parser.error("--cli-profile profiles one stack's commands: not with --shards")
    if args.cli_profile:
        profiling_cli(args.cli_profile.resolve())
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs", flush=True)
    if args.workspace_memory:
        from components.workload_reconciler import go_memory_limit

        os.environ["GOMEMLIMIT"] = go_memory_limit(args.workspace_memory)  # inherited by the CLI and its plugins
    if os.environ.get("GOMEMLIMIT"):
        print(f"GOMEMLIMIT={os.environ['GOMEMLIMIT']}", flush=True)
    with contextlib.ExitStack() as running:
        t0 = parse_time(args.at) if args.at != "now" else datetime.now(UTC).replace(microsecond=0)
        print(f"the workloads are placed at {stamp(t0)}", flush=True)
        scheduler = running.enter_context(SchedulerServer(capacity_vcpu=1e9, env={"GREENOPS_NOW": stamp(t0)}))
        opa_token = scheduler.issue("opa", None, paths=["cluster"])  # OPA's own principal (the cluster path)
        opa = running.enter_context(OpaServer(scheduler_url=scheduler.url, scheduler_token=opa_token))
        cluster = running.enter_context(api_server()) if args.api_server else None
        creds = credentials(scheduler, opa, args.workloads)
        for n in args.workloads:
            row = (
                run_sharded(
                    n,
                    args.shards,
                    args.concurrency,
                    opa.url,
                    scheduler.url,
                    creds,
                    t0,
                    args.simulate_minutes,
                    with_floor=not args.no_floor,
                    simulate_budget_minutes=args.simulate_budget_minutes,
                    floor_shards=args.floor_shards,
                )
                if args.shards
                else run(
                    n,
                    opa.url,
                    scheduler.url,
                    creds,
                    skip_checkpoints=not args.every_step,
                    t0=t0,
                    pulumi_logs=args.with_pulumi_logs,
                    cluster=cluster,
                    with_floor=not args.no_floor,
                    cli_profile=args.cli_profile,
                )
            )
            print(json.dumps(row, default=str), flush=True)
            for k, v in row.items():
                seconds = isinstance(v, float) and "MB" not in k
                if k != "floor":
                    print(f"  {k:26} {v:8.1f} s" if seconds else f"  {k:26} {v}", flush=True)
            print_floor(row)
            print_goals(row)
            if args.workspace_memory and "peak RSS MB, engine processes at once" in row:
                limit = round(parse_quantity(args.workspace_memory) / 2**20)
                together = row["peak RSS MB, engine processes at once"]
                print(f"    {'engine processes at once':26} {together:7d} MB (workspace limit {limit} MB)", flush=True)


if __name__ == "__main__":
    main()
