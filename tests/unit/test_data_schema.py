"""The data files' shapes: a file from another schema version, or an AWS image entry without its
lookup, is refused by name rather than read as something else."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from greenops.catalog import data_dir
from greenops.catalog.schema import SCHEMA_VERSION, ImagesFile, PowerFile


def test_the_shipped_power_and_image_files_load():
    power = PowerFile.model_validate_json((data_dir() / "power.json").read_text())
    assert set(power.providers) == {"azure", "gcp", "aws"}
    images = ImagesFile.model_validate_json((data_dir() / "images.json").read_text())
    assert images.aws.amis and images.aws.lookup.owner


def test_a_file_of_another_schema_version_says_to_rederive():
    doc = json.loads((data_dir() / "power.json").read_text())
    doc["schemaVersion"] = SCHEMA_VERSION + 1
    with pytest.raises(ValidationError, match=f"but this code reads version {SCHEMA_VERSION}: run make data"):
        PowerFile.model_validate(doc)


def test_an_aws_image_entry_without_its_lookup_is_refused():
    doc = json.loads((data_dir() / "images.json").read_text())
    del doc["aws"]["lookup"]
    with pytest.raises(ValidationError, match=r"aws\.lookup\s+Field required"):
        ImagesFile.model_validate(doc)
