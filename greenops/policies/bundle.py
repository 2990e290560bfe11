"""Build the OPA policy bundle: the Rego in ``greenops/policies/rego`` plus data derived from ``data/``.

    python -m greenops.policies.bundle [--out dist/policy-bundle.tar.gz] [--config FILE] [--revision REV]

The bundle's data is computed from the same catalog the Python code uses, so a fact (a region's
zone, a latency, a size) exists once, in ``data/``. ``opa build`` packs and checks it.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from greenops.catalog import Catalog, VmSize, fits, haversine_km, load_catalog, size_order
from greenops.common.errors import GreenOpsError
from greenops.common.toolpaths import REPO, tool_path
from greenops.models import contract, strings

from .settings import PolicySettings, load_policy_settings

REGO_DIR = Path(__file__).resolve().parent / "rego"
ROOTS = ["greenops", "system"]


def catalog_document(catalog: Catalog) -> dict[str, Any]:
    """The catalog as OPA data under ``data.greenops.catalog``."""
    regions: dict[str, dict[str, dict[str, Any]]] = {}
    region_provider = {}
    for p in catalog.providers:
        regions[p] = {}
        for r in catalog.regions(p):
            gaps = catalog.placement_gaps(p, r.name)
            regions[p][r.name] = {"zone": r.zone, "eu": r.eu, "country": r.country, "placeable": not gaps, "gaps": gaps}
            region_provider[r.name] = p
    # The region each provider's latency is measured from, for every origin: the origin itself on its
    # own provider (even where another of its regions is in the same place), else the provider's
    # region nearest to it (Rego has no trigonometry: by great circle, precomputed here).
    latency_origin = {
        r.name: {
            p: r.name
            if p == r.provider
            else min(catalog.regions(p), key=lambda c: (haversine_km(r.lat, r.lon, c.lat, c.lon), c.name)).name
            for p in catalog.providers
        }
        for r in catalog.regions()
    }
    # Size choice as a table lookup. A size fits (cpu, memory) exactly when it fits the smallest
    # catalog vCPU and memory levels at or above them, so the first fit of every level pair is
    # precomputed. Regions with the same preference order share one table (every Azure and AWS
    # region does).
    cpu_levels = sorted({s.vcpu for p in catalog.providers for s in catalog.sizes(p)})
    mem_levels = sorted({s.memoryGb for p in catalog.providers for s in catalog.sizes(p)})
    tables: dict[str, dict[str, list[list[str | None]]]] = {}
    ladder_of: dict[str, dict[str, str]] = {}
    prices: dict[str, dict[str, dict[str, float | None]]] = {}
    for p in catalog.providers:
        tables[p], ladder_of[p], prices[p] = {}, {}, {}
        ids: dict[str, str] = {}
        for r in catalog.regions(p):
            ranked = size_order(catalog, p, r.name)
            key = json.dumps([s.name for s in ranked])
            if key not in ids:
                ids[key] = f"L{len(ids)}"
                tables[p][ids[key]] = [[_first_fit(ranked, c, m) for m in mem_levels] for c in cpu_levels]
            ladder_of[p][r.name] = ids[key]
            prices[p][r.name] = {s.name: s.price_in(r.name) for s in ranked if s.price_in(r.name) is not None}
    # Region sets are objects keyed by region, so Rego narrows them by lookups and counts them
    # without building a set; each placeable region's value is what ranking reads of it (its zone
    # and its size ladder), so iterating a set yields them. `resident` is the third step of every
    # chain (every region, the placeable ones, those the workload's dataResidency allows) for each
    # dataResidency, looked up instead of intersecting two sets on every decision.
    placeable = {
        p: {r: {"zone": v["zone"], "ladder": ladder_of[p][r]} for r, v in regions[p].items() if v["placeable"]}
        for p in catalog.providers
    }
    resident = {
        "eu": {p: {r: f for r, f in placeable[p].items() if regions[p][r]["eu"]} for p in catalog.providers},
        "none": placeable,
    }
    # Each size ladder's regions, so that the regions of a ladder without a fitting size are dropped
    # at once.
    ladder_regions: dict[str, dict[str, dict[str, bool]]] = {p: {} for p in catalog.providers}
    for p in catalog.providers:
        for region, lid in ladder_of[p].items():
            ladder_regions[p].setdefault(lid, {})[region] = True
    return {
        "providers": list(catalog.providers),
        "provider_rank": {p: i for i, p in enumerate(catalog.providers)},
        "regions": regions,
        "placeable": placeable,
        "resident": resident,
        "region_provider": region_provider,
        "latency_origin": latency_origin,
        "latency": {p: _latency_from(catalog, p) for p in catalog.providers},
        "cpu_levels": cpu_levels,
        # Whole numbers as JSON integers (2, not 2.0): OPA compares two integers directly, and parses
        # any other pair of numbers into big floats on every comparison.
        "memory_levels": [int(m) if float(m).is_integer() else m for m in mem_levels],
        # The level of a whole request, looked up instead of searched for on every decision.
        "cpu_level_of": _level_of(cpu_levels),
        "memory_level_of": _level_of(mem_levels),
        "size_tables": tables,
        "ladder_regions": ladder_regions,
        "prices": prices,
    }


def _latency_from(catalog: Catalog, provider: str) -> dict[str, dict[str, float]]:
    """The provider's latency matrix as placement reads it: a row for every region, each region 0 ms
    from itself (a workload's origin is its own region, whatever the matrix measured within it), so
    the policy reads a region's latency from the origin's row alone."""
    matrix = catalog.latency_matrix(provider).matrix
    return {r.name: {**matrix.get(r.name, {}), r.name: 0} for r in catalog.regions(provider)}


def _level_of(levels: list[Any]) -> list[int]:
    """For every whole number w from 0 to the largest level, the index of the first level at or
    above w (a request's row or column in the size tables)."""
    return [next(i for i, level in enumerate(levels) if level >= w) for w in range(int(max(levels)) + 1)]


def _first_fit(ranked: list[VmSize], cpu: int, memory: float) -> str | None:
    return next((s.name for s in ranked if fits(s, cpu, memory)), None)


def bundle_data(catalog: Catalog, config: PolicySettings) -> dict[str, Any]:
    return {
        "greenops": {
            "catalog": catalog_document(catalog),
            "config": config.document(),
            "string_rules": strings.bundle_document(),
            "workload_contract": contract.bundle_document(list(catalog.providers), catalog.image_names),
        }
    }


def stage(
    directory: Path, catalog: Catalog | None = None, config: PolicySettings | None = None, include_tests: bool = False
) -> Path:
    """Write the bundle's files (Rego, data.json, .manifest) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for rego in sorted(REGO_DIR.glob("*.rego")):
        if include_tests or not rego.name.endswith("_test.rego"):
            shutil.copy2(rego, directory / rego.name)
    payload = bundle_data(catalog or load_catalog(), config or load_policy_settings())
    (directory / "data.json").write_text(json.dumps(payload, sort_keys=True, separators=(",", ":")))
    return directory


def pack(
    revision: str | None = None, catalog: Catalog | None = None, config: PolicySettings | None = None
) -> tuple[bytes, str]:
    """The same bundle as ``build``, packed in Python, and its revision: what the platform ships
    with its release, so OPA boots with the policy and no tool is needed at ``pulumi up`` time.
    Deterministic (sorted names, no timestamps), and by default the revision is a digest of the
    content, so an unchanged policy is an unchanged ConfigMap and no rollout."""
    with tempfile.TemporaryDirectory(prefix="greenops-bundle-") as tmp:
        src = stage(Path(tmp) / "bundle", catalog, config)
        if revision is None:
            digest = hashlib.sha256()
            for path in sorted(src.iterdir()):
                digest.update(path.name.encode() + b"\0" + path.read_bytes())
            from greenops import __version__

            revision = f"{__version__}+{digest.hexdigest()[:12]}"
        (src / ".manifest").write_text(json.dumps({"revision": revision, "roots": ROOTS}))
        raw = io.BytesIO()
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
            for path in sorted(src.iterdir()):
                info = tarfile.TarInfo(f"/{path.name}")
                body = path.read_bytes()
                info.size, info.mode = len(body), 0o644
                tar.addfile(info, io.BytesIO(body))
        return raw.getvalue(), revision


def build(out: Path, revision: str, catalog: Catalog | None = None, config: PolicySettings | None = None) -> Path:
    """``opa build`` a versioned bundle at ``out`` (a .tar.gz)."""
    with tempfile.TemporaryDirectory(prefix="greenops-bundle-") as tmp:
        src = stage(Path(tmp) / "bundle", catalog, config)
        out.parent.mkdir(parents=True, exist_ok=True)
        # Built from inside the folder so file names in the bundle are relative ("/placement.rego").
        cmd = [tool_path("opa"), "build", "--bundle", ".", "--revision", revision, "--output", str(out.resolve())]
        manifest = {"revision": revision, "roots": ROOTS}
        (src / ".manifest").write_text(json.dumps(manifest))
        result = subprocess.run(cmd, capture_output=True, text=True, cwd=src)
        if result.returncode != 0:
            raise GreenOpsError(f"opa build failed for the policy bundle:\n{result.stderr.strip()}")
    return out


def default_revision() -> str:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        sha = "unversioned"
    from greenops import __version__

    return f"{__version__}+{sha}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m greenops.policies.bundle", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist" / "policy-bundle.tar.gz")
    parser.add_argument(
        "--config", type=Path, help="policy settings (YAML/JSON); default: greenops/policies/defaults.yaml"
    )
    parser.add_argument("--revision", default=None)
    args = parser.parse_args(argv)
    try:
        out = build(args.out, args.revision or default_revision(), config=load_policy_settings(args.config))
    except GreenOpsError as exc:
        print(f"bundle: {exc}", file=sys.stderr)
        return 2
    print(f"bundle: wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
