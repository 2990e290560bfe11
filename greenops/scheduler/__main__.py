"""Run the scheduler service.

python -m greenops.scheduler --host 127.0.0.1 --port 8080 [--source profiles]
    --source profiles              bundled month x hour profiles from data/ (default)
    --source traces:DIR            Electricity Maps CSV exports in DIR (actual values)
    --source oip:URL               forecasts from an Open Inference Protocol v2 server, profiles as fallback
        [--history traces:DIR]     what the forecasters are fed as recent history (default: profiles)
    --source electricitymaps       the Electricity Maps API (token in ELECTRICITYMAPS_TOKEN), profiles as fallback
--database URL                     the reservation record: sqlite:///FILE (default: reservations.db in
                                   $XDG_STATE_HOME/greenops) or postgresql+psycopg://… (a cluster)
Callers must send ``Authorization: Bearer <token>`` when GREENOPS_SCHEDULER_TOKEN is set or
--token-file names a file (a mounted Secret); never on the command line, where ps shows it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

import structlog
import uvicorn
from sqlalchemy import make_url
from sqlalchemy.exc import SQLAlchemyError

from greenops import endpoints
from greenops.clock import system_clock
from greenops.reservations import ReservationStore
from greenops.scheduler.api import create_app
from greenops.scheduler.sources import CarbonSource, ProfileSource, TraceSource


def build_source(spec: str, history: str | None = None) -> CarbonSource:
    kind, _, arg = spec.partition(":")
    if kind == "profiles":
        return ProfileSource()
    if kind == "traces":
        return TraceSource.from_directory(Path(arg))
    if kind == "oip":
        from greenops.scheduler.sources.oip import OipSource

        return OipSource(arg, history=build_source(history) if history else None, fallback=ProfileSource())
    if kind == "electricitymaps":
        from greenops.scheduler.sources.electricitymaps import ElectricityMapsSource

        token = os.environ.get("ELECTRICITYMAPS_TOKEN")
        if not token:
            raise SystemExit("scheduler: --source electricitymaps needs ELECTRICITYMAPS_TOKEN in the environment")
        return ElectricityMapsSource(token, fallback=ProfileSource())
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m greenops.scheduler", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=endpoints.SCHEDULER_PORT)
    parser.add_argument("--source", default=os.environ.get("GREENOPS_CARBON_SOURCE", "profiles"))
    parser.add_argument(
        "--history",
        help="with --source oip:URL, the source of the recent history fed to the "
        "forecasters (e.g. traces:DIR); profiles when absent",
    )
    parser.add_argument(
        "--capacity-vcpu",
        type=float,
        default=float(os.environ.get("GREENOPS_CAPACITY_VCPU", 512)),
        help="vCPUs each zone offers per hourly slot (the black-hole guard)",
    )
    parser.add_argument(
        "--database",
        default=os.environ.get("GREENOPS_SCHEDULER_DATABASE") or default_database(),
        help="SQLAlchemy URL of the reservation record (env GREENOPS_SCHEDULER_DATABASE; a password "
        "belongs there or in a Secret, not on the command line)",
    )
    parser.add_argument(
        "--rate-limit",
        default=os.environ.get("GREENOPS_SCHEDULER_RATE_LIMIT", "600/minute"),
        help="scheduling requests per tenant and replica, e.g. 600/minute ('none' for no limit)",
    )
    parser.add_argument("--log-format", choices=["json", "console"], default="json")
    parser.add_argument(
        "--token-file",
        help="file holding the bearer token callers must send "
        "(default: GREENOPS_SCHEDULER_TOKEN; neither: no authentication)",
    )
    args = parser.parse_args(argv)
    configure_logging(args.log_format)
    if args.history and not args.source.startswith("oip:"):
        raise SystemExit("scheduler: --history only applies to --source oip:URL")
    # GREENOPS_NOW pins the clock for replays of recorded traces (see greenops.clock)
    token = Path(args.token_file).read_text().strip() if args.token_file else os.environ.get("GREENOPS_SCHEDULER_TOKEN")
    if token == "":
        raise SystemExit("scheduler: the bearer token is empty (--token-file or GREENOPS_SCHEDULER_TOKEN)")
    try:
        store = ReservationStore(args.database)
    except SQLAlchemyError as exc:
        raise SystemExit(f"scheduler: cannot open the reservation record {_safe(args.database)}: {exc}") from None
    structlog.get_logger("greenops.scheduler").info(
        "reservations.opened", database=_safe(args.database), active=len(store.list(now=system_clock()))
    )
    app = create_app(
        build_source(args.source, args.history),
        capacity_vcpu=args.capacity_vcpu,
        clock=system_clock,
        token=token,
        store=store,
        rate_limit=None if args.rate_limit == "none" else args.rate_limit,
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
