"""How every pod the platform declares is hardened, defined once.

- The Kubernetes Pod Security Standard ``restricted`` (non-root, seccomp ``RuntimeDefault``, no
  privilege escalation, every capability dropped), plus a read-only root filesystem wherever the
  program allows, with an emptyDir for each path it writes.
- Requests and limits on every container.
- A service-account token only in pods that call the Kubernetes API (``automountServiceAccountToken``).
- ``imagePullPolicy: Always`` for an image pinned by tag (a tag can be moved; a digest cannot).
- Inline suppressions of the manifest scanner's checks (checkov, tests/test_manifest_scan.py), each
  with its reason next to the object it excuses.

The same settings exist twice in form only: as pulumi_kubernetes ``*Args`` for the Deployments the
components declare, and as plain Kubernetes JSON for custom resources (KServe's ServingRuntime and
InferenceService, the Pulumi operator's Stack) and for Helm values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi_kubernetes as k8s

# An unprivileged UID and GID outside any image's /etc/passwd range (distroless' "nonroot"). Set
# explicitly so runAsNonRoot holds even for an image whose USER is a name, and high enough not to
# share a UID with a host user (checkov CKV_K8S_40).
NON_ROOT_ID = 65532
SECCOMP = {"type": "RuntimeDefault"}

# Kubernetes JSON, for custom resources and chart values.
POD_SECURITY: dict = {
    "runAsNonRoot": True,
    "runAsUser": NON_ROOT_ID,
    "runAsGroup": NON_ROOT_ID,
    # mounted Secrets, ConfigMaps and emptyDirs are group-readable/writable by the pod's own group
    "fsGroup": NON_ROOT_ID,
    "seccompProfile": SECCOMP,
}
CONTAINER_SECURITY: dict = {
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "readOnlyRootFilesystem": True,
    "seccompProfile": SECCOMP,
}


# The namespaces that hold only pods declared here (the scheduler's, the policy engine's): the API
# server refuses any pod in them that is not `restricted`, whoever creates it.
RESTRICTED_NAMESPACE_LABELS = {
    f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")
}


def restricted_namespace(name: str) -> k8s.meta.v1.ObjectMetaArgs:
    return k8s.meta.v1.ObjectMetaArgs(name=name, labels=RESTRICTED_NAMESPACE_LABELS)


def pod_security_context() -> k8s.core.v1.PodSecurityContextArgs:
    return k8s.core.v1.PodSecurityContextArgs(
        run_as_non_root=POD_SECURITY["runAsNonRoot"],
        run_as_user=POD_SECURITY["runAsUser"],
        run_as_group=POD_SECURITY["runAsGroup"],
        fs_group=POD_SECURITY["fsGroup"],
        seccomp_profile=k8s.core.v1.SeccompProfileArgs(type=SECCOMP["type"]),
    )


def container_security_context() -> k8s.core.v1.SecurityContextArgs:
    c = CONTAINER_SECURITY
    return k8s.core.v1.SecurityContextArgs(
        run_as_non_root=c["runAsNonRoot"],
        allow_privilege_escalation=c["allowPrivilegeEscalation"],
        capabilities=k8s.core.v1.CapabilitiesArgs(drop=c["capabilities"]["drop"]),
        read_only_root_filesystem=c["readOnlyRootFilesystem"],
        seccomp_profile=k8s.core.v1.SeccompProfileArgs(type=SECCOMP["type"]),
    )


def container_security(read_only_root: bool = True) -> dict:
    """CONTAINER_SECURITY as JSON; ``read_only_root=False`` only for a program that writes where it
    cannot be pointed at a volume (say why at the call)."""
    return {**CONTAINER_SECURITY, "readOnlyRootFilesystem": read_only_root}


@dataclass(frozen=True)
class Resources:
    """Requests and limits of one container. The CPU limit bounds a runaway replica's share of a
    node; memory's request equals its limit unless said otherwise, so the pod is not the first
    evicted under pressure."""

    cpu: str
    memory: str
    cpu_limit: str
    memory_limit: str | None = None

    def json(self) -> dict:
        return {
            "requests": {"cpu": self.cpu, "memory": self.memory},
            "limits": {"cpu": self.cpu_limit, "memory": self.memory_limit or self.memory},
        }

    def args(self) -> k8s.core.v1.ResourceRequirementsArgs:
        j = self.json()
        return k8s.core.v1.ResourceRequirementsArgs(requests=j["requests"], limits=j["limits"])


def pull_policy(image: str) -> str | None:
    """``Always`` for a tag (the registry decides what it names today, and the pull re-checks the
    pod's right to it); the default (IfNotPresent) for a digest, which names one content forever."""
    return None if "@sha256:" in image else "Always"


def image_fields(image: str) -> dict:
    """A container's ``image`` and ``imagePullPolicy`` as JSON, for custom resources."""
    policy = pull_policy(image)
    return {"image": image, **({"imagePullPolicy": policy} if policy else {})}


def scratch(name: str, path: str, size: str = "64Mi") -> tuple[k8s.core.v1.VolumeArgs, k8s.core.v1.VolumeMountArgs]:
    """A writable emptyDir at ``path`` for a container whose root filesystem is read-only."""
    return (
        k8s.core.v1.VolumeArgs(name=name, empty_dir=k8s.core.v1.EmptyDirVolumeSourceArgs(size_limit=size)),
        k8s.core.v1.VolumeMountArgs(name=name, mount_path=path),
    )


SKIP_ANNOTATION = "checkov.io/skip{}"


def scanner_skips(reasons: Mapping[str, str]) -> dict[str, str]:
    """Annotations that suppress the scanner's checks on one object, each with its reason
    (``checkov.io/skipN: CKV_K8S_xx=<reason>``). tests/test_manifest_scan.py refuses a skip
    without a reason."""
    for check, reason in reasons.items():
        # checkov splits the value at "=": a second one would break its parsing of the annotation
        if not reason.strip() or "=" in reason:
            raise ValueError(f"suppressing {check} needs a reason, without '='")
    return {SKIP_ANNOTATION.format(i): f"{check}={reason}" for i, (check, reason) in enumerate(reasons.items(), 1)}


UNVERIFIED_DIGEST = (
    "pinned by tag in components/versions.yaml: no digest for it could be verified where the pin was "
    "written; imagePullPolicy is Always, and a stack can pin the entry by digest"
)


def digest_skips(*images: str) -> dict[str, str]:
    """The image-digest check's suppression, while any of ``images`` is pinned by tag only."""
    return {"CKV_K8S_43": UNVERIFIED_DIGEST} if any("@sha256:" not in i for i in images) else {}
