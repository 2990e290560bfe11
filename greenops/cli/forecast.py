"""greenops-forecast: train, register, export and serve the carbon-intensity forecasters.

    greenops-forecast train  --traces DIR [--zones DE,GB] [--holdout-from 2023-11-01 | --holdout-days 61]
                             [--tracking-uri URI] [--out build/forecast] [--no-register]
    greenops-forecast export --dest DIR [--models forecaster-de,...]      # KServe storageUri layout
    greenops-forecast serve  [--port 8085] [--models ...]                 # MLServer, OIP v2 on loopback
    greenops-forecast publish (--stack prod | --storage-prefix s3://...) [--endpoint-url URL] [--models ...]
                                                  # the champions where the InferenceServices read them

The tracking URI defaults to $MLFLOW_TRACKING_URI, else a local sqlite store in build/mlflow.
publish reads the object store's keys from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (the stack's
greenops:s3AccessKey / s3SecretKey) and its endpoint from --endpoint-url, else $AWS_ENDPOINT_URL.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from greenops.common.toolpaths import REPO
from greenops.models.forecast_names import DEFAULT_STORAGE_PREFIX

BUILD = REPO / "build"
LOCAL_STORE = BUILD / "mlflow"  # the default tracking store: a sqlite database with its artifacts beside it


def _connect(tracking_uri: str) -> None:
    from greenops.forecasting import tracking

    tracking.use_tracking(tracking_uri, LOCAL_STORE / "artifacts")


def _holdout(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date: {value!r}") from None
    return parsed.replace(tzinfo=parsed.tzinfo or UTC).astimezone(UTC)


def _names(value: str | None) -> list[str] | None:
    return [n.strip() for n in value.split(",") if n.strip()] if value else None


def cmd_train(args: argparse.Namespace) -> int:
    from mlflow.exceptions import MlflowException

    from greenops.forecasting import report, tracking, training
    from greenops.intensity import TraceSource

    if not args.traces.is_dir():
        print(f"greenops-forecast: no trace directory {args.traces}", file=sys.stderr)
        return 2
    try:
        traces = TraceSource.from_directory(args.traces)
    except ValueError as exc:
        print(f"greenops-forecast: {exc}", file=sys.stderr)
        return 2
    zones = _names(args.zones)
    unknown = sorted(set(zones or []) - traces.zones())
    if unknown:
        print(
            f"greenops-forecast: no trace for zone(s) {', '.join(unknown)} in {args.traces} "
            f"(has {', '.join(sorted(traces.zones()))})",
            file=sys.stderr,
        )
        return 2
    holdout = args.holdout_from or training.default_holdout(traces, args.holdout_days)
    started = time.perf_counter()
    try:
        result = training.train(traces, holdout, zones, horizon=args.horizon, alpha=args.alpha)
    except ValueError as exc:
        print(f"greenops-forecast: {exc}", file=sys.stderr)
        return 2
    trained = time.perf_counter() - started
    files = report.write(result, args.out, _names(args.plot_zones) or [])
    print(report.markdown(result))
    print(
        f"trained {len(result.zones)} zone models and the generic model in {trained:.1f} s; wrote "
        + ", ".join(str(f) for f in files)
    )
    if args.no_tracking:
        return 0
    try:
        _connect(args.tracking_uri)
        versions = tracking.log_training(result, files, register=not args.no_register)
    except (tracking.TrackingUnavailable, MlflowException) as exc:
        print(f"greenops-forecast: nothing registered: {exc}", file=sys.stderr)
        return 3
    print(
        f"logged to {args.tracking_uri} (experiment {tracking.EXPERIMENT}); registered: "
        + ", ".join(f"{n} v{v}" for n, v in versions.items() if v)
    )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from mlflow.exceptions import MlflowException

    from greenops.forecasting import tracking

    try:
        _connect(args.tracking_uri)
        exported = tracking.export(args.dest, _names(args.models))
    except (LookupError, tracking.TrackingUnavailable, MlflowException) as exc:
        print(f"greenops-forecast: {exc}", file=sys.stderr)
        return 2
    for name, path in exported.items():
        print(f"{name}: {path}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from mlflow.exceptions import MlflowException

    from greenops.common.errors import GreenOpsError
    from greenops.common.stopping import SignalStop
    from greenops.forecasting import tracking
    from greenops.local.mlops import MlserverServer, write_repository

    try:
        _connect(args.tracking_uri)
        exported = tracking.export(args.export_dir, _names(args.models))
        server = MlserverServer(repository=write_repository(exported, args.repository), port=args.port)
        # SIGTERM too: its default action would end this process and leave MLServer running
        with SignalStop() as stop, server:
            print(f"MLServer on {server.url}: {', '.join(server.models)} (OIP v2; Ctrl-C stops it)", flush=True)
            while server.running and not stop.wait(1):
                pass
    except (LookupError, GreenOpsError, MlflowException) as exc:
        print(f"greenops-forecast: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


def stack_serving(stack: str) -> tuple[str, list[str]]:
    """The storage prefix and the models a stack's InferenceServices read (greenops:platform.kserve)."""
    from pydantic import ValidationError

    from components.platform_config import PlatformConfig
    from greenops.common.errors import GreenOpsError, field_errors
    from greenops.models.forecast_names import served_models
    from greenops.stack.files import greenops_config, read_stack_file

    path = REPO / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise LookupError(f"no stack file {path}")
    try:
        raw = greenops_config(read_stack_file(path, REPO)).get("platform") or {}
    except GreenOpsError as exc:  # its callers report a LookupError as a missing or unusable stack
        raise LookupError(str(exc)) from None
    try:
        kserve = PlatformConfig.model_validate(raw).kserve
    except ValidationError as exc:
        problems = "; ".join(f"greenops:platform.{field}: {msg}" for field, msg in field_errors(exc.errors()))
        raise LookupError(f"{path.name}: {problems}") from None
    if not kserve.enabled:
        raise LookupError(f"stack {stack} serves no forecasters (greenops:platform.kserve.enabled is false)")
    return kserve.storage_prefix, served_models(kserve.zones)


