"""Build the OPA policy bundle: the Rego in ``greenops/policies/rego`` plus data derived from ``data/``.

    python -m greenops.policies.bundle [--out dist/policy-bundle.tar.gz] [--config FILE] [--revision REV]

The bundle's data is computed from the same catalog the Python code uses, so a fact (a region's
zone, a latency, a size) exists once, in ``data/``. ``opa build`` packs and checks it.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from greenops.catalog import Catalog, haversine_km, load_catalog, size_order
from greenops.errors import GreenOpsError
from greenops.local.tools import REPO, tool_path

from .config import PolicyConfig, load_policy_config

REGO_DIR = Path(__file__).resolve().parent / "rego"
ROOTS = ["greenops", "system"]


def catalog_document(catalog: Catalog) -> dict:
    """The catalog as OPA data under ``data.greenops.catalog``."""
    regions = {}
    region_provider = {}
    for p in catalog.providers:
        regions[p] = {}
        for r in catalog.regions(p):
            gaps = catalog.placement_gaps(p, r.name)
            regions[p][r.name] = {"zone": r.zone, "eu": r.eu, "country": r.country,
                                  "placeable": not gaps, "gaps": gaps}
            region_provider[r.name] = p
    # Rego has no trigonometry: the nearest region of every provider, by great circle, is
    # precomputed for every origin.
    nearest = {
        r.name: {p: min(catalog.regions(p), key=lambda c: (haversine_km(r.lat, r.lon, c.lat, c.lon), c.name)).name
                 for p in catalog.providers}
        for r in catalog.regions()
    }
    # Regions whose size preference order is the same share one ladder (every Azure and AWS
    # region does), so Rego picks a size once per ladder rather than once per region.
    ladders, ladder_of, prices = {}, {}, {}
    for p in catalog.providers:
        ladders[p], ladder_of[p], prices[p] = {}, {}, {}
        ids: dict[str, str] = {}
        for r in catalog.regions(p):
            ranked = size_order(catalog, p, r.name)
            ladder = size_ladder(ranked)
            key = json.dumps(ladder)
            if key not in ids:
                ids[key] = f"L{len(ids)}"
                ladders[p][ids[key]] = ladder
            ladder_of[p][r.name] = ids[key]
            prices[p][r.name] = {s.name: s.price_in(r.name) for s in ranked if s.price_in(r.name) is not None}
    return {
        "providers": list(catalog.providers),
        "regions": regions,
        "region_provider": region_provider,
        "nearest": nearest,
        "latency": {p: catalog.latency_matrix(p).matrix for p in catalog.providers},
        "size_ladders": ladders,
        "ladder_of": ladder_of,
        "prices": prices,
    }


def size_ladder(ranked: list) -> list[list]:
    """``[vcpu, memory, name]`` in preference order, without the sizes that can never win.

    A size is never the first fit if an earlier one has at least as many vCPUs and as much memory:
    whenever it fits, that earlier one fits too. Dropping those keeps Rego's scan short and its pick equal
    to Python's ``select_size``.
    """
    kept: list[list] = []
    for s in ranked:
        if not any(k[0] >= s.vcpu and k[1] >= s.memoryGb for k in kept):
            kept.append([s.vcpu, s.memoryGb, s.name])
    return kept


def bundle_data(catalog: Catalog, config: PolicyConfig) -> dict:
    return {"greenops": {"catalog": catalog_document(catalog), "config": config.document()}}


def stage(directory: Path, catalog: Catalog | None = None, config: PolicyConfig | None = None,
          include_tests: bool = False) -> Path:
    """Write the bundle's files (Rego, data.json, .manifest) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for rego in sorted(REGO_DIR.glob("*.rego")):
        if include_tests or not rego.name.endswith("_test.rego"):
            shutil.copy2(rego, directory / rego.name)
    payload = bundle_data(catalog or load_catalog(), config or load_policy_config())
    (directory / "data.json").write_text(json.dumps(payload, sort_keys=True, separators=(",", ":")))
    return directory


def build(out: Path, revision: str, catalog: Catalog | None = None, config: PolicyConfig | None = None) -> Path:
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
        sha = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        sha = "unversioned"
    from greenops import __version__
    return f"{__version__}+{sha}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m greenops.policies.bundle", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist" / "policy-bundle.tar.gz")
    parser.add_argument("--config", type=Path, help="policy settings (YAML/JSON); default: greenops/policies/defaults.yaml")
    parser.add_argument("--revision", default=None)
    args = parser.parse_args(argv)
    try:
        out = build(args.out, args.revision or default_revision(), config=load_policy_config(args.config))
    except GreenOpsError as exc:
        print(f"bundle: {exc}", file=sys.stderr)
        return 2
    print(f"bundle: wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
