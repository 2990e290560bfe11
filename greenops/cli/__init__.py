"""``greenops`` command line.

``greenops catalog``  lists the regions the catalog knows, with zone, EU flag and carbon data.
``greenops render``   renders a stack's workloads for an explicit placement (provider/region),
                      validating every object against the upstream CRDs when they are present.
``greenops placements`` lists the scheduler's active reservations (both paths), and with
                      ``--without-region`` who would be affected if a region went.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from greenops import __version__
from greenops.catalog import load_catalog, select_size
from greenops.common import endpoints, output, progress
from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError
from greenops.common.httpclient import RetryingClient
from greenops.common.toolpaths import REPO
from greenops.engine.stack_lock import StackLocked
from greenops.insight import placements as placement_fields
from greenops.insight import report as report_fields
from greenops.models import Decision
from greenops.observability.tracing import setup_tracing
from greenops.renderers import render_set
from greenops.stack.files import greenops_config, read_stack_file
from greenops.stack.stack_config import parse_stack_config
from greenops.validation import CrdSchemas, default_crd_dir


def _stack_raw(stack: str, project: Path = REPO) -> dict[str, Any]:
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise GreenOpsError(f"stack {stack!r}: {path.name} not found in stacks/")
    return greenops_config(read_stack_file(path, project))


CATALOG_FIELDS = ("provider", "region", "country", "eu", "zone", "carbonData", "gaps")


def cmd_catalog(args: argparse.Namespace) -> int:
    cat = load_catalog()
    rows: list[dict[str, Any]] = []
    cells = []
    for r in cat.regions(args.provider):
        prof = cat.profile(r.zone) if r.zone else None
        gaps = list(cat.placement_gaps(r.provider, r.name))
        kind = prof.kind if prof else None
        rows.append(dict(zip(CATALOG_FIELDS, (r.provider, r.name, r.country, r.eu, r.zone, kind, gaps), strict=True)))
        cells.append([r.provider, r.name, r.country, "yes" if r.eu else "no", r.zone, kind, ", ".join(gaps) or None])
    if args.output != "table":
        print(output.dump(rows, args.output))
        return 0
    print(output.table(["provider", "region", "country", "eu", "zone", "carbon data", "gaps"], cells))
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    cat = load_catalog()
    config = parse_stack_config(_stack_raw(args.stack), root=REPO)
    region = cat.region(args.provider, args.region)
    start = args.at or datetime.now(UTC)
    crd_dir = default_crd_dir()
    schemas = CrdSchemas(crd_dir) if crd_dir.is_dir() else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failures = 0
    workloads = [w for w in config.workloads if not args.workload or w.name in args.workload]
    if not workloads:
        raise GreenOpsError(f"stack {args.stack!r} has no workload named {args.workload}")
    for w in workloads:
        if args.provider not in w.eligible_providers:
            print(f"skip  {w.name}: {args.provider} is not among its eligible providers {list(w.eligible_providers)}")
            continue
        try:
            size = select_size(cat, args.provider, region.name, w.cpu, w.memory)
            decision = Decision(
                provider=args.provider,
                region=region.name,
                zone=region.zone or "unknown",
                scheduling_time=start,
                vm_size=size.name,
                image=cat.image(args.provider, region.name),
            )
            rendered = render_set(w, decision, config.render, cat)
            objects = rendered.objects
        except GreenOpsError as exc:
            print(f"error {w.name}: {exc}")
            failures += 1
            continue
        problems = [e for o in objects for e in schemas.errors(o)] if schemas else []
        path = out / f"{w.name}.{args.provider}.yaml"
        path.write_text(yaml.safe_dump_all(objects, sort_keys=False), encoding="utf-8")
        verdict = "valid against CRDs" if schemas and not problems else ("CRDs not found" if not schemas else "INVALID")
        print(
            f"ok    {w.name}: {size.name} in {region.name} ({region.zone}), {len(objects)} objects -> {path} "
            f"[{verdict}]"
        )
        for p in problems:
            print(f"      {p}")
        for held in rendered.held:  # what only the cluster can complete: applied on a later pass
            print(f"      held: {held}")
        failures += bool(problems)
    return 1 if failures else 0


def cmd_serve(args: argparse.Namespace) -> int:
    """OPA (with the policy bundle) and the scheduler on fixed loopback ports, until Ctrl-C."""
    from greenops.common.stopping import SignalStop
    from greenops.local.opa import OpaServer
    from greenops.local.scheduler import SchedulerServer

    tenants = sorted({w.tenant for w in parse_stack_config(_stack_raw("dev"), root=REPO).workloads})
    with SignalStop() as stop, SchedulerServer(port=args.scheduler_port, source=args.source) as scheduler:
        opa_token = scheduler.issue("serve-opa", None, paths=["cluster"])
        dev_token = scheduler.issue("serve-dev-stack", tenants, paths=["pulumi"])
        reader = scheduler.issue("serve-reader", None, paths=["api"], role="read")
        with OpaServer(scheduler_url=scheduler.url, scheduler_token=opa_token, port=args.opa_port) as opa:
            print(
                f"scheduler {scheduler.url} (source {args.source}), OPA {opa.url} with the policy bundle; Ctrl-C "
                "stops both. Credentials for this run (the dev stack's Placements and the CLI read them):\n"
                f"  export {endpoints.SCHEDULER_TOKEN_VARIABLE}={dev_token}   # tenants {', '.join(tenants)}\n"
                f"  export {endpoints.OPA_TOKEN_VARIABLE}={opa.query_token}\n"
                f"  reader (placements, dashboard): {reader}\n"
                f"  scheduler admin (greenops token ...): GREENOPS_SCHEDULER_ADMIN_TOKEN={scheduler.admin_token}",
                flush=True,
            )
            stop.wait()
    return 0


def _clock_env(args: argparse.Namespace) -> dict[str, str]:
    return {"GREENOPS_NOW": stamp(args.now)} if getattr(args, "now", None) else {}


def cmd_sharded(args: argparse.Namespace) -> int:
    """--shards N: the command on every shard stack of --stack, --concurrency at a time; one line per
    shard (a failed one with its last lines), then, after up or reconcile, the combined placement table."""
    from greenops.engine import automation, shards
    from greenops.insight import report

    stacks = shards.write_shard_stacks(automation.project_dir(), args.stack, args.shards)
    command = [args.command] + (["--now", stamp(args.now)] if args.now else [])
    if getattr(args, "due", False):
        command.append("--due")
    started = time.monotonic()
    with progress.progress(f"{args.command} {args.stack}: shards", len(stacks)) as advance:
        runs = shards.run_shards(command, stacks, args.concurrency, done=lambda run: advance(None))
    for run in runs:
        print(run.line())
    failed = [r for r in runs if not r.ok]
    print(
        f"{args.command} {args.stack}: {len(runs) - len(failed)} of {len(runs)} shard(s) ok in "
        f"{time.monotonic() - started:.1f} s" + (f"; failed: {', '.join(r.stack for r in failed)}" if failed else "")
    )
    if args.command in ("up", "reconcile"):
        # each read is a `pulumi stack output` of a whole shard: as many at once as the shards ran
        # (the stacks selected one by one: selecting writes the project's workspace settings)
        ok = [automation.stack(run.stack) for run in runs if run.ok]
        with ThreadPoolExecutor(args.concurrency) as pool:
            rows = [row for shard in pool.map(automation.placements, ok) for row in shard]
        print("\n" + report.table(report.account(rows)))
    return 1 if failed else 0


def cmd_stack(args: argparse.Namespace) -> int:
    """greenops up|preview|destroy|refresh --stack S: Pulumi's progress, streamed."""
    from greenops.engine import automation

    if args.shards:
        return cmd_sharded(args)
    st = automation.stack(args.stack, env=_clock_env(args))
    automation.run(st, args.command)
    if args.command == "up":
        from greenops.insight import report

        print("\n" + report.table(report.account(automation.placements(st))))
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    """The periodic job: open time gates, follow the operators, retire completed runs, place new
    workloads, re-place missed ones; print each recorded change with its reason. With --watch,
    repeat unattended until SIGTERM."""
    from greenops.engine import automation, reconcile_stack

    if args.watch and args.now:
        raise GreenOpsError("--now and --watch exclude each other: a watch loop follows the clock")
    if args.watch and args.output != "table":
        raise GreenOpsError("-o json|yaml prints one pass's summary: not with --watch, whose log goes on")
    if args.metrics_port is not None and not args.watch:
        raise GreenOpsError("--metrics-port needs --watch: a single pass ends before anything could scrape it")
    if args.watch and args.due:
        raise GreenOpsError("--due and --watch exclude each other: the watch loop runs due passes between full ones")
    if args.shards:
        if args.watch:
            raise GreenOpsError(
                "--shards and --watch exclude each other: watch each shard stack (or schedule the sharded pass)"
            )
        return cmd_sharded(args)
    st = automation.stack(args.stack, env=_clock_env(args))
    if not args.watch:
        done = reconcile_stack.reconcile_once(st, stream=args.verbose, due_only=args.due)
        print(
            done.summary(args.stack) if args.output == "table" else output.dump(done.document(args.stack), args.output)
        )
        return 0
    from greenops.common.stopping import SignalStop

    interval = reconcile_stack.parse_interval(args.interval) if args.interval else _configured_interval(args.stack)
    stop = SignalStop(
        said=lambda sig: print(f"reconcile {args.stack}: {sig.name} received, stopping after this pass", flush=True)
    )
    observe, endpoint = None, None
    if args.metrics_port is not None:
        from prometheus_client import CollectorRegistry

        from greenops.engine.reconcile_stack_metrics import LoopMetrics
        from greenops.observability.instruments import MetricsEndpoint

        registry = CollectorRegistry()
        observe = LoopMetrics(registry, interval, recorded=lambda: automation.placements(st))
        endpoint = MetricsEndpoint(registry, args.metrics_address, args.metrics_port)
        print(f"reconcile {args.stack}: metrics on http://{args.metrics_address}:{endpoint.port}/metrics", flush=True)
    try:
        reconcile_stack.watch(
            lambda: reconcile_stack.reconcile_once(st, stream=args.verbose),
            args.stack,
            interval,
            stop,
            log=lambda line: print(line, flush=True),
            observe=observe,
            # between its beats, a wake-up for a next change costs the due workloads, not the stack
            run_due=lambda: reconcile_stack.reconcile_once(st, stream=args.verbose, due_only=True),
        )
    finally:
        stop.close()
        if endpoint is not None:
            endpoint.close()
    return 0


