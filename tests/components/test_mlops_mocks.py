"""MLOps wiring under Pulumi mocks (issue 16): the one pair of object-store keys reaches SeaweedFS,
MLflow and KServe only through Kubernetes Secrets, the InferenceServices read their models with it
from where ``greenops-forecast publish`` writes them, and the PostgreSQL pin names images that are
still published. The loopback test with a real SeaweedFS and MLflow is
tests/forecasting/test_publish_integration.py."""

from __future__ import annotations

import json

import pytest
import yaml

from components.mlops import (
    MODELS_S3_SECRET,
    MODELS_SERVICE_ACCOUNT,
    S3_KEY_NAMES,
    SEAWEEDFS_CONFIG_KEY,
    SEAWEEDFS_CONFIG_SECRET,
)
from components.platform_config import VERSIONS_FILE
from greenops.models.forecast_names import DEFAULT_STORAGE_PREFIX, served_models, storage_uri

from .test_platform_mocks import PROD, SECRET_SIG, collect, of, run_platform, unwrap

# the prod platform without GCP: Config Connector's part is judged elsewhere and has nothing to do here
MLOPS = {k: v for k, v in PROD.items() if k != "gcp"}
RELEASE = "kubernetes:helm.sh/v3:Release"
SECRET = "kubernetes:core/v1:Secret"


def releases(m) -> dict:
    return {r.name: r.inputs for r in of(m, RELEASE)}


def secret(m, name: str, namespace: str):
    [s] = [
        r
        for r in of(m, SECRET)
        if r.inputs["metadata"] == {**r.inputs["metadata"], "name": name, "namespace": namespace}
    ]
    return s.inputs


@pytest.fixture(scope="module")
def prod():
    return collect(MLOPS)


def test_seaweedfs_authenticates_the_stacks_keys_from_a_secret(prod):
    config = secret(prod, SEAWEEDFS_CONFIG_SECRET, "mlops")
    assert SECRET_SIG in config["stringData"]  # encrypted in Pulumi state
    [identity] = json.loads(unwrap(config["stringData"])[SEAWEEDFS_CONFIG_KEY])["identities"]
    assert identity["credentials"] == [{"accessKey": "ak", "secretKey": "sk"}]
    assert {"Read", "Write", "List"} <= set(identity["actions"])
    values = releases(prod)["mlflow-seaweedfs"]["values"]
    assert values == {
        "filer": {
            "s3": {
                "enabled": True,
                "port": 8333,
                "enableAuth": True,
                "existingConfigSecret": SEAWEEDFS_CONFIG_SECRET,
                "createBuckets": [{"name": "mlflow"}],
            }
        }
    }


def test_mlflow_reads_its_database_login_and_the_same_keys_from_its_secret(prod):
    creds = unwrap(secret(prod, "mlflow-credentials", "mlops")["stringData"])
    assert creds == {
        "username": "mlflow",
        "postgres-password": "db-pass",
        "AWS_ACCESS_KEY_ID": "ak",
        "AWS_SECRET_ACCESS_KEY": "sk",
    }
    rel = releases(prod)
    values = rel["mlflow-mlflow"]["values"]
    assert values["backendStore"]["existingDatabaseSecret"] == {
        "name": "mlflow-credentials",
        "usernameKey": "username",
        "passwordKey": "postgres-password",
    }
    assert "password" not in values["backendStore"]["postgres"] and "user" not in values["backendStore"]["postgres"]
    assert values["artifactRoot"]["s3"] == {
        "enabled": True,
        "bucket": "mlflow",
        "existingSecret": {
            "name": "mlflow-credentials",
            "keyOfAccessKeyId": "AWS_ACCESS_KEY_ID",
            "keyOfSecretAccessKey": "AWS_SECRET_ACCESS_KEY",
        },
    }
    # every key the chart is told to read exists in the Secret
    assert {"username", "postgres-password", *S3_KEY_NAMES} <= set(creds)
    # the hosts MLflow is given are the Services the charts create: SeaweedFS names its S3 Service after
    # the chart; Bitnami's PostgreSQL after the release, which is named exactly as the resource
    assert values["extraEnvVars"] == {"MLFLOW_S3_ENDPOINT_URL": "http://seaweedfs-s3.mlops.svc:8333"}
    assert values["backendStore"]["postgres"]["host"] == f"{rel['mlflow-postgresql']['name']}.mlops.svc"
    assert all(inputs["name"] == name for name, inputs in rel.items())