def cmd_publish(args: argparse.Namespace) -> int:
    from mlflow.exceptions import MlflowException

    from greenops.forecasting import publish, tracking
    from greenops.models.forecast_names import split_s3_uri

    names: list[str] | None
    try:
        if args.stack:
            prefix, names = stack_serving(args.stack)
            names = _names(args.models) or names
        else:
            prefix, names = args.storage_prefix, _names(args.models)
        split_s3_uri(prefix)  # a bad prefix is refused before anything is downloaded
        client = publish.s3_client(args.endpoint_url)
        _connect(args.tracking_uri)
        exported = tracking.export(args.export_dir, names)
        done = publish.publish(exported, prefix, client)
    except (LookupError, ValueError, tracking.TrackingUnavailable, MlflowException, publish.PublishError) as exc:
        print(f"greenops-forecast: publish failed: {exc}", file=sys.stderr)
        return 2
    for p in done:
        version = json.loads((exported[p.model] / "registered_model_version.json").read_text())["version"]
        print(f"{p.model} v{version}: {p.uri} ({p.uploaded} files, {p.removed} stale removed)")
    return 0


def tracking_uri_default() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{LOCAL_STORE / 'mlflow.db'}"


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser (also read by scripts/docs_reference.py for the CLI reference)."""
    parser = argparse.ArgumentParser(prog="greenops-forecast", description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", default=tracking_uri_default())
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train, evaluate on a held-out period, log and register")
    t.add_argument(
        "--traces",
        type=Path,
        default=REPO.parent / "shared" / "data" / "greendcc_ci_2023",
        help="a directory of Electricity Maps hourly CSV exports",
    )
    t.add_argument("--zones", help="comma-separated zones (default: every zone in --traces)")
    t.add_argument("--holdout-from", type=_holdout, help="start of the held-out period (UTC)")
    t.add_argument("--holdout-days", type=int, default=61, help="without --holdout-from: the last N days")
    t.add_argument("--horizon", type=int, default=72, help="hours predicted by each forecast")
    t.add_argument("--alpha", type=float, default=1.0, help="ridge regularisation")
    t.add_argument("--out", type=Path, default=BUILD / "forecast")
    t.add_argument("--plot-zones", default="DE,GB,US-CAL-CISO,SG")
    t.add_argument("--no-register", action="store_true", help="log runs but register nothing")
    t.add_argument("--no-tracking", action="store_true", help="evaluate and write the report only")
    t.set_defaults(func=cmd_train)
    e = sub.add_parser("export", help="download the champion versions in the KServe storageUri layout")
    e.add_argument("--dest", type=Path, required=True)
    e.add_argument("--models", help="comma-separated model names (default: every forecaster-*)")
    e.set_defaults(func=cmd_export)
    s = sub.add_parser("serve", help="serve the champion versions with MLServer over OIP v2")
    s.add_argument("--port", type=int, default=8085)
    s.add_argument("--models", help="comma-separated model names (default: every forecaster-*)")
    s.add_argument("--export-dir", type=Path, default=BUILD / "models")
    s.add_argument("--repository", type=Path, default=BUILD / "mlserver")
    s.set_defaults(func=cmd_serve)
    p = sub.add_parser("publish", help="upload the champion versions to the prefix the InferenceServices read")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", help="a stack in stacks/: its greenops:platform.kserve storagePrefix and zones")
    where.add_argument("--storage-prefix", help=f"an s3:// prefix (the platform default is {DEFAULT_STORAGE_PREFIX})")
    p.add_argument("--models", help="comma-separated model names (default: the stack's, or every forecaster-*)")
    p.add_argument(
        "--endpoint-url",
        default=os.environ.get("AWS_ENDPOINT_URL"),
        help="the S3 endpoint, e.g. a port-forward to SeaweedFS (default: $AWS_ENDPOINT_URL, else AWS)",
    )
    p.add_argument("--export-dir", type=Path, default=BUILD / "published")
    p.set_defaults(func=cmd_publish)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