def _configured_interval(stack: str) -> timedelta:
    """``greenops:reconcile.intervalSeconds`` of the stack, which its gates' lead was checked against."""
    from greenops.engine import automation

    config = parse_stack_config(_stack_raw(stack, automation.project_dir()), root=automation.project_dir())
    return timedelta(seconds=config.reconcile.interval_seconds)


def cmd_report(args: argparse.Namespace) -> int:
    """The placement table with each completed run's actual and oracle in hindsight, from the
    traces (--traces) or, with ELECTRICITYMAPS_TOKEN set, Electricity Maps' history. The rows are
    the stack's (--stack), the oracle over policy's zones as booked with the scheduler
    (--policy-zones), else the placed zone; or the scheduler's record's (--record), the cluster
    path's included, each with its recorded lifecycle and policy's zones."""
    from greenops.engine import automation
    from greenops.insight import explain, hindsight, record_rows, report
    from greenops.insight.carbon_history import history_source

    only_record = [f"--{name.replace('_', '-')}" for name in ("path", "tenant", "scheduler_url") if getattr(args, name)]
    if args.record:
        if args.policy_zones:
            raise GreenOpsError("--record reads policy's zones with each booking already: drop --policy-zones")
    elif not args.stack:
        raise GreenOpsError("report: give --stack S (its placements) or --record (the scheduler's record)")
    elif only_record:
        raise GreenOpsError(f"{', '.join(only_record)}: only with --record")
    source = history_source(Path(args.traces) if args.traces else None)
    if args.record:
        path = None if args.path == "all" else args.path or "cluster"
        with _scheduler_of(args.stack or "dev", args.scheduler_url) as scheduler:
            rows = record_rows.listed(scheduler, path=path, tenant=args.tenant)
    else:
        rows = automation.placements(automation.stack(args.stack))
        if args.policy_zones:
            with _scheduler_of(args.stack) as scheduler:
                rows = hindsight.with_allowed_zones(
                    rows, lambda name: explain.account(explain.find(scheduler, name, args.stack))["eligibleZones"]
                )
    rows = report.account(hindsight.with_truth(rows, source))
    plotted = report.plot(rows, Path(args.plot)) if args.plot else None
    if args.output != "table":
        document = {"placements": report.document(rows), "plot": str(plotted) if plotted else None}
        print(output.dump(document, args.output))
        return 0
    print(report.table(rows))
    if plotted:
        print(f"plot: {plotted}")
    return 0


