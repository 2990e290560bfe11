import json

import pytest

from greenops.catalog import Catalog, load_catalog, select_size
from greenops.common.errors import CatalogError, NoFittingSize


def test_three_providers_with_regions(catalog):
    assert catalog.providers == ("azure", "gcp", "aws")
    for p in catalog.providers:
        assert len(catalog.regions(p)) >= 30


def test_region_names_are_unique_across_providers(catalog):
    names = [r.name for r in catalog.regions()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    "provider,region,country,eu,zone",
    [
        ("azure", "italynorth", "IT", True, "IT-NO"),
        ("azure", "swedencentral", "SE", True, "SE-SE3"),
        ("azure", "uksouth", "GB", False, "GB"),
        ("azure", "switzerlandnorth", "CH", False, "CH"),
        ("gcp", "europe-west9", "FR", True, "FR"),
        ("gcp", "us-central1", "US", False, "US-CENT-SWPP"),
        ("aws", "eu-central-1", "DE", True, "DE"),
        ("aws", "eu-west-2", "GB", False, "GB"),
        ("aws", "ca-central-1", "CA", False, "CA-QC"),
    ],
)
def test_region_facts(catalog, provider, region, country, eu, zone):
    r = catalog.region(provider, region)
    assert (r.country, r.eu, r.zone) == (country, eu, zone)


def test_regions_have_plausible_coordinates(catalog):
    # Southern-hemisphere regions keep their sign (a known defect of one source file).
    assert catalog.region("gcp", "africa-south1").lat < 0
    assert catalog.region("aws", "ap-southeast-2").lat < 0
    assert catalog.region("azure", "northeurope").lat > 50


def test_unknown_region_is_a_clear_error(catalog):
    with pytest.raises(CatalogError, match="unknown region 'atlantis' for provider 'gcp'"):
        catalog.region("gcp", "atlantis")


def test_zone_mapping_round_trips(catalog):
    regions = catalog.regions_in_zone("FR")
    assert {(r.provider, r.name) for r in regions} >= {
        ("azure", "francecentral"),
        ("gcp", "europe-west9"),
        ("aws", "eu-west-3"),
    }


def test_latency_matrices(catalog):
    # thesis §3.6.7: italynorth and francecentral are within 100 ms of each other
    assert catalog.latency_ms("azure", "italynorth", "francecentral") < 100
    assert catalog.latency_ms("azure", "italynorth", "australiaeast") > 200
    assert catalog.latency_ms("aws", "eu-west-1", "eu-west-2") < 30
    assert catalog.latency_ms("gcp", "europe-west1", "europe-west4") < 20
    assert catalog.latency_ms("gcp", "europe-west1", "nowhere") is None


def test_nearest_region_across_providers(catalog):
    milan = catalog.region("azure", "italynorth")
    assert catalog.nearest_region("gcp", milan.lat, milan.lon).name == "europe-west8"
    assert catalog.nearest_region("aws", milan.lat, milan.lon).name == "eu-south-1"


def test_images(catalog):
    assert catalog.image("azure", "westeurope") == "Canonical:0001-com-ubuntu-server-jammy:22_04-lts:latest"
    assert catalog.image("gcp", "europe-west9").endswith("ubuntu-os-cloud/global/images/family/ubuntu-2204-lts")
    assert catalog.image("aws", "eu-west-3").startswith("ami-")
    # Different regions get different AMIs: AMIs are regional.
    assert catalog.image("aws", "eu-west-3") != catalog.image("aws", "us-east-1")


def test_missing_ami_explains_the_lookup(catalog):
    with pytest.raises(CatalogError, match="099720109477"):
        catalog.image("aws", "ca-west-1")


def test_carbon_profiles_are_summaries(catalog):
    fr = catalog.profile("FR")
    assert fr.kind == "month-hour" and len(fr.monthHour) == 12 and all(len(m) == 24 for m in fr.monthHour)
    assert 0 < fr.intensity_at(1, 12) < 200  # a low-carbon grid
    flat = catalog.profile("FI")
    assert flat.kind == "annual-mean" and flat.intensity_at(7, 3) == flat.mean
    assert catalog.profile("ATLANTIS") is None


def test_placement_gaps(catalog):
    assert catalog.placement_gaps("gcp", "europe-west9") == []
    assert "no known AMI" in catalog.placement_gaps("aws", "ca-west-1")
    assert any("no carbon data" in g for g in catalog.placement_gaps("azure", "northeurope"))


# -- size selection ----------------------------------------------------------------------------
def test_thesis_sizing_example(catalog):
    # thesis §3.3: (2 vCPU, 16 GiB) on Azure -> Standard E2as v4
    assert select_size(catalog, "azure", "westeurope", 2, 16).name == "Standard_E2as_v4"


@pytest.mark.parametrize(
    "provider,region",
    [
        ("azure", "francecentral"),
        ("gcp", "europe-west9"),
        ("gcp", "us-central1"),
        ("aws", "eu-west-3"),
    ],
)
@pytest.mark.parametrize("cpu,mem", [(1, 1), (2, 16), (4, 8), (8, 64), (16, 32)])
def test_selected_size_fits_and_is_cheapest_or_smallest(catalog, provider, region, cpu, mem):
    chosen = select_size(catalog, provider, region, cpu, mem)
    assert chosen.vcpu >= cpu and chosen.memoryGb >= mem and chosen.available_in(region)
    fitting = [s for s in catalog.sizes(provider) if s.vcpu >= cpu and s.memoryGb >= mem and s.available_in(region)]
    priced = [s for s in fitting if s.price_in(region) is not None]
    if priced:
        assert chosen.price_in(region) == min(s.price_in(region) for s in priced)
    else:
        assert (chosen.vcpu, chosen.memoryGb) == min((s.vcpu, s.memoryGb) for s in fitting)


def test_gcp_sizes_respect_regional_availability(catalog):
    # n2d is not offered everywhere: a region without a price has no such size.
    region = "europe-west9"
    for s in catalog.sizes("gcp"):
        assert s.available_in(region) == (region in s.hourlyUsd)


def test_nothing_fits_is_a_clear_error(catalog):
    with pytest.raises(NoFittingSize, match="no azure VM size in westeurope offers 512 vCPU and 4096 GB"):
        select_size(catalog, "azure", "westeurope", 512, 4096)


def test_catalog_rejects_wrong_schema_version(tmp_path, catalog):
    import shutil

    shutil.copytree(catalog.root, tmp_path / "data")
    path = tmp_path / "data" / "images.json"
    payload = json.loads(path.read_text())
    payload["schemaVersion"] = 99
    path.write_text(json.dumps(payload))
    with pytest.raises(CatalogError, match="schemaVersion 99"):
        Catalog(tmp_path / "data")


def test_catalog_is_loaded_once(catalog):
    assert load_catalog() is load_catalog()
