"""Build the vm-template Helm chart with its catalog generated from data/.

    python -m greenops.charts [--out dist]     -> dist/vm-template-<version>.tgz

The chart's templates read images, GCP compute zones, AWS AMIs and availability zones, and the
renderers' network constants from ``files/catalog.json``, written here from the same catalog and
renderer modules as the Python path, so the two paths cannot drift apart.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from greenops.catalog import Catalog, load_catalog
from greenops.common.toolpaths import REPO, tool_path

CHART_SOURCE = REPO / "components" / "charts" / "vm-template"
# values.yaml's provisioningLeadSeconds (a test holds them equal): how long before its start a
# VmTemplate that sets none renders, so the cluster path's controller opens its gate then too.
PROVISIONING_LEAD_SECONDS = 300


def chart_catalog(catalog: Catalog) -> dict[str, Any]:
    from greenops.renderers.providers import aws, azure, gcp

    regions: dict[str, dict[str, Any]] = {"azure": {}, "gcp": {}, "aws": {}}
    for r in catalog.regions("gcp"):
        if r.availabilityZones:
            regions["gcp"][r.name] = {"computeZone": r.availabilityZones[0]}
    for r in catalog.regions("aws"):
        try:
            ami = catalog.image("aws", r.name)
        except Exception:  # a region without a known AMI: the template fails with a clear message
            ami = None
        regions["aws"][r.name] = {
            "ami": ami,
            "availabilityZone": r.availabilityZones[0] if r.availabilityZones else None,
        }
    for r in catalog.regions("azure"):
        regions["azure"][r.name] = {"location": r.name}
    return {
        "regions": regions,
        "defaultImage": catalog.default_image,
        "images": {name: _chart_image(catalog, name) for name in catalog.image_names},
        "constants": {"azure": azure.CHART_CONSTANTS, "gcp": gcp.CHART_CONSTANTS, "aws": aws.CHART_CONSTANTS},
    }


def _chart_image(catalog: Catalog, name: str) -> dict[str, Any]:
    """Image ``name`` per provider as the chart's templates take it: Azure's imageReference, GCP's
    sourceImage, and on AWS an imageID for a named choice (the default's AMI is per region)."""
    gcp_region, aws_region = catalog.regions("gcp")[0].name, catalog.regions("aws")[0].name
    publisher, offer, sku, version = catalog.image("azure", catalog.regions("azure")[0].name, name).split(":")
    aws_image = catalog.image("aws", aws_region, name) if name != catalog.default_image else None
    return {
        "azure": {"publisher": publisher, "offer": offer, "sku": sku, "version": version},
        "gcp": {"sourceImage": catalog.image("gcp", gcp_region, name)},
        "aws": {"imageID": aws_image} if aws_image else {},
    }


def stage_chart(directory: Path, catalog: Catalog | None = None) -> Path:
    """A copy of the chart with its generated catalog, ready for ``helm template`` or ``package``."""
    target = directory / "vm-template"
    shutil.copytree(CHART_SOURCE, target, dirs_exist_ok=True)
    (target / "files").mkdir(exist_ok=True)
    (target / "files" / "catalog.json").write_text(json.dumps(chart_catalog(catalog or load_catalog()), sort_keys=True))
    return target


def package(out: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="greenops-chart-") as tmp:
        chart = stage_chart(Path(tmp))
        out.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [tool_path("helm"), "package", str(chart), "--destination", str(out)], capture_output=True, text=True
        )
        if result.returncode != 0:
            raise RuntimeError(f"helm package failed: {result.stderr}")
        return Path(result.stdout.strip().rsplit(" ", 1)[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m greenops.charts", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist")
    args = parser.parse_args(argv)
    path = package(args.out)
    print(f"chart: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