def _scheduler_of(stack: str, url: str | None = None) -> RetryingClient:
    """A client of the stack's scheduler (or the one at ``url``), with the token from
    GREENOPS_SCHEDULER_TOKEN (or the file GREENOPS_SCHEDULER_TOKEN_FILE names)."""
    if url is None:
        url = str(parse_stack_config(_stack_raw(stack), root=REPO).endpoints.scheduler_url)
    return RetryingClient(url, token=endpoints.ambient_scheduler_token())


def cmd_token(args: argparse.Namespace) -> int:
    """greenops token issue|list|revoke: the scheduler's API tokens, as its admin."""
    import json

    from greenops.identity import admin

    endpoints = parse_stack_config(_stack_raw(args.stack), root=REPO).endpoints
    url = args.scheduler_url or str(endpoints.scheduler_url)
    with admin.admin_client(url, endpoints.ca_certificate) as client:
        if args.action == "issue":
            body: dict[str, Any] = {
                "name": args.name,
                "role": args.role,
                "tenants": None if args.all_tenants else args.tenant,
                "paths": args.path or ["pulumi", "api"],
            }
            if args.expires:
                body["expires_at"] = stamp(args.expires)
            made = admin.issue(client, body)
            if args.output == "json":
                print(json.dumps(made, indent=2))
            else:
                print(f"{made['id']} {made['name']}: {made['token']}")
                print("(shown once: the scheduler keeps only its SHA-256 digest)", file=sys.stderr)
        elif args.action == "list":
            rows = admin.listing(client)
            if args.output == "json":
                print(json.dumps(rows, indent=2))
            for r in rows if args.output != "json" else []:
                tenants = ",".join(r["tenants"]) if r["tenants"] is not None else "*"
                state = f"revoked {r['revoked_at']}" if r["revoked_at"] else "active"
                print(f"{r['id']}  {r['name']}  {r['role']}  tenants={tenants}  paths={','.join(r['paths'])}  {state}")
        else:
            done = admin.revoke(client, args.id)
            print(f"{done['id']} {done['name']}: revoked at {done['revoked_at']}")
    return 0


