"""Every derived document is checked against its schema model before anything reaches data/: an
invalid one stops the derivation with a one-line error naming the file, the field and the reason,
and no file is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from derive import crds, power, regions
from derive.common import SCHEMA_VERSION, DataFile, DataFileError, write_catalog

from greenops.catalog.schema import CrdsFile

REPO = Path(__file__).resolve().parents[2]

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {{kind: Widget, plural: widgets, singular: widget}}
  scope: {scope}
  versions:
  - {{name: v1, served: true, storage: true}}
"""


def crd_dir(tmp_path: Path, scope: str) -> Path:
    folder = tmp_path / f"crds-{scope}"
    folder.mkdir()
    (folder / "example.com_widgets.yaml").write_text(CRD.format(scope=scope), encoding="utf-8")
    return folder


def test_a_corrupted_crd_stops_every_write(tmp_path):
    out = tmp_path / "data"
    # "Namespace" is the typo the render mode would turn into a cluster-scoped object.
    bad = crds.derive(crd_dir(tmp_path, "Namespace"))
    good = crds.derive(crd_dir(tmp_path, "Namespaced"))
    # The valid document comes first: it must not be written either, nothing is until all are valid.
    docs = {DataFile("crds-ok.json", CrdsFile): good, crds.FILE: bad}
    with pytest.raises(DataFileError) as err:
        write_catalog(out, docs)
    assert str(err.value) == (
        "data/crds.json: kinds[0].scope: String should match pattern '^(Namespaced|Cluster)$' (got 'Namespace')"
    )
    assert (err.value.file, err.value.field) == ("crds.json", "kinds[0].scope")
    assert not out.exists()


def test_a_valid_document_is_written_exactly_as_rendered(tmp_path):
    doc = crds.derive(crd_dir(tmp_path, "Cluster"))
    (path,) = write_catalog(tmp_path / "data", {crds.FILE: doc})
    assert path == tmp_path / "data" / "crds.json"
    assert path.read_bytes() == crds.FILE.render(doc).encode("utf-8")
    assert [p.name for p in path.parent.iterdir()] == ["crds.json"]  # no temporary file left behind


def test_a_nan_from_a_corrupted_input_is_named(tmp_path):
    # An empty "Min Watts" column makes pandas' mean NaN: json.dumps alone would only say "out of range".
    for provider in ("azure", "gcp", "aws"):
        watts = "" if provider == "gcp" else "1.0"
        (tmp_path / f"ccf_coefficients_{provider}_use.csv").write_text(
            f",Architecture,Min Watts,Max Watts,GB/Chip\n0,Haswell,{watts},4.0,32.0\n", encoding="utf-8"
        )
    doc = power.derive(tmp_path)
    with pytest.raises(DataFileError, match=r"^data/power\.json: providers\.gcp\.minWattsPerVcpu: NaN or infinite"):
        write_catalog(tmp_path / "data", {power.FILE: doc})
    assert not (tmp_path / "data").exists()


def region(**overrides) -> dict:
    r = {
        "provider": "azure",
        "name": "swedencentral",
        "displayName": "Sweden Central",
        "country": "SE",
        "eu": True,
        "zone": "SE-SE3",
        "zoneSource": "electricitymaps",
        "lat": 60.67,
        "lon": 17.14,
        "availabilityZones": [],
    }
    return {**r, **overrides}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"schemaVersion": SCHEMA_VERSION, "regions": [region(), region(country="Sweden")]},
            "data/regions.json: regions[1].country: String should have at most 2 characters (got 'Sweden')",
        ),
        (
            # strict: a number read from a CSV and never converted is an error, not coerced
            {"schemaVersion": SCHEMA_VERSION, "regions": [region(lat="60.67")]},
            "data/regions.json: regions[0].lat: Input should be a valid number (got '60.67')",
        ),
        (
            {"schemaVersion": SCHEMA_VERSION, "regions": [region(continent="Europe")]},
            "data/regions.json: regions[0].continent: Extra inputs are not permitted (got 'Europe')",
        ),
        (
            {"schemaVersion": SCHEMA_VERSION + 1, "regions": []},
            f"data/regions.json: schemaVersion: must be {SCHEMA_VERSION} (got {SCHEMA_VERSION + 1})",
        ),
    ],
    ids=["constraint", "strict-type", "extra-field", "schema-version"],
)
def test_the_error_names_file_field_and_reason(doc, message):
    with pytest.raises(DataFileError) as err:
        regions.FILE.render(doc)
    assert str(err.value) == message


@pytest.mark.shared_data
def test_the_entry_point_fails_on_one_line_and_leaves_data_as_it_was(shared_data, tmp_path):
    out = tmp_path / "data"
    out.mkdir()
    before = (REPO / "data" / "crds.json").read_bytes()
    (out / "crds.json").write_bytes(before)
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "derive_data.py"),
            *("--source", str(shared_data), "--crds", str(crd_dir(tmp_path, "Namespace")), "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "derive_data: invalid data/crds.json: kinds[0].scope: String should match pattern "
        "'^(Namespaced|Cluster)$' (got 'Namespace'); nothing written"
    ]
    assert result.stdout == ""
    assert [p.name for p in out.rglob("*")] == ["crds.json"]
    assert (out / "crds.json").read_bytes() == before
