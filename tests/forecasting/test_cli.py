"""greenops-forecast on bad input: one line naming the problem, an exit code, no traceback, nothing registered."""
from __future__ import annotations

import pytest

from greenops.forecasting import cli
from greenops.local.controlplane import free_port


def test_missing_or_foreign_trace_directory(tmp_path, capsys):
    assert cli.main(["train", "--traces", str(tmp_path / "nope"), "--no-tracking"]) == 2
    assert "no trace directory" in capsys.readouterr().err
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    assert cli.main(["train", "--traces", str(tmp_path), "--no-tracking"]) == 2
    assert "x.csv: not an Electricity Maps export" in capsys.readouterr().err


@pytest.mark.shared_data
def test_unknown_zone_and_too_short_holdout(spring_slice, capsys):
    assert cli.main(["train", "--traces", str(spring_slice), "--zones", "DE,XX", "--no-tracking"]) == 2
    assert "no trace for zone(s) XX" in capsys.readouterr().err
    assert cli.main(["train", "--traces", str(spring_slice), "--zones", "DE", "--holdout-from", "2023-05-01",
                     "--no-tracking"]) == 2
    assert "0 held-out forecasts" in capsys.readouterr().err


@pytest.mark.shared_data
def test_unreachable_tracking_server_is_said_at_once(spring_slice, tmp_path, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    code = cli.main(["--tracking-uri", url, "train", "--traces", str(spring_slice), "--zones", "GB",
                     "--holdout-from", "2023-03-20", "--out", str(tmp_path)])
    assert code == 3
    err = capsys.readouterr().err
    assert f"nothing registered: MLflow tracking server at {url} is unreachable" in err
    assert "Traceback" not in err
    # the evaluation itself is kept
    assert (tmp_path / "report.md").is_file()


def test_export_from_an_empty_registry(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert cli.main(["--tracking-uri", uri, "export", "--dest", str(tmp_path / "models")]) == 2
    assert "no registered forecaster-* model" in capsys.readouterr().err
