"""A small stand-in for Config Connector's release-bundle.tar.gz, with the upstream layout (the
manual install applies operator-system/configconnector-operator.yaml from it; Autopilot clusters
the autopilot- variant), so no test reaches Google's bucket."""

from __future__ import annotations

import hashlib
import io
import re
import tarfile

OPERATOR_YAML = """\
apiVersion: v1
kind: Namespace
metadata:
  name: configconnector-operator-system
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: configconnector-operator
  namespace: configconnector-operator-system
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: configconnector-operator
  namespace: configconnector-operator-system
spec:
  serviceName: configconnector-operator-service
  selector:
    matchLabels: {cnrm.cloud.google.com/component: configconnector-operator}
  template:
    metadata:
      labels: {cnrm.cloud.google.com/component: configconnector-operator}
    spec:
      serviceAccountName: configconnector-operator
      containers:
      - name: manager
        image: gcr.io/gke-release/cnrm/operator:1.156.0
"""
UPSTREAM_LAYOUT = {
    "operator-system/configconnector-operator.yaml": OPERATOR_YAML,
    "operator-system/autopilot-configconnector-operator.yaml": OPERATOR_YAML.replace("1.156.0", "1.156.0-autopilot"),
}


def build_bundle(files: dict[str, str | bytes] | None = None, prefix: str = "") -> bytes:
    """A gzipped tar holding ``files`` (path -> content), each path under ``prefix`` (e.g. "./")."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, content in (UPSTREAM_LAYOUT if files is None else files).items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(prefix + path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def offline_fetch(url: str, sha: str, **_) -> bytes:
    """Stands in for components.operator_bundle.fetch: the pin must still name an archive and a sha256."""
    assert url.endswith(".tar.gz") and re.fullmatch(r"[0-9a-f]{64}", sha), (url, sha)
    return build_bundle()
