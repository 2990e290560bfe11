"""greenops-forecast on bad input: one line naming the problem, an exit code, no traceback, nothing registered."""

from __future__ import annotations

import pytest

from greenops.cli import forecast as cli
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
    assert (
        cli.main(
            ["train", "--traces", str(spring_slice), "--zones", "DE", "--holdout-from", "2023-05-01", "--no-tracking"]
        )
        == 2
    )
    assert "0 held-out forecasts" in capsys.readouterr().err


@pytest.mark.shared_data
def test_unreachable_tracking_server_is_said_at_once(spring_slice, tmp_path, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    code = cli.main(
        [
            "--tracking-uri",
            url,
            "train",
            "--traces",
            str(spring_slice),
            "--zones",
            "GB",
            "--holdout-from",
            "2023-03-20",
            "--out",
            str(tmp_path),
        ]
    )
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


def test_publish_reads_the_stacks_prefix_and_models(capsys):
    import yaml

    from greenops.models.forecast_names import DEFAULT_STORAGE_PREFIX, served_models

    prod = yaml.safe_load((cli.REPO / "stacks" / "Pulumi.prod.yaml").read_text())["config"]["greenops:platform"]
    # the prod stack sets no storagePrefix: its InferenceServices read the platform default
    assert cli.stack_serving("prod") == (DEFAULT_STORAGE_PREFIX, served_models(prod["kserve"]["zones"]))
    assert cli.main(["publish", "--stack", "staging"]) == 2
    assert "stack staging serves no forecasters" in capsys.readouterr().err
    assert cli.main(["publish", "--stack", "nope"]) == 2
    assert "no stack file" in capsys.readouterr().err


def test_publish_without_credentials_says_so(tmp_path, monkeypatch):
    from greenops.forecasting import publish

    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    model = tmp_path / "forecaster-de"
    model.mkdir()
    (model / "MLmodel").write_text("flavors: {}\n")
    client = publish.s3_client(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(
        publish.PublishError, match="cannot publish to s3://mlflow/forecasters: Unable to locate credentials"
    ):
        publish.publish({"forecaster-de": model}, "s3://mlflow/forecasters", client)


def test_names_and_storage_layout():
    from greenops.models.forecast_names import GENERIC_MODEL, model_name, served_models, split_s3_uri, storage_uri

    assert served_models(["DE", "US-CAL-CISO"]) == ["forecaster-de", "forecaster-us-cal-ciso", GENERIC_MODEL]
    assert model_name("generic") == GENERIC_MODEL == "forecaster-generic"
    assert storage_uri("s3://mlflow/forecasters/", "forecaster-de") == "s3://mlflow/forecasters/forecaster-de"
    assert split_s3_uri("s3://mlflow/forecasters/forecaster-de") == ("mlflow", "forecasters/forecaster-de")
    assert split_s3_uri("s3://models") == ("models", "")
    for bad in ("gs://b/p", "/local/dir", "s3:///nobucket"):
        with pytest.raises(ValueError, match="not an s3://bucket"):
            split_s3_uri(bad)
