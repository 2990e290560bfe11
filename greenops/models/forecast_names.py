"""Where a forecaster is known by name, and where its files live: the one definition that training,
the registry, ``greenops-forecast publish``, the platform's InferenceServices and the scheduler's OIP
client all import. Free of heavy imports, so ``components/`` can use it too.
"""

from __future__ import annotations

from urllib.parse import urlsplit

PREFIX = "forecaster-"
GENERIC_ZONE = "generic"
# The platform default of greenops:platform.kserve.storagePrefix: the InferenceServices read
# <prefix>/<model>, and `greenops-forecast publish` writes there.
DEFAULT_STORAGE_PREFIX = "s3://mlflow/forecasters"


def model_name(zone: str) -> str:
    """The registry, OIP and InferenceService name: lower case, as KServe names are DNS labels."""
    return f"{PREFIX}{zone.lower()}"


GENERIC_MODEL = model_name(GENERIC_ZONE)


def served_models(zones: list[str]) -> list[str]:
    """One model per zone, then the generic fallback: the InferenceServices a platform declares."""
    return [model_name(z) for z in zones] + [GENERIC_MODEL]


def storage_uri(prefix: str, model: str) -> str:
    """A model's storageUri: the MLflow model directory as ``greenops-forecast export`` writes it."""
    return f"{prefix.rstrip('/')}/{model}"


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/key`` -> ``("bucket", "some/key")`` (no leading or trailing slash)."""
    parts = urlsplit(uri)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"not an s3://bucket/... URI: {uri!r}")
    return parts.netloc, parts.path.strip("/")
