"""`greenops reconcile --watch` as a user runs it: a real process on the real clock, the real
engine, OPA and scheduler on loopback; SIGTERM in the middle of a pass ends it only after that pass."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta

import pytest

from greenops.common.clock import parse_time, set_clock_file
from greenops.common.httpclient import RetryingClient
from greenops.common.toolpaths import REPO
from greenops.engine import automation
from greenops.insight import placements
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
from tests.support.processes import CommandLines
from tests.support.signals import signal_another_thread

pytestmark = [pytest.mark.tools, pytest.mark.integration]


def test_watch_passes_and_stops_between_passes_on_sigterm(tmp_path):
    require_engine()
    project = tmp_path / "project"
    (tmp_path / "state").mkdir()
    deadline = iso(datetime.now(UTC) + timedelta(days=1))
    with loopback.servers() as (scheduler, opa):
        project_with_stack(
            project,
            "watch",
            render_mode_config(
                opa.url,
                scheduler.url,
                tmp_path / "rendered",
                workloads=[small_job("etl", deadline)],
            ),
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GREENOPS_"))}
        env.update(
            {
                "GREENOPS_PROJECT_DIR": str(project),
                "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
                "PULUMI_CONFIG_PASSPHRASE": "watch-test",
                # greenops serve's exports: the stack's tenant token and OPA's query token
                "GREENOPS_SCHEDULER_TOKEN": loopback.tenant_tokens(scheduler, ["ops"])["ops"],
                "GREENOPS_OPA_TOKEN": opa.query_token,
            }
        )
        argv = [
            str(REPO / ".venv" / "bin" / "greenops"),
            *("reconcile", "--stack", "watch", "--watch", "--interval", "2s"),
        ]
        with CommandLines(argv, env=env) as watch:
            watch.until(lambda _: sum(ln.startswith("sleeping") for ln in watch.lines) == 2)
            time.sleep(2.5)  # the third pass has started: it takes seconds (a whole `pulumi up`)
            watch.proc.send_signal(signal.SIGTERM)
            code = watch.finish(timeout=120)
        lines, text = watch.lines, watch.text
        assert code == 0, text
        summaries = [ln for ln in lines if "] reconcile watch: " in ln]
        assert "placed    etl: " in text and "SIGTERM received, stopping after this pass" in text
        assert lines[-1] == f"reconcile watch: stopped after {len(summaries)} pass(es), between passes", text
        assert len(summaries) == 3 and "pass failed" not in text and "skipped" not in text
        # the signal came during the third pass, which still ran to its end
        assert lines.index(next(ln for ln in lines if "SIGTERM received" in ln)) < lines.index(summaries[2]), text
        # the stack was left whole: not locked, nothing pending, a preview changes nothing
        st = automation.stack(
            "watch",
            work_dir=project,
            env={
                "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
                "PULUMI_CONFIG_PASSPHRASE": "watch-test",
                **{k: env[k] for k in ("GREENOPS_SCHEDULER_TOKEN", "GREENOPS_OPA_TOKEN")},
            },
        )
        assert unchanged(st.preview().change_summary)
        assert not st.export_stack().deployment.get("pending_operations")
        st.destroy()


def test_a_sigterm_the_kernel_gives_another_thread_stops_the_loop_at_once(tmp_path):
    """A signal sent to a process goes to any thread that does not block it. Delivered to one of
    the loop's other threads (here: the metrics endpoint's, the Automation API's) while the loop
    sleeps for an hour, it must still stop the loop at once, not when the sleep ends."""
    require_engine()
    project = tmp_path / "project"
    (tmp_path / "state").mkdir()
    with loopback.servers() as (scheduler, opa):
        project_with_stack(
            project,
            "any-thread",
            render_mode_config(
                opa.url,
                scheduler.url,
                tmp_path / "rendered",
                workloads=[small_job("etl", iso(datetime.now(UTC) + timedelta(days=1)))],
            ),
        )
        stack_env = {
            "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": "any-thread",
            "GREENOPS_SCHEDULER_TOKEN": loopback.tenant_tokens(scheduler, ["ops"])["ops"],
            "GREENOPS_OPA_TOKEN": opa.query_token,
        }
        env = cli_env(project, stack_env)
        argv = [
            str(REPO / ".venv" / "bin" / "greenops"),
            *("reconcile", "--stack", "any-thread", "--watch", "--interval", "1h", "--metrics-port", "0"),
        ]
        with CommandLines(argv, env=env) as watch:
            sleeping = watch.until(lambda line: line.startswith("sleeping"))
            assert int(sleeping.split()[1]) >= 600, watch.text  # a long sleep, so an ignored signal would show
            signal_another_thread(watch.proc.pid, signal.SIGTERM)
            sent = time.monotonic()
            code = watch.finish(timeout=60)
            stopped_in = time.monotonic() - sent
        lines, text = watch.lines, watch.text
        assert code == 0, text
        assert stopped_in < 15, f"{stopped_in:.1f} s\n{text}"
        assert "reconcile any-thread: SIGTERM received, stopping after this pass" in text
        assert lines[-1] == "reconcile any-thread: stopped after 1 pass(es), between passes", text
        automation.stack("any-thread", work_dir=project, env=stack_env).destroy()


def test_a_watch_killed_mid_pass_leaves_a_lock_the_next_run_clears(tmp_path):
    """kill -9 of the whole process group (the CLI with it) while a pass holds the stack's lock:
    the file backend keeps the lock for ever, so the next run must see it is stale and go on."""
    require_engine()
    project, locks = tmp_path / "project", tmp_path / "state" / ".pulumi" / "locks"
    (tmp_path / "state").mkdir()
    deadline = iso(datetime.now(UTC) + timedelta(hours=1, minutes=2))
    with loopback.servers() as (scheduler, opa):
        project_with_stack(
            project,
            "k9",
            render_mode_config(
                opa.url,
                scheduler.url,
                tmp_path / "rendered",
                workloads=[small_job(f"etl-{i}", deadline) for i in range(3)],
            ),
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GREENOPS_"))}
        env.update(
            {
                "GREENOPS_PROJECT_DIR": str(project),
                "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
                "PULUMI_CONFIG_PASSPHRASE": "k9-test",
                # greenops serve's exports: the stack's tenant token and OPA's query token
                "GREENOPS_SCHEDULER_TOKEN": loopback.tenant_tokens(scheduler, ["ops"])["ops"],
                "GREENOPS_OPA_TOKEN": opa.query_token,
            }
        )
        greenops = str(REPO / ".venv" / "bin" / "greenops")
        proc = subprocess.Popen(
            [greenops, "reconcile", "--stack", "k9", "--watch", "--interval", "1s"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            held = []
            for _ in range(600):  # until a pass holds the lock
                held = list(locks.glob("*/*/k9/*.json")) if locks.exists() else []
                if held:
                    break
                time.sleep(0.05)
            assert held, "no pass ever took the stack's lock"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert list(locks.glob("*/*/k9/*.json")), "the killed run's lock should still be there"
        again = subprocess.run(
            [greenops, "reconcile", "--stack", "k9"], env=env, capture_output=True, text=True, timeout=300
        )
        assert again.returncode == 0, again.stdout + again.stderr
        assert again.stdout.startswith("cleared a stale lock of stack k9: pid "), again.stdout
        assert "and is gone" in again.stdout and not list(locks.glob("*/*/k9/*.json"))
        credentials = ("GREENOPS_SCHEDULER_TOKEN", "GREENOPS_OPA_TOKEN")
        st = automation.stack(
            "k9",
            work_dir=project,
            env={
                "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
                "PULUMI_CONFIG_PASSPHRASE": "k9-test",
                **{k: env[k] for k in credentials},
            },
        )
        rows = automation.placements(st)
        assert {r["workload"] for r in rows} == {"etl-0", "etl-1", "etl-2"} and {r["phase"] for r in rows} == {
            "Running"
        }
        assert unchanged(st.preview().change_summary)
        # The state is written once per run, so the killed pass may have booked placements its
        # state never recorded: placing again replayed them under the same keys, booking nothing twice.
        with RetryingClient(scheduler.url, token=scheduler.admin_token) as client:
            booked = sorted(r["key"] for r in placements.active(client))
        assert [k.split("/")[1] for k in booked] == ["etl-0", "etl-1", "etl-2"], booked
        st.destroy()


def test_between_its_beats_the_loop_opens_a_gate_with_a_pass_of_the_due_workloads(tmp_path):
    """A long interval, a gate seconds away: the loop's first pass is a full one, and the wake-up
    for the gate runs a pass of the due workloads, which opens it; a full preview afterwards finds
    nothing left to do. The platform's clock is a file the test moves; the beat is elapsed time."""
    require_engine()
    project, clock = tmp_path / "project", tmp_path / "now"
    (tmp_path / "state").mkdir()
    c0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    set_clock_file(clock, c0)
    with loopback.servers() as (scheduler, opa):
        project_with_stack(
            project,
            "beat",
            render_mode_config(
                opa.url,
                scheduler.url,
                tmp_path / "rendered",
                workloads=[small_job("etl", iso(c0 + timedelta(days=1)))],
            ),
        )
        stack_env = {
            "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": "beat-test",
            "GREENOPS_CLOCK_FILE": str(clock),
            "GREENOPS_SCHEDULER_TOKEN": loopback.tenant_tokens(scheduler, ["ops"])["ops"],
            "GREENOPS_OPA_TOKEN": opa.query_token,
        }
        env = cli_env(project, stack_env)
        greenops = str(REPO / ".venv" / "bin" / "greenops")
        placed = subprocess.run(
            [greenops, "reconcile", "--stack", "beat"], env=env, capture_output=True, text=True, timeout=300
        )
        assert placed.returncode == 0, placed.stdout + placed.stderr
        st = automation.stack("beat", work_dir=project, env=stack_env)
        [row] = automation.placements(st)
        assert row["phase"] == "Scheduled"
        gate = parse_time(row["nextChangeAt"])
        set_clock_file(clock, gate - timedelta(seconds=4))

        argv = [greenops, "reconcile", "--stack", "beat", "--watch", "--interval", "1h"]

        def second_sleep(line: str) -> bool:
            sleeps = sum(ln.startswith("sleeping") for ln in watch.lines)
            if line.startswith("sleeping") and sleeps == 1:
                set_clock_file(clock, gate + timedelta(seconds=2))  # the gate is reached while it sleeps
            return sleeps == 2  # the second pass is over

        with CommandLines(argv, env=env) as watch:
            watch.until(second_sleep)
            watch.proc.send_signal(signal.SIGTERM)
            code = watch.finish(timeout=120)
        lines, text = watch.lines, watch.text
        assert code == 0, text
        summaries = [ln for ln in lines if "] reconcile beat: " in ln]
        assert len(summaries) == 2, text
        # the first pass is the beat's full pass; the wake-up for the gate a pass of that one workload
        assert "due" not in summaries[0], text
        assert "reconcile beat: due 1 (1 next change reached)" in summaries[1], text
        assert "pass failed" not in text and "skipped" not in text
        [row] = automation.placements(st)
        assert row["phase"] != "Scheduled" and row["gateOpenedAt"], row
        # the due pass left the stack as a full pass would have
        assert unchanged(st.preview().change_summary)
        st.destroy()
