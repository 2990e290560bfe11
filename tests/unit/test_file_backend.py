"""A file backend writes no sidecar file in place: every run of greenops adds metadata=skip."""

from __future__ import annotations

import os
import subprocess

import pytest

from greenops.common.file_backend import backend_folder, without_sidecars, writes_sidecars
from greenops.common.toolpaths import REPO, pulumi_env


@pytest.mark.parametrize(
    "url, expected",
    [
        ("file:///srv/state", "file:///srv/state?metadata=skip"),
        ("file:///srv/state?no_tmp_dir=false", "file:///srv/state?no_tmp_dir=false&metadata=skip"),
        ("file://~/state", "file://~/state?metadata=skip"),
        ("file:///srv/state?metadata=skip", "file:///srv/state?metadata=skip"),
        # a metadata setting of the caller's own is theirs to keep
        ("file:///srv/state?metadata=", "file:///srv/state?metadata="),
        ("s3://bucket?region=eu-north-1", "s3://bucket?region=eu-north-1"),
        ("https://api.pulumi.com", "https://api.pulumi.com"),
        (None, None),
    ],
)
def test_only_a_file_backend_that_writes_sidecars_is_changed(url, expected):
    assert without_sidecars(url) == expected
    assert not writes_sidecars(expected)


def test_the_folder_of_a_file_backend_leaves_its_query_out(tmp_path):
    assert backend_folder(f"file://{tmp_path}?metadata=skip&no_tmp_dir=true") == tmp_path
    assert backend_folder("file://~/state") == backend_folder("file://~/state?metadata=skip") != None  # noqa: E711
    assert backend_folder("s3://bucket") is None and backend_folder(None) is None


def test_every_run_of_greenops_writes_no_sidecars(tmp_path):
    # a user's own file backend, which pulumi_env takes from the caller
    env = pulumi_env({"PULUMI_BACKEND_URL": f"file://{tmp_path}"})
    assert env["PULUMI_BACKEND_URL"] == f"file://{tmp_path}?metadata=skip"
    assert pulumi_env({"PULUMI_BACKEND_URL": "s3://bucket"})["PULUMI_BACKEND_URL"] == "s3://bucket"


def test_the_shell_default_writes_no_sidecars_and_makes_its_folder(tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PULUMI_")}
    script = f'export PULUMI_HOME={tmp_path}/home; source "{REPO}/tools/env.sh"; printf %s "$PULUMI_BACKEND_URL"'
    url = subprocess.run(["bash", "-c", script], env=clean, capture_output=True, text=True, check=True).stdout
    assert url == f"file://{REPO}/.pulumi/state?metadata=skip" and not writes_sidecars(url)
    assert (REPO / ".pulumi" / "state").is_dir()
