#!/usr/bin/env python3
"""Forecaster training cost and served inference latency.

    .venv/bin/python benchmarks/forecasting.py [--data ../shared/data] [--requests 500]

Trains every zone of the 2023 traces plus the generic model (no tracking) and prints wall time,
CPU time and peak memory; logs them to a throw-away sqlite registry, serves the champions with the
real MLServer on loopback and prints p50/p99 of OIP v2 inference round trips, per model and through
the scheduler's OIP source (uncached: a new forecast hour each call).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import mlflow
import numpy as np
from latency import percentiles, timed_ms

from greenops.forecasting import tracking, training
from greenops.intensity import ProfileSource, TraceSource
from greenops.intensity.oip import OipSource
from greenops.local.mlops import MlserverServer, write_repository
from greenops.models.forecast_features import HISTORY_HOURS, HOUR, feature_row


def main() -> None:
    here = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=here.parent / "shared" / "data")
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()
    traces = TraceSource.from_directory(args.data / "greendcc_ci_2023")
    holdout = datetime(2023, 11, 1, tzinfo=UTC)
    before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    wall, cpu = time.perf_counter(), time.process_time()
    report = training.train(traces, holdout)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"training: {len(report.zones)} zones + generic in {wall:.2f} s wall, {cpu:.2f} s CPU; "
        f"peak RSS {peak_mb:.0f} MB ({before_mb:.0f} MB before training: interpreter, MLflow, traces)"
    )
    print(
        f"  fit per zone: min {min(r.fit_seconds for r in report.zones):.3f} s, "
        f"max {max(r.fit_seconds for r in report.zones):.3f} s; generic {report.generic.fit_seconds:.3f} s; "
        f"{report.zones[0].model.n_parameters} parameters per model"
    )

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tracking.use_tracking(f"sqlite:///{root / 'mlflow.db'}", root / "artifacts")
        started = time.perf_counter()
        tracking.log_training(report, [])
        print(f"logging + registering {len(report.zones) + 1} models: {time.perf_counter() - started:.1f} s")
        exported = tracking.export(root / "models")
        size_kb = sum(p.stat().st_size for p in (root / "models" / "forecaster-de").rglob("*")) / 1024
        print(f"artifact forecaster-de: {size_kb:.0f} KB")
        started = time.perf_counter()
        with MlserverServer(repository=write_repository(exported, root / "repository")) as server:
            print(f"MLServer ready with {len(exported)} models in {time.perf_counter() - started:.1f} s")
            de = traces.full("DE")
            start = holdout.timestamp()
            row = feature_row(de.value_at(start - HOUR * np.arange(HISTORY_HOURS, 0, -1)), start)
            body = {"inputs": [{"name": "features", "shape": [1, 171], "datatype": "FP64", "data": row}]}
            with httpx.Client(base_url=server.url) as client:
                samples = timed_ms(
                    lambda _: client.post("/v2/models/forecaster-de/infer", json=body).raise_for_status(),
                    args.requests,
                    warmup=20,
                )
            print(f"OIP infer round trip (forecaster-de, keep-alive): {percentiles(samples)}")
            source = OipSource(server.url, history=traces, fallback=ProfileSource(), timeout=10)
            # a new hour each call: no cache hit
            samples = timed_ms(
                lambda i: source.series("GB", start + i * HOUR, start + (i + 48) * HOUR, start + i * HOUR),
                args.requests,
            )
            print(
                f"scheduler OIP source, uncached forecast (history + infer + 48 h slice): {percentiles(samples)}; "
                f"answers {source.answers}"
            )
    mlflow.set_tracking_uri("")


if __name__ == "__main__":
    main()