def cmd_outage(args: argparse.Namespace) -> int:
    """greenops outage declare|lift|list: the regions declared unavailable, as the scheduler's admin."""
    import json

    from greenops.identity import admin

    endpoints = parse_stack_config(_stack_raw(args.stack), root=REPO).endpoints
    url = args.scheduler_url or str(endpoints.scheduler_url)
    with admin.admin_client(url, endpoints.ca_certificate) as client:
        if args.action == "declare":
            rows = [admin.declare_outage(client, args.region, args.reason)]
        elif args.action == "lift":
            done = admin.lift_outage(client, args.region)
            print(f"{done['provider']}/{done['region']}: lifted")
            return 0
        else:
            rows = admin.outages(client)
    if args.output == "json":
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        print(f"{r['provider']}/{r['region']}  since {r['declaredAt']}  by {r['declaredBy']}: {r['reason']}")
    return 0


def cmd_placements(args: argparse.Namespace) -> int:
    import os

    from greenops.insight import placements
    from greenops.policies.client import OpaClient

    endpoints = parse_stack_config(_stack_raw(args.stack), root=REPO).endpoints
    with _scheduler_of(args.stack) as scheduler:
        rows = placements.active(scheduler, tenant=args.tenant, region=args.region, eu=args.eu)
    if args.output == "table":  # the table first: it stands even when OPA then fails
        print(placements.table(rows))
    impacts = None
    if args.without_region:
        with OpaClient(str(endpoints.opa_url), token=os.environ.get("GREENOPS_OPA_TOKEN")) as opa:
            impacts = placements.affected(rows, args.without_region, opa)
    if args.output == "table":
        if impacts is not None:
            print(placements.impact_table(impacts, args.without_region))
        return 0
    without = (
        None if impacts is None else {"region": args.without_region, "affected": placements.impact_document(impacts)}
    )
    print(output.dump({"placements": placements.document(rows), "withoutRegion": without}, args.output))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from greenops.insight import explain

    with _scheduler_of(args.stack) as scheduler:
        row = explain.find(scheduler, args.workload, args.stack)
    account = explain.account(row)
    print(explain.text(account) if args.output == "table" else output.dump(explain.document(account), args.output))
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    import uvicorn

    from greenops.common.clock import system_clock
    from greenops.insight.dashboard import SchedulerData
    from greenops.insight.dashboard.routes import local_app

    with _scheduler_of(args.stack) as scheduler:
        print(
            f"dashboard of stack {args.stack} (scheduler {scheduler.url}): http://127.0.0.1:{args.port}/dashboard",
            flush=True,
        )
        uvicorn.run(
            local_app(SchedulerData(scheduler), system_clock), host="127.0.0.1", port=args.port, log_level="warning"
        )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from greenops.local.demo import demo

    kwargs = {"record": Path(args.record)} if args.record else {}
    return demo(once=args.once, start=args.start, hours=args.hours, **kwargs)


