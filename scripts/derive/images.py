"""``data/images.json``: the Ubuntu 22.04 LTS image each cloud boots (thesis §3.4.1), with the
public AWS AMI of each region where one is known and the lookup for the others."""

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
