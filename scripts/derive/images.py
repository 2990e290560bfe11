"""``data/images.json``: the Ubuntu 22.04 LTS image each cloud boots by default (thesis §3.4.1),
with the public AWS AMI of each region where one is known and the lookup for the others; and the
other named images a workload may choose (``image``), each as its publisher names it on every cloud."""

from __future__ import annotations

from pathlib import Path

from greenops.catalog.schema import ImagesFile

from .common import SCHEMA_VERSION, DataFile, read_csv, region_names

FILE = DataFile("images.json", ImagesFile)

AZURE_IMAGE = {  # thesis §3.4.1, listing 3.6
    "publisher": "Canonical",
    "offer": "0001-com-ubuntu-server-jammy",
    "sku": "22_04-lts",
    "version": "latest",
}
GCP_IMAGE = {"project": "ubuntu-os-cloud", "family": "ubuntu-2204-lts"}
AWS_AMI_LOOKUP = {
    "owner": "099720109477",  # Canonical
    "nameFilter": "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*",
    "ssmParameter": "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id",
}
DEFAULT_IMAGE = "ubuntu-22.04"
# The other choices, by the names their publishers give them: Azure Marketplace URNs, GCP image
# families, and the public SSM parameters AWS resolves to the region's current AMI at launch
# (EC2's RunInstances takes "resolve:ssm:<parameter>" as its ImageId).
CHOICES = {
    "ubuntu-24.04": {
        "os": "Ubuntu 24.04 LTS",
        "azure": {"publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "latest"},
        "gcp": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
        "awsSsmParameter": "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
    },
    "debian-12": {
        "os": "Debian 12 (bookworm)",
        "azure": {"publisher": "Debian", "offer": "debian-12", "sku": "12", "version": "latest"},
        "gcp": "projects/debian-cloud/global/images/family/debian-12",
        "awsSsmParameter": "/aws/service/debian/release/12/latest/amd64",
    },
}
# SkyPilot's list also holds arm64 images; this tag is its x86_64 one (the sizes are all x86_64).
AWS_AMI_TAG = "skypilot:custom-cpu-ubuntu"


def derive(src: Path, regions: list[dict]) -> dict:
    known = region_names(regions, "aws")
    amis = {
        row["Region"]: row["ImageId"]
        for row in read_csv(src / "aws_ubuntu2204_amis_skypilot.csv")
        if row["Tag"] == AWS_AMI_TAG and row["Region"] in known
    }
    return {
        "schemaVersion": SCHEMA_VERSION,
        "os": "Ubuntu 22.04 LTS",
        "default": DEFAULT_IMAGE,
        "choices": CHOICES,
        "azure": {"imageReference": AZURE_IMAGE},
        "gcp": {
            "sourceImage": f"projects/{GCP_IMAGE['project']}/global/images/family/{GCP_IMAGE['family']}",
            **GCP_IMAGE,
        },
        "aws": {
            "arch": "x86_64",
            "amis": dict(sorted(amis.items())),
            "amiSource": "SkyPilot public Ubuntu 22.04 x86_64 AMIs (built 2024-11-04); regions without one need the "
            "lookup below",
            "lookup": AWS_AMI_LOOKUP,
        },
    }
