"""The Kubernetes Pod Security Standards, ``baseline`` and ``restricted`` (policy version 1.30+), as a
check of one pod spec: what the API server's PodSecurity admission would refuse in a namespace
labelled ``pod-security.kubernetes.io/enforce: restricted``. Written from the published rules
(kubernetes.io/docs/concepts/security/pod-security-standards), one function per control.

``violations(pod_spec)`` lists every rule the spec breaks, with the container it concerns; [] means
it passes ``restricted``. Used by tests/components/test_tenancy_mocks.py on every pod the platform
declares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

# baseline: the capabilities a container may add; restricted: only NET_BIND_SERVICE, after dropping ALL
BASELINE_CAPABILITIES = {
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}  # fmt: skip
RESTRICTED_VOLUMES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
}  # fmt: skip
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}  # fmt: skip
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
VOLUME_SOURCE_KEYS = RESTRICTED_VOLUMES | {
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
    "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
    "portworxVolume", "scaleIO", "storageos", "photonPersistentDisk", "image",
}  # fmt: skip


def containers(pod: dict) -> Iterator[tuple[str, dict]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in pod.get(key) or []:
            yield f"{key}[{c.get('name')}]", c


def _sc(c: dict) -> dict:
    return c.get("securityContext") or {}


def _host_namespaces(pod: dict) -> Iterator[str]:
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            yield f"{key}: true"


def _host_process(pod: dict) -> Iterator[str]:
    if ((_sc(pod).get("windowsOptions") or {}).get("hostProcess")) is True:
        yield "pod: windowsOptions.hostProcess"
    for where, c in containers(pod):
        if (_sc(c).get("windowsOptions") or {}).get("hostProcess") is True:
            yield f"{where}: windowsOptions.hostProcess"


def _privileged(pod: dict) -> Iterator[str]:
    for where, c in containers(pod):
        if _sc(c).get("privileged") is True:
            yield f"{where}: privileged"


def _capabilities(pod: dict) -> Iterator[str]:
    for where, c in containers(pod):
        caps = _sc(c).get("capabilities") or {}
        added = set(caps.get("add") or [])
        if added - BASELINE_CAPABILITIES:
            yield f"{where}: adds {sorted(added - BASELINE_CAPABILITIES)} (baseline)"
        if added - {"NET_BIND_SERVICE"}:
            yield f"{where}: adds {sorted(added - {'NET_BIND_SERVICE'})} (restricted allows NET_BIND_SERVICE only)"
        if "ALL" not in (caps.get("drop") or []):
            yield f"{where}: capabilities.drop lacks ALL"


def _volumes(pod: dict) -> Iterator[str]:
    for v in pod.get("volumes") or []:
        kinds = set(v) & VOLUME_SOURCE_KEYS
        if kinds - RESTRICTED_VOLUMES:
            yield f"volume {v.get('name')}: {sorted(kinds - RESTRICTED_VOLUMES)} is not allowed"


def _host_ports(pod: dict) -> Iterator[str]:
    for where, c in containers(pod):
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                yield f"{where}: hostPort {p['hostPort']}"


def _apparmor(pod: dict) -> Iterator[str]:
    allowed = {None, "RuntimeDefault", "Localhost"}
    if (_sc(pod).get("appArmorProfile") or {}).get("type") not in allowed:
        yield "pod: appArmorProfile"
    for where, c in containers(pod):
        if (_sc(c).get("appArmorProfile") or {}).get("type") not in allowed:
            yield f"{where}: appArmorProfile"


def _selinux(pod: dict) -> Iterator[str]:
    for where, sc in [("pod", _sc(pod)), *((w, _sc(c)) for w, c in containers(pod))]:
        opts = sc.get("seLinuxOptions") or {}
        if opts.get("type", "") not in SELINUX_TYPES or opts.get("user") or opts.get("role"):
            yield f"{where}: seLinuxOptions"


def _proc_mount(pod: dict) -> Iterator[str]:
    for where, c in containers(pod):
        if _sc(c).get("procMount", "Default") != "Default":
            yield f"{where}: procMount"


def _sysctls(pod: dict) -> Iterator[str]:
    for s in _sc(pod).get("sysctls") or []:
        if s.get("name") not in SAFE_SYSCTLS:
            yield f"pod: sysctl {s.get('name')}"


def _privilege_escalation(pod: dict) -> Iterator[str]:
    for where, c in containers(pod):
        if _sc(c).get("allowPrivilegeEscalation") is not False:
            yield f"{where}: allowPrivilegeEscalation is not false"


def _non_root(pod: dict) -> Iterator[str]:
    pod_level = _sc(pod).get("runAsNonRoot")
    if pod_level is False:
        yield "pod: runAsNonRoot: false"
    for where, c in containers(pod):
        own = _sc(c).get("runAsNonRoot")
        if own is False or (own is None and pod_level is not True):
            yield f"{where}: runAsNonRoot is not true (on the pod or the container)"


def _non_root_user(pod: dict) -> Iterator[str]:
    if _sc(pod).get("runAsUser") == 0:
        yield "pod: runAsUser 0"
    for where, c in containers(pod):
        if _sc(c).get("runAsUser") == 0:
            yield f"{where}: runAsUser 0"


def _seccomp(pod: dict) -> Iterator[str]:
    allowed = {"RuntimeDefault", "Localhost"}
    pod_type = (_sc(pod).get("seccompProfile") or {}).get("type")
    if pod_type == "Unconfined":
        yield "pod: seccompProfile Unconfined"
    for where, c in containers(pod):
        own = (_sc(c).get("seccompProfile") or {}).get("type")
        if own not in allowed and not (own is None and pod_type in allowed):
            yield f"{where}: seccompProfile is not RuntimeDefault or Localhost (on the pod or the container)"


CONTROLS: list[Callable[[dict], Iterator[str]]] = [
    # baseline
    _host_process,
    _host_namespaces,
    _privileged,
    _host_ports,
    _apparmor,
    _selinux,
    _proc_mount,
    _sysctls,
    # restricted
    _volumes,
    _privilege_escalation,
    _non_root,
    _non_root_user,
    _seccomp,
    _capabilities,
]


def violations(pod: dict) -> list[str]:
    """Every rule of ``restricted`` (which includes ``baseline``) that the pod spec breaks."""
    return [v for control in CONTROLS for v in control(pod)]


def pod_specs(objects: list[dict]) -> Iterator[tuple[str, dict]]:
    """(label, pod spec) of every pod the objects declare, directly or through a controller, and of
    each KServe InferenceService (its predictor's pod fields with its ServingRuntime's containers)."""
    runtimes = {
        (o["metadata"].get("namespace"), o["metadata"]["name"]): o["spec"]
        for o in objects
        if o["kind"] in ("ServingRuntime", "ClusterServingRuntime")
    }
    for o in objects:
        kind, meta, spec = o["kind"], o["metadata"], o.get("spec") or {}
        label = f"{kind} {meta.get('namespace', '')}/{meta['name']}"
        if kind == "Pod":
            yield label, spec
        elif kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
            yield label, spec["template"]["spec"]
        elif kind == "CronJob":
            yield label, spec["jobTemplate"]["spec"]["template"]["spec"]
        elif kind == "InferenceService":
            predictor = dict(spec["predictor"])
            runtime = runtimes[(meta.get("namespace"), predictor["model"]["runtime"])]
            predictor.pop("model")
            yield label, {**predictor, "containers": runtime["containers"], "volumes": runtime.get("volumes")}
