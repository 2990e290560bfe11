"""Put the champion models where the platform's InferenceServices read them.

Each InferenceService's ``storageUri`` is ``names.storage_uri(prefix, model)``; KServe's storage
initializer copies everything below it into ``/mnt/models`` and MLServer's MLflow runtime loads that
directory. So publishing is: export every champion as its MLflow model directory
(``tracking.export``), then mirror each directory to ``<prefix>/<model>/`` in the S3 store (SeaweedFS
in the platform), removing what a previous version left there. ``MLmodel``, the file that makes the
directory a model, is written last, so a half-written upload is never a loadable model.

Credentials come the way boto3 reads them (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``: the
stack's greenops:s3AccessKey / s3SecretKey), never from an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from greenops.common.errors import GreenOpsError
from greenops.models.forecast_names import split_s3_uri, storage_uri

MODEL_FILE = "MLmodel"
DENIED = {"403", "AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId"}


class PublishError(GreenOpsError):
    """The object store refused or could not be reached; the message says which and why."""


@dataclass(frozen=True)
class Published:
    model: str
    uri: str
    uploaded: int
    removed: int


class S3Client(Protocol):
    """What publishing uses of boto3's S3 client (boto3 ships no types)."""

    def head_bucket(self, *, Bucket: str) -> Any: ...
    def create_bucket(self, *, Bucket: str) -> Any: ...
    def get_paginator(self, operation_name: str) -> Any: ...
    def upload_file(self, Filename: str, Bucket: str, Key: str) -> None: ...
    def delete_object(self, *, Bucket: str, Key: str) -> Any: ...


def s3_client(endpoint_url: str | None = None) -> S3Client:
    """A boto3 S3 client for ``endpoint_url`` (an S3-compatible store such as SeaweedFS; None: AWS),
    path-style addressing, credentials read from the environment now (a fresh session: boto3's
    default one would keep the first keys it found)."""
    import boto3
    from botocore.config import Config

    client: S3Client = boto3.session.Session().client(
        "s3", endpoint_url=endpoint_url, config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3})
    )
    return client


def _ensure_bucket(client: S3Client, bucket: str) -> None:
    from botocore.exceptions import ClientError

    try:
        client.head_bucket(Bucket=bucket)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise
        client.create_bucket(Bucket=bucket)


def _existing(client: S3Client, bucket: str, prefix: str) -> set[str]:
    keys: set[str] = set()
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.update(o["Key"] for o in page.get("Contents", []))
    return keys


def publish(models: dict[str, Path], prefix: str, client: S3Client) -> list[Published]:
    """Mirror each exported model directory ``models[name]`` to ``storage_uri(prefix, name)``."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, _ = split_s3_uri(prefix)
    out = []
    try:
        _ensure_bucket(client, bucket)
        for name, directory in sorted(models.items()):
            uri = storage_uri(prefix, name)
            _, key_prefix = split_s3_uri(uri)
            files = sorted(
                (p for p in Path(directory).rglob("*") if p.is_file()),
                key=lambda p: (p.name == MODEL_FILE, p.as_posix()),
            )
            if not any(p.name == MODEL_FILE for p in files):
                raise PublishError(f"{directory} is not an MLflow model directory (no {MODEL_FILE})")
            stale = _existing(client, bucket, f"{key_prefix}/")
            for path in files:
                key = f"{key_prefix}/{path.relative_to(directory).as_posix()}"
                client.upload_file(str(path), bucket, key)
                stale.discard(key)
            for key in sorted(stale):
                client.delete_object(Bucket=bucket, Key=key)
            out.append(Published(name, uri, len(files), len(stale)))
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code"))
        hint = (
            " (are AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY the stack's greenops:s3AccessKey / s3SecretKey?)"
            if code in DENIED
            else ""
        )
        raise PublishError(
            f"the object store refused {exc.operation_name} under {prefix}: {code} {error.get('Message', '')}".rstrip()
            + hint
        ) from exc
    except BotoCoreError as exc:  # no credentials, endpoint unreachable, ...
        raise PublishError(f"cannot publish to {prefix}: {exc}") from exc
    return out