def test_inference_services_read_the_published_models_with_the_same_keys(prod):
    storage = secret(prod, MODELS_S3_SECRET, "forecasting")
    assert storage["metadata"]["annotations"] == {
        "serving.kserve.io/s3-endpoint": "seaweedfs-s3.mlops.svc:8333",
        "serving.kserve.io/s3-usehttps": "0",
    }
    assert SECRET_SIG in storage["stringData"]
    assert unwrap(storage["stringData"]) == {"AWS_ACCESS_KEY_ID": "ak", "AWS_SECRET_ACCESS_KEY": "sk"}
    [account] = [
        r.inputs
        for r in of(prod, "kubernetes:core/v1:ServiceAccount")
        if r.inputs["metadata"] == {"name": MODELS_SERVICE_ACCOUNT, "namespace": "forecasting"}
    ]
    assert account["secrets"] == [{"name": MODELS_S3_SECRET}]
    services = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]["predictor"]
        for r in of(prod, "kubernetes:serving.kserve.io/v1beta1:InferenceService")
    }
    assert sorted(services) == sorted(served_models(["DE", "FR"]))
    for model, predictor in services.items():
        assert predictor["serviceAccountName"] == MODELS_SERVICE_ACCOUNT
        # where publish writes: the same function, the same default prefix
        assert predictor["model"]["storageUri"] == storage_uri(DEFAULT_STORAGE_PREFIX, model)
    # KServe's storage initializer looks for the key names the Secret uses
    controller = releases(prod)["kserve-controller"]["values"]["kserve"]["storage"]["s3"]
    assert (controller["accessKeyIdName"], controller["secretAccessKeyName"]) == S3_KEY_NAMES


def test_an_existing_https_object_store_is_used_as_given():
    m = collect(
        {
            **MLOPS,
            "mlflow": {"artifactEndpoint": "https://s3.eu-west-1.amazonaws.com"},
            "kserve": {"zones": ["DE"], "storagePrefix": "s3://models/greenops/"},
        }
    )
    assert "mlflow-seaweedfs" not in releases(m)
    assert not [r for r in of(m, SECRET) if r.inputs["metadata"]["name"] == SEAWEEDFS_CONFIG_SECRET]
    assert secret(m, MODELS_S3_SECRET, "forecasting")["metadata"]["annotations"] == {
        "serving.kserve.io/s3-endpoint": "s3.eu-west-1.amazonaws.com",
        "serving.kserve.io/s3-usehttps": "1",
    }
    uris = {
        r.inputs["spec"]["predictor"]["model"]["storageUri"]
        for r in of(m, "kubernetes:serving.kserve.io/v1beta1:InferenceService")
    }
    assert uris == {"s3://models/greenops/forecaster-de", "s3://models/greenops/forecaster-generic"}


def test_serving_without_the_object_store_keys_is_refused():
    import pulumi

    from greenops.stack import program

    run_platform({**MLOPS, "mlflow": {"enabled": False}}, secrets=False)
    with pytest.raises(pulumi.RunError, match="greenops:s3AccessKey"):
        program.run()


POSTGRESQL_IMAGES = {  # the chart version's own list (Chart.yaml annotations.images of 16.7.27)
    "image": "docker.io/bitnami/postgresql:17.6.0-debian-12-r4",
    "volumePermissions": "docker.io/bitnami/os-shell:12-debian-12-r51",
    "metrics": "docker.io/bitnami/postgres-exporter:0.17.1-debian-12-r16",
}


def test_both_postgresql_releases_pull_the_images_bitnami_still_publishes(prod):
    pin = yaml.safe_load(VERSIONS_FILE.read_text())["postgresql"]
    assert pin["version"] == "16.7.27", "a new chart version names other images: update POSTGRESQL_IMAGES and the pin"
    for release in ("mlflow-postgresql", "scheduler-postgresql"):
        values = unwrap(releases(prod)[release]["values"])
        # docker.io/bitnami no longer serves versioned tags; bitnamilegacy keeps the same tags
        for key, original in POSTGRESQL_IMAGES.items():
            image = values[key]["image"] if key != "image" else values["image"]
            repository, tag = original.removeprefix("docker.io/bitnami/").split(":")
            assert (image["repository"], image["tag"]) == (f"bitnamilegacy/{repository}", tag), (release, key)
        # the chart's common.errors.insecureImages lets bitnamilegacy replacements through with a warning
        # (common 2.31.4), so image verification is not switched off
        assert "allowInsecureImages" not in json.dumps(values)
        assert values["auth"]["existingSecret"]  # the component's own values are kept beside the pin's


@pytest.mark.crds
def test_the_service_account_field_is_judged_by_the_kserve_crd(prod, crd_schemas):
    [isvc] = [
        r.inputs
        for r in of(prod, "kubernetes:serving.kserve.io/v1beta1:InferenceService")
        if r.inputs["metadata"]["name"] == "forecaster-de"
    ]
    obj = {k: isvc[k] for k in ("apiVersion", "kind", "metadata", "spec")}
    assert crd_schemas.errors(obj) == []
    misspelt = {
        **obj,
        "spec": {
            "predictor": {
                **{k: v for k, v in obj["spec"]["predictor"].items() if k != "serviceAccountName"},
                "serviceAcountName": MODELS_SERVICE_ACCOUNT,
            }
        },
    }
    # a field the CRD does not declare is refused, so the right one counts
    assert [e for e in crd_schemas.errors(misspelt) if "serviceAcountName" in e]