def _utc(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError("time must carry an offset, e.g. 2027-01-01T00:00:00Z")
    return value.astimezone(UTC)


TOKEN_EXAMPLES = {
    "issue": "greenops token issue --name ci-team-a --tenant team-a --expires 2027-01-01T00:00:00Z",
    "list": "greenops token list -o json",
    "revoke": "greenops token revoke tok_0123",
}
# account()'s fields (greenops/insight/explain.py), in its order: the -o json contract of explain
EXPLAIN_FIELDS = (
    "key",
    "path",
    "phase",
    "tenant",
    "bookedAt",
    "searchedFrom",
    "workload",
    "constraintChain",
    "eligibleZones",
    "considered",
    "chosen",
    "baseline",
    "source",
    "why",
    "mapping",
    "lifecycle",
)


def _shard_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--shards",
        type=int,
        default=0,
        metavar="N",
        help="run on N shard stacks of --stack (<stack>-shard-<i>, generated from its stack file)",
    )
    p.add_argument("--concurrency", type=int, default=2, help="with --shards: shards at a time (default: 2)")


# What main() returns, as scripts and CI may rely on it (shown in `greenops --help`).
STACK_HELD = 75  # sysexits' EX_TEMPFAIL: a temporary refusal, as a mail queue's retry-later
EXIT_CODES = (
    (0, "done"),
    (
        1,
        "the command ran and part of it failed: render (a workload failed or rendered invalid), --shards "
        "(a shard failed); also an unexpected error, with its traceback",
    ),
    (
        2,
        "usage error (argparse), or refused before or while running: bad arguments or stack config, a "
        "service that refused or did not answer (the reason on stderr, `greenops: ...`)",
    ),
    (
        STACK_HELD,
        "the stack is being updated by another run, which the message names: nothing was done; a "
        "scheduled job can treat it as a skipped run and try again when that run ends",
    ),
    (130, "interrupted (Ctrl-C)"),
)


def _exit_code_epilog() -> str:
    return "exit codes:\n" + "\n".join(
        textwrap.fill(text, output.WIDTH, initial_indent=f"  {code:<4} ", subsequent_indent=" " * 7)
        for code, text in EXIT_CODES
    )


