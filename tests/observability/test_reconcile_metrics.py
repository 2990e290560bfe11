"""`greenops reconcile --watch --metrics-port N` as a user runs it: the real CLI process, the real
engine, OPA and scheduler on loopback, its /metrics scraped between passes.

The platform's clock is a file the test plays forward (GREENOPS_CLOCK_FILE), read by the loop and
by every pass's program; it starts two hours behind the scheduler's, which may place a run at once,
so every gate is ahead of it. A second run of the same stack, held inside its program, keeps the
stack's lock while the loop wakes: the loop's pass is skipped, and its lateness is read from the
stack's recorded placements."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import parse_time, set_clock_file
from greenops.common.toolpaths import REPO
from greenops.engine import automation
from greenops.engine.reconcile_stack import KINDS
from greenops.local.controlplane import free_port
from greenops.observability import names
from tests.observability.metrics_text import Samples, scrape, value, wait_for
from tests.support import loopback
from tests.support.engine import (
    cli_env,
    iso,
    project_with_stack,
    render_mode_config,
    require_engine,
    small_job,
    unchanged,
)
from tests.support.prometheus import PrometheusServer, Target, by_label

pytestmark = [pytest.mark.tools, pytest.mark.integration]

STACK = "obs"
LEAD = timedelta(seconds=300)  # the stack's default provisioningLeadSeconds


def passes(s: Samples, result: str) -> float:
    return value(s, names.PASSES, runner="watch", result=result) or 0.0


def transitions(s: Samples, kind: str) -> float:
    return value(s, names.TRANSITIONS, kind=kind) or 0.0


def ran(s: Samples) -> float:
    """Passes in the duration histogram, full and due alike."""
    return sum(value(s, names.PASS_SECONDS, "_count", runner="watch", **{"pass": k}) or 0.0 for k in ("full", "due"))


def all_passes(s: Samples) -> float:
    return sum(passes(s, r) for r in ("ok", "failed", "skipped"))


def test_the_watch_loop_counts_its_passes_transitions_missed_windows_and_skips(tmp_path):
    require_engine()
    project, state, clock = tmp_path / "project", tmp_path / "state", tmp_path / "now"
    state.mkdir()
    c0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    set_clock_file(clock, c0)
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    with loopback.servers() as (scheduler, opa):
        project_with_stack(
            project,
            STACK,
            render_mode_config(
                opa.url,
                scheduler.url,
                tmp_path / "rendered",
                workloads=[small_job("etl", iso(datetime.now(UTC) + timedelta(days=1)))],
            ),
        )
        stack_env = {
            "PULUMI_BACKEND_URL": f"file://{state}",
            "PULUMI_CONFIG_PASSPHRASE": "obs-test",
            "GREENOPS_CLOCK_FILE": str(clock),
            # greenops serve's exports: the stack's tenant token and OPA's query token
            "GREENOPS_SCHEDULER_TOKEN": loopback.tenant_tokens(scheduler, ["ops"])["ops"],
            "GREENOPS_OPA_TOKEN": opa.query_token,
        }
        env = cli_env(project, stack_env)
        command = [str(REPO / ".venv" / "bin" / "greenops"), "reconcile", "--stack", STACK, "--watch"]
        proc = subprocess.Popen(
            [*command, "--interval", "2s", "--metrics-port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        st = automation.stack(STACK, work_dir=project, env=stack_env)
        # a real Prometheus scrapes the loop and the scheduler all along, as an on-call engineer's would
        prom = PrometheusServer(
            [
                Target("reconcile", f"http://127.0.0.1:{port}"),
                Target("scheduler", scheduler.url, scheduler.issue("prometheus", None, paths=["api"], role="read")),
            ],
            workdir=tmp_path / "prom",
        )
        prom.start()
        try:
            # the first pass places the workload; nothing is due on the clock yet
            s = wait_for(url, lambda s: passes(s, "ok") >= 1, what="a first pass")
            assert value(s, names.INTERVAL, runner="watch") == 2.0
            assert value(s, names.OVERDUE_LAG, runner="watch") == 0.0
            assert value(s, names.MISSED_WINDOWS) == 0.0
            # every kind is a series from the start, at zero
            assert [value(s, names.TRANSITIONS, kind=k) for k in KINDS] == [0.0] * len(KINDS) and set(KINDS) == {
                "gate",
                "started",
                "retired",
                "re-placed",
                "failed",
            }
            assert ran(s) == passes(s, "ok")
            first_stamp = value(s, names.LAST_PASS, runner="watch")
            assert first_stamp is not None and first_stamp > 0
            [row] = automation.placements(st)
            assert row["phase"] == "Scheduled"
            start, gate = parse_time(row["start"]), parse_time(row["nextChangeAt"])
            assert gate == start - LEAD and gate > c0

            # Two runs at once: a second `up` of the stack holds its lock, held inside its program.
            # While it does, the loop's passes are skipped; the gate passes on the clock meanwhile,
            # and the lateness the loop reports is read from the stack's recorded placements.
            release, outcome = threading.Event(), []
            inner = st.workspace.program

            def held() -> None:
                release.wait(300)
                inner()

            st.workspace.program = held
            other = threading.Thread(target=lambda: outcome.append(automation.run(st, "up", stream=False)))
            other.start()
            try:
                _wait_for_lock(state)
                set_clock_file(clock, gate + timedelta(seconds=30))
                s = wait_for(
                    url,
                    lambda s: passes(s, "skipped") >= 1 and value(s, names.OVERDUE_LAG, runner="watch") == 30.0,
                    what="a skipped pass seeing the gate 30 s late",
                )
                # the other run goes on at the first instant: it changes nothing
                set_clock_file(clock, c0)
            finally:
                release.set()
                other.join(300)
            st.workspace.program = inner
            assert outcome and unchanged(outcome[0].summary.resource_changes or {}), outcome
            skipped = passes(scrape(url), "skipped")

            # The start passes with no pass having run: the window was missed, and placed again.
            set_clock_file(clock, start + timedelta(minutes=10))
            s = wait_for(url, lambda s: value(s, names.MISSED_WINDOWS) == 1.0, what="the missed window")
            assert transitions(s, "re-placed") == 1.0 and transitions(s, "failed") == 0.0
            [row] = automation.placements(st)
            assert row["replacements"] == 1
            if row["phase"] == "Scheduled":  # its new start is still ahead: open its gate
                set_clock_file(clock, parse_time(row["nextChangeAt"]) + timedelta(seconds=5))
                s = wait_for(url, lambda s: transitions(s, "started") == 1.0, what="the gate opening")
                [row] = automation.placements(st)
            assert row["phase"] == "Running"
            assert transitions(s, "gate") == 1.0 and transitions(s, "started") == 1.0

            # the run ends: retired
            set_clock_file(clock, parse_time(row["runningSince"]) + timedelta(hours=1, seconds=5))
            s = wait_for(url, lambda s: transitions(s, "retired") == 1.0, what="the run retired")
            # one whole pass more: the missed window and every transition are counted once only
            seen = all_passes(s)
            s = wait_for(url, lambda s: all_passes(s) >= seen + 1, what="one more pass")
            assert value(s, names.MISSED_WINDOWS) == 1.0
            assert {k: transitions(s, k) for k in KINDS} == {
                "re-placed": 1,
                "gate": 1,
                "started": 1,
                "retired": 1,
                "failed": 0,
            }
            assert passes(s, "skipped") == skipped and passes(s, "failed") == 0.0
            assert value(s, names.OVERDUE_LAG, runner="watch") == 0.0
            # skipped passes did no work: the duration histogram holds the passes that ran
            assert ran(s) == passes(s, "ok")
            assert value(s, names.LAST_PASS, runner="watch") > first_stamp
            _prometheus_saw_the_same(prom, skipped)
        finally:
            prom.stop()
            proc.send_signal(signal.SIGTERM)
            try:
                out, _ = proc.communicate(timeout=120)
            finally:
                if proc.poll() is None:
                    proc.kill()
        assert proc.returncode == 0, out
        assert f"reconcile {STACK}: metrics on http://127.0.0.1:{port}/metrics" in out
        assert "skipped this pass: stack obs is being updated by another run" in out
        automation.run(st, "destroy", stream=False)


def _prometheus_saw_the_same(prom: PrometheusServer, skipped_passes: float) -> None:
    """PromQL over what Prometheus scraped: two bookings placed (the first and the one after the missed
    window), none refused, one missed window, one of each transition, no failed pass, and the skipped
    passes the loop counted."""
    missed = f"sum({names.MISSED_WINDOWS.series})"
    assert prom.wait_for(missed, lambda r: r != [] and r[0]["value"][1] == "1")[0]["value"][1] == "1"
    kinds = by_label(prom.query(f"sum by (kind) ({names.TRANSITIONS.series})"), "kind")
    assert kinds == {"gate": 1, "started": 1, "retired": 1, "re-placed": 1, "failed": 0}
    bookings = by_label(prom.query(f'sum by (result) ({names.BOOKINGS.series}{{path="pulumi"}})'), "result")
    assert bookings.get("placed") == 2 and not bookings.get("refused"), bookings
    assert by_label(prom.query(f'{names.PASSES.series}{{result="failed"}}'), "runner") == {"watch": 0}
    # The skipped passes, as many as the loop counted. Not increase(): on a loaded machine the first
    # scrapes can time out (1 s) while the first pass runs, so Prometheus may never see the zero.
    skipped = prom.wait_for(f'{names.PASSES.series}{{result="skipped"}}', lambda r: r != [] and r[0]["value"][1] != "0")
    assert skipped and float(skipped[0]["value"][1]) == skipped_passes >= 1, skipped


def _wait_for_lock(state, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if list((state / ".pulumi" / "locks").glob(f"*/*/{STACK}/*.json")):
            return
        time.sleep(0.05)
    raise AssertionError("the second run never took the stack's lock")
