"""Run the scheduler service.

python -m greenops.scheduler --host 127.0.0.1 --port 8080 [--source profiles]
    --source profiles              bundled month x hour profiles from data/ (default)
    --source traces:DIR            Electricity Maps CSV exports in DIR (actual values)
    --source oip:URL               forecasts from an Open Inference Protocol v2 server, profiles as fallback
        [--history traces:DIR]     what the forecasters are fed as recent history (default: profiles)
    --source electricitymaps       the Electricity Maps API (token in ELECTRICITYMAPS_TOKEN), profiles as fallback
--database URL                     the reservation record: sqlite:///FILE (default: reservations.db in
                                   $XDG_STATE_HOME/greenops) or postgresql+psycopg://… (a cluster)
Every caller but the health probes sends ``Authorization: Bearer <token>``: the bootstrap admin's
(GREENOPS_SCHEDULER_ADMIN_TOKEN, or --admin-token-file naming a mounted Secret; never on the
command line, where ps shows it), an API token it issued (``greenops token issue``), or a principal
--principals declares: a static token by its digest (OPA's), or a Kubernetes ServiceAccount whose
token it reviews with the API server. Without an admin token or declared principals it refuses to
start.
Each flag but --host, --port, --history and --log-format overrides a setting from the environment
(greenops.scheduler.settings names them); an invalid one stops the service with one line naming it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from datetime import timedelta
from pathlib import Path

import structlog
import uvicorn
from kubernetes.config.config_exception import ConfigException
from sqlalchemy import make_url
from sqlalchemy.exc import SQLAlchemyError

from greenops.common import endpoints
from greenops.common.clock import system_clock
from greenops.common.errors import GreenOpsError
from greenops.identity.kubernetes import TokenReviewer
from greenops.identity.principals import Declared, load_principals
from greenops.intensity import CarbonSource, ProfileSource, TraceSource
from greenops.observability.tracing import setup_tracing
from greenops.policies.settings import load_policy_settings
from greenops.reservations import ReservationStore
from greenops.scheduler.api import InsecureConfiguration, create_app
from greenops.scheduler.dashboard import mount_dashboard
from greenops.scheduler.orphan_sweep import OrphanSweep
from greenops.scheduler.queueing import QueueSettings
from greenops.scheduler.settings import FLAGS, SchedulerSettings, SettingsError, load_settings


def build_source(spec: str, history: str | None = None, electricitymaps_token: str | None = None) -> CarbonSource:
    kind, _, arg = spec.partition(":")
    if kind == "profiles":
        return ProfileSource()
    if kind == "traces":
        return TraceSource.from_directory(Path(arg))
    if kind == "oip":
        from greenops.intensity.oip import OipSource

        return OipSource(arg, history=build_source(history) if history else None, fallback=ProfileSource())
    if kind == "electricitymaps":
        from greenops.intensity.electricitymaps import ElectricityMapsSource

        if not electricitymaps_token:
            raise SystemExit("scheduler: --source electricitymaps needs ELECTRICITYMAPS_TOKEN in the environment")
        return ElectricityMapsSource(electricitymaps_token, fallback=ProfileSource())
    raise SystemExit(f"scheduler: unknown --source {spec!r} (profiles, traces:DIR, oip:URL, electricitymaps)")


def default_database() -> str:
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "greenops"
    state.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{state / 'reservations.db'}"


def _safe(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def configure_logging(fmt: str) -> None:
    renderer = structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True), renderer]
    )
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser (also read by scripts/docs_reference.py for the CLI reference)."""
    # allow_abbrev=False: `--token SECRET` would otherwise be taken as --token-file and echoed as a path
    parser = argparse.ArgumentParser(
        prog="python -m greenops.scheduler", description=__doc__.splitlines()[0], allow_abbrev=False
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=endpoints.SCHEDULER_PORT)
    # The flags that override settings default to None, "not given": the environment then decides,
    # and SchedulerSettings holds the defaults.
    parser.add_argument("--source", help="the carbon source (env GREENOPS_CARBON_SOURCE; default profiles)")
    parser.add_argument(
        "--history",
        help="with --source oip:URL, the source of the recent history fed to the "
        "forecasters (e.g. traces:DIR); profiles when absent",
    )
    parser.add_argument(
        "--capacity-vcpu",
        type=float,
        help="vCPUs each zone offers per hourly slot (the black-hole guard; env GREENOPS_CAPACITY_VCPU; default 512)",
    )
    parser.add_argument(
        "--database",
        help="SQLAlchemy URL of the reservation record (env GREENOPS_SCHEDULER_DATABASE; a password "
        "belongs there or in a Secret, not on the command line)",
    )
    parser.add_argument(
        "--rate-limit",
        help="scheduling requests per principal and replica, e.g. 600/minute ('none' for no limit; "
        "env GREENOPS_SCHEDULER_RATE_LIMIT; default 600/minute)",
    )
    parser.add_argument(
        "--hold-seconds",
        type=float,
        help="how long an admission's cluster-path booking waits for its VmTemplate to be stored "
        "(env GREENOPS_SCHEDULER_HOLD_SECONDS; default 120)",
    )
    parser.add_argument("--log-format", choices=["json", "console"], default="json")
    parser.add_argument(
        "--admin-token-file",
        help="file holding the bootstrap admin's bearer token (default: GREENOPS_SCHEDULER_ADMIN_TOKEN)",
    )
    parser.add_argument(
        "--principals",
        help="YAML file of declared principals, static tokens by digest and Kubernetes ServiceAccounts "
        "(env GREENOPS_SCHEDULER_PRINCIPALS; greenops.identity.principals)",
    )
    parser.add_argument(
        "--kubeconfig",
        help="for ServiceAccount principals, the API server to review tokens with (default: in-cluster)",
    )
    parser.add_argument(
        "--scarcity-price",
        action="store_const",
        const=True,
        help="price the capacity a booking fills, so that flexible requests leave the clean hours urgent "
        "ones need (env GREENOPS_SCHEDULER_SCARCITY_PRICE; off by default)",
    )
    parser.add_argument(
        "--policy-config",
        help="the policy settings the bundle ships, for the tenants' quotas (default: the packaged ones)",
    )
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def settings_from(args: argparse.Namespace) -> SchedulerSettings:
    """The environment's settings with the flags given over them; SystemExit, in one line, if invalid."""
    # A flag's dest is its setting's name; there is no args.admin_token: it comes from --admin-token-file.
    given = {field: value for field in FLAGS if (value := getattr(args, field, None)) is not None}
    if args.admin_token_file:
        try:
            given["admin_token"] = Path(args.admin_token_file).read_text().strip()
        except OSError as exc:
            raise SystemExit(
                f"scheduler: --admin-token-file: cannot read {args.admin_token_file} ({exc.strerror})"
            ) from None
    try:
        settings = load_settings(given)
    except SettingsError as exc:
        raise SystemExit(f"scheduler: invalid setting: {exc}") from None
    if args.history and not settings.source.startswith("oip:"):
        raise SystemExit("scheduler: --history only applies to --source oip:URL")
    return settings


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = settings_from(args)
    configure_logging(args.log_format)
    setup_tracing("greenops-scheduler")  # off unless OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set
    # GREENOPS_NOW pins the clock for replays of recorded traces (see greenops.common.clock)
    database = settings.database or default_database()
    try:
        store = ReservationStore(database, hold=timedelta(seconds=settings.hold_seconds))
    except SQLAlchemyError as exc:
        raise SystemExit(f"scheduler: cannot open the reservation record {_safe(database)}: {exc}") from None
    structlog.get_logger("greenops.scheduler").info(
        "reservations.opened", database=_safe(database), active=len(store.list(now=system_clock()))
    )
    try:
        policy = load_policy_settings(Path(settings.policy_config) if settings.policy_config else None)
        declared = load_principals(Path(settings.principals)) if settings.principals else Declared()
        reviewer = TokenReviewer(declared.by_account, kubeconfig=settings.kubeconfig) if declared.by_account else None
        app = create_app(
            build_source(settings.source, args.history, settings.electricitymaps_api_token()),
            capacity_vcpu=settings.capacity_vcpu,
            clock=system_clock,
            admin_tokens=[t] if (t := settings.bootstrap_admin_token()) else [],
            store=store,
            rate_limit=settings.requests_per_principal(),
            principals=declared,
            reviewer=reviewer,
            policy=policy,
            scarcity_price=settings.scarcity_price,
            orphan_sweep=OrphanSweep(timedelta(seconds=settings.orphan_grace_seconds), settings.orphan_sweep_seconds),
            queue=QueueSettings(settings.queue_max_per_tenant, settings.queue_seconds),
        )
        mount_dashboard(app)  # the service's own page over its record (greenops.scheduler.dashboard)
    except (GreenOpsError, InsecureConfiguration) as exc:
        raise SystemExit(f"scheduler: {exc}") from None
    except ConfigException as exc:
        raise SystemExit(f"scheduler: ServiceAccount principals need an API server to review tokens: {exc}") from None
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