def _command(sub: Any, name: str, help: str, examples: list[str], fields: str | None = None) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with its examples and, for those that list, the fields of
    their -o json|yaml document (the contract a script reads; tests/unit/test_cli_output.py holds it)."""
    epilog = "Examples:\n" + "\n".join(f"  {e}" for e in examples)
    if fields:
        epilog += "\n\n" + textwrap.fill("-o json|yaml prints " + fields, output.WIDTH)
    p: argparse.ArgumentParser = sub.add_parser(
        name, help=help, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="greenops",
        description="Carbon-aware VM placement across Azure, GCP and AWS",
        epilog="Examples:\n  greenops catalog --provider gcp\n  greenops up --stack dev\n"
        "  greenops report --stack dev -o json\n\n" + _exit_code_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = _command(
        sub,
        "catalog",
        "list regions with zone, EU flag and carbon data",
        ["greenops catalog", "greenops catalog --provider azure -o json"],
        "a list of regions: " + ", ".join(CATALOG_FIELDS) + " (eu a boolean, gaps a list)",
    )
    p.add_argument("--provider", choices=load_catalog().providers)
    output.add_output_argument(p)
    p.set_defaults(func=cmd_catalog)
    p = _command(
        sub,
        "render",
        "render a stack's workloads for an explicit provider and region",
        [
            "greenops render --provider gcp --region europe-west3",
            "greenops render --stack dev --provider azure --region swedencentral --workload etl --out build/manifests",
        ],
    )
    p.add_argument("--stack", default="dev")
    p.add_argument("--provider", required=True, choices=load_catalog().providers)
    p.add_argument("--region", required=True)
    p.add_argument("--workload", action="append", help="only this workload (repeatable)")
    p.add_argument("--at", type=_utc, help="scheduling time to stamp (default: now)")
    p.add_argument("--out", default="build/manifests")
    p.set_defaults(func=cmd_render)
    for op, text in [
        ("up", "place and provision the stack's workloads"),
        ("preview", "show what up would change"),
        ("destroy", "delete everything the stack created"),
        ("refresh", "read the stack's resources back"),
    ]:
        p = _command(sub, op, text, [f"greenops {op} --stack dev", f"greenops {op} --stack prod --shards 4"])
        p.add_argument("--stack", required=True)
        p.add_argument("--now", type=_utc, help="the clock for time gates (default: now)")
        _shard_arguments(p)
        p.set_defaults(func=cmd_stack)
    p = _command(
        sub,
        "reconcile",
        "the periodic job: open time gates, retire completed workloads",
        [
            "greenops reconcile --stack dev",
            "greenops reconcile --stack dev -o json",
            "greenops reconcile --stack prod --watch --interval 5m",
            "greenops reconcile --stack prod --shards 10 --due",
        ],
        "one pass's summary (not with --watch): stack, pass (full or due), due (workload: why; null for a full "
        "pass), resourceChanges (operation: count), changes (a list of change, workload, detail), nextChange (at, "
        "what; or null)",
    )
    p.add_argument("--stack", required=True)
    output.add_output_argument(p)
    p.add_argument("--now", type=_utc, help="the clock for time gates (default: now)")
    _shard_arguments(p)
    p.add_argument("--verbose", action="store_true", help="stream Pulumi's progress")
    p.add_argument(
        "--due",
        action="store_true",
        help="only the due workloads (new, edited, removed, a gate or an end reached, awaiting their operator), "
        "their resources as the update's targets; no update when none is due",
    )
    p.add_argument(
        "--watch",
        action="store_true",
        help="repeat unattended: a full pass once per interval, and a pass of the due workloads at each next "
        "change before it; SIGTERM stops it between passes",
    )
    p.add_argument("--interval", help="with --watch: e.g. 5m (default: the stack's greenops:reconcile.intervalSeconds)")
    p.add_argument(
        "--metrics-port",
        type=int,
        help="with --watch: serve Prometheus metrics on this port at /metrics (default: none served)",
    )
    p.add_argument(
        "--metrics-address",
        default="127.0.0.1",
        help="with --metrics-port: the address to bind (default: 127.0.0.1; 0.0.0.0 in a pod, for the scrape)",
    )
    p.set_defaults(func=cmd_reconcile)
    p = _command(
        sub,
        "report",
        "placements and carbon accounting: of a stack (--stack), or of the scheduler's record (--record)",
        [
            "greenops report --stack dev",
            "greenops report --record --path all -o json",
            "greenops report --stack dev --policy-zones --plot build/report.png",
        ],
        "placements (a list: "
        + ", ".join((*report_fields.COLUMNS, *report_fields.NOTES, "gateLate"))
        + "; times ISO-8601 UTC, grams and intensities numbers or null) and plot (the PNG's path, or null)",
    )
    output.add_output_argument(p)
    p.add_argument(
        "--stack",
        help="the stack whose placements to report (its state holds the Pulumi path's lifecycle); with "
        "--record, only whose scheduler to ask (default: dev)",
    )
    p.add_argument("--plot", help="write a PNG of the chosen zones' intensity with the runs")
    p.add_argument(
        "--traces",
        help="Electricity Maps CSV exports to judge completed runs by (default: the public 2023 traces beside "
        "the checkout; ELECTRICITYMAPS_TOKEN set: Electricity Maps' history instead)",
    )
    p.add_argument(
        "--policy-zones",
        action="store_true",
        help="the oracle searches the zones policy allowed, as booked with the stack's scheduler "
        "(token: GREENOPS_SCHEDULER_TOKEN); without it, the placed zone only",
    )
    p.add_argument(
        "--record",
        action="store_true",
        help="report from the scheduler's reservation record instead of a stack's state: the record is where "
        "the cluster path (VmTemplates) keeps its lifecycle, which no stack holds; each row carries policy's "
        "zones as booked, so the oracle searches them (token: GREENOPS_SCHEDULER_TOKEN)",
    )
    p.add_argument(
        "--path",
        choices=["cluster", "pulumi", "api", "all"],
        help="with --record: whose placements (default: cluster, the path whose lifecycle only the record "
        "holds; the Pulumi path reports its phase there but keeps its times in its stack)",
    )
    p.add_argument("--tenant", help="with --record: only this tenant's placements (of those the token reads)")
    p.add_argument(
        "--scheduler-url",
        help="with --record: the scheduler to ask, instead of the stack's greenops:endpoints.schedulerUrl",
    )
    p.set_defaults(func=cmd_report)
    p = _command(
        sub,
        "placements",
        "active placements of both paths, and those waiting in the queue (Pending #position), from the "
        "scheduler's reservation record (tokens: GREENOPS_SCHEDULER_TOKEN, GREENOPS_OPA_TOKEN)",
        ["greenops placements --eu", "greenops placements --without-region swedencentral -o json"],
        "placements (a list: " + ", ".join(placement_fields.FIELDS) + "; start ISO-8601 UTC, a Pending one's "
        "earliest; position: its place in the queue, 1 for the next admitted) and withoutRegion "
        "(null, or region and affected: a list of " + ", ".join(placement_fields.IMPACT_FIELDS) + ")",
    )
    output.add_output_argument(p)
    p.add_argument("--stack", default="dev", help="whose endpoints to ask (default: dev)")
    p.add_argument("--tenant")
    p.add_argument("--region", help="only placements in this region")
    p.add_argument("--eu", action="store_true", help="only placements in EU regions")
    p.add_argument(
        "--without-region",
        metavar="REGION",
        help="who is affected if REGION is removed: each placement re-evaluated against policy without it",
    )
    p.set_defaults(func=cmd_placements)
    p = _command(
        sub,
        "token",
        "issue, list and revoke the scheduler's API tokens (as its admin: GREENOPS_SCHEDULER_ADMIN_TOKEN)",
        [
            "greenops token issue --name ci-team-a --tenant team-a",
            "greenops token list -o json",
            "greenops token revoke tok_0123",
        ],
    )
    actions = p.add_subparsers(dest="action", required=True)
    for action, text in [
        ("issue", "a new token for a principal: printed once"),
        ("list", "every token's principal and state (never the tokens)"),
        ("revoke", "refused from the next request on (by other replicas of the scheduler: within a second)"),
    ]:
        a = _command(actions, action, text, [TOKEN_EXAMPLES[action]])
        a.add_argument("--stack", default="dev", help="whose scheduler (default: dev)")
        a.add_argument("--scheduler-url", help="instead of the stack's greenops:endpoints.schedulerUrl")
        a.add_argument("-o", "--output", choices=["text", "json"], default="text")
        a.set_defaults(func=cmd_token)
        if action == "issue":
            a.add_argument("--name", required=True, help="who holds it, e.g. ci-team-a")
            a.add_argument("--role", choices=["read", "report", "write", "admin"], default="write")
            who = a.add_mutually_exclusive_group(required=True)
            who.add_argument("--tenant", action="append", help="a tenant it acts for (repeatable)")
            who.add_argument(
                "--all-tenants", action="store_true", help="every tenant: read and admin, or the cluster path's writer"
            )
            a.add_argument(
                "--path",
                action="append",
                choices=["pulumi", "cluster", "api"],
                help="repeatable; default: pulumi and api",
            )
            a.add_argument("--expires", type=_utc, help="refused after this instant, e.g. 2027-01-01T00:00:00Z")
        if action == "revoke":
            a.add_argument("id", help="the token's id (tok_...), from issue or list")
    p = _command(
        sub,
        "outage",
        "declare a provider region unavailable, lift it, or list the declarations (as the scheduler's admin of "
        "every tenant: GREENOPS_SCHEDULER_ADMIN_TOKEN); while declared nothing is booked there, and each pass "
        "fails the placements there over to another region",
        [
            'greenops outage declare azure/westeurope --reason "provider incident 4711"',
            "greenops outage list -o json",
            "greenops outage lift azure/westeurope",
        ],
    )
    actions = p.add_subparsers(dest="action", required=True)
    for action, text in [
        ("declare", "declare REGION unavailable, with the reason recorded beside it"),
        ("lift", "make REGION bookable again"),
        ("list", "the declared outages: region, since when, by whom and why"),
    ]:
        a = _command(
            actions,
            action,
            text,
            [f"greenops outage {action} azure/westeurope" if action != "list" else "greenops outage list"],
        )
        a.add_argument("--stack", default="dev", help="whose scheduler (default: dev)")
        a.add_argument("--scheduler-url", help="instead of the stack's greenops:endpoints.schedulerUrl")
        a.add_argument("-o", "--output", choices=["text", "json"], default="text")
        a.set_defaults(func=cmd_outage)
        if action != "list":
            a.add_argument("region", help="provider/region, e.g. azure/westeurope")
        if action == "declare":
            a.add_argument("--reason", required=True, help="what is known of it: shown with every failover it causes")
    p = _command(
        sub,
        "dashboard",
        "the placements dashboard of a stack, on loopback (reads the stack's "
        "scheduler; token: GREENOPS_SCHEDULER_TOKEN)",
        ["greenops dashboard --stack dev --port 8090"],
    )
    p.add_argument("--stack", default="dev", help="whose scheduler's record to show (default: dev)")
    p.add_argument("--port", type=int, default=8090)
    p.set_defaults(func=cmd_dashboard)
    p = _command(
        sub,
        "explain",
        "why a workload runs where and when it does, as recorded when it was decided (token: GREENOPS_SCHEDULER_TOKEN)",
        ["greenops explain etl", "greenops explain team-a/render-nightly -o yaml"],
        "an object: " + ", ".join(EXPLAIN_FIELDS) + " (bookedAt, searchedFrom and chosen.start ISO-8601 UTC)",
    )
    output.add_output_argument(p)
    p.add_argument("workload", help="a workload declared in the stack, or a VmTemplate as namespace/name")
    p.add_argument("--stack", default="dev", help="whose scheduler's record to read (default: dev)")
    p.set_defaults(func=cmd_explain)
    p = _command(
        sub,
        "demo",
        "the whole system on loopback: control plane, webhook, OPA, scheduler, dev stack",
        ["greenops demo --once", "greenops demo --hours 0 --start 2027-01-01T17:00:00Z"],
    )
    p.add_argument("--once", action="store_true", help="tear everything down after the report")
    p.add_argument(
        "--record",
        help="the SQLite file of the scheduler's reservation record "
        "(default: build/demo/reservations.db, kept between runs)",
    )
    p.add_argument("--start", type=_utc, help="the simulated clock's first instant (default: the next 17:00 UTC)")
    p.add_argument(
        "--hours",
        type=float,
        default=24,
        help="simulated hours to play forward after placing (default: 24; 0 places only)",
    )
    p.set_defaults(func=cmd_demo)
    p = _command(
        sub,
        "serve",
        "run OPA and the scheduler on loopback for the dev stack",
        ["greenops serve", "greenops serve --scheduler-port 18080 --opa-port 18181"],
    )
    p.add_argument("--opa-port", type=int, default=endpoints.OPA_PORT)
    p.add_argument("--scheduler-port", type=int, default=endpoints.SCHEDULER_PORT)
    p.add_argument("--source", default="profiles")
    p.set_defaults(func=cmd_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_tracing("greenops")  # off unless OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set
    try:
        code: int = args.func(args)
        return code
    except StackLocked as exc:
        print(f"greenops: {exc}", file=sys.stderr)
        return STACK_HELD
    except GreenOpsError as exc:
        print(f"greenops: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # The context managers have stopped what they started on the way out; a traceback here
        # would only say where the Ctrl-C landed.
        print("greenops: interrupted", file=sys.stderr)
        return 130
