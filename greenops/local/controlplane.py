"""A throw-away Kubernetes control plane on loopback: etcd + kube-apiserver (+ controller-manager,
+ kube-scheduler).

No kubelet runs unless a node joins (greenops.local.node), so pods never start otherwise; CRDs,
custom objects, namespaces and admission webhooks work as in a real cluster. Used by the smoke and
end-to-end tests and by ``greenops demo``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from greenops.common.errors import GreenOpsError
from greenops.common.toolpaths import tool_path
from greenops.local.pki import Authority
from greenops.local.service import LoopbackService
from greenops.policies.webhook import admission_configuration, webhook_kubeconfig

ADMIN_TOKEN_USER = "greenops-admin"


class ControlPlaneError(GreenOpsError):
    """The local control plane could not start; the message says which part and why."""


# The canonical names of v1.36 (the short names of older releases are aliases only some keep)
CONTROLLERS = ("namespace-controller", "garbage-collector-controller")
NODE_CONTROLLERS = (
    "node-lifecycle-controller",
    "pod-garbage-collector-controller",
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "endpointslice-controller",
    "endpoints-controller",  # Endpoints too: what pulumi-kubernetes awaits a Service by
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
)


def host_address() -> str:
    """The machine's own IPv4 address (the source of its default route): pods reach it through
    their bridge's gateway, where they cannot reach the host's loopback."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("198.51.100.1", 9))  # no packet is sent: connect only picks the route's source
        except OSError as e:
            raise ControlPlaneError(f"a node's pods need the machine's own address, and it has none: {e}") from e
        address: str = s.getsockname()[0]
    return address


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    argv: list[str]


@dataclass
class LocalControlPlane(LoopbackService):
    """Start with ``with LocalControlPlane() as cp:``; everything lives under one temp folder."""

    with_controller_manager: bool = False
    # A node joins (greenops.local.node): kube-scheduler binds pods to it; the controller manager
    # runs what pods need (Deployments, EndpointSlices for kube-proxy, ServiceAccounts and their
    # tokens, the root CA in each namespace) and lifts the node's not-ready taint; the API server
    # admits ServiceAccounts and listens where pods reach it (the machine's own address, which
    # the `kubernetes` Service points at), not on loopback alone.
    with_node: bool = False
    startup_timeout: float = 90.0
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-cp-")))
    token: str = field(default_factory=lambda: os.urandom(16).hex())
    # The bearer token the API server presents to each webhook it calls, by the webhook's
    # "host:port" (its admission kubeconfig, --admission-control-config-file), as a platform team
    # configures a self-managed API server for the webhook's OPA.
    webhook_tokens: dict[str, str] = field(default_factory=dict)
    _procs: list[_Proc] = field(default_factory=list)
    authority: Authority | None = None  # the client CA, once started (a node's kubelet is its client)
    api_port: int = 0
    etcd_port: int = 0

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    def start(self) -> None:
        self.etcd_port, peer = free_port(), free_port()
        self._spawn(
            "etcd",
            [
                tool_path("etcd"),
                "--name",
                "greenops",
                "--data-dir",
                str(self.workdir / "etcd"),
                "--listen-client-urls",
                f"http://127.0.0.1:{self.etcd_port}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{self.etcd_port}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"greenops=http://127.0.0.1:{peer}",
                "--log-level",
                "warn",
            ],
        )
        self._wait(f"http://127.0.0.1:{self.etcd_port}/health", "etcd", headers={})

        key = self.workdir / "sa.key"
        key.write_bytes(
            rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        tokens = self.workdir / "tokens.csv"
        tokens.write_text(f'{self.token},{ADMIN_TOKEN_USER},{ADMIN_TOKEN_USER},"system:masters"\n')
        self.api_port = free_port()
        self.authority = Authority(self.workdir / "client-ca")
        # with a node, the API server proxies logs and exec to its kubelet, as a master
        kubelet_client = (
            self.authority.issue_client("kube-apiserver-kubelet-client", ("system:masters",), "apiserver-kubelet")
            if self.with_node
            else None
        )
        self._spawn(
            "kube-apiserver",
            [
                tool_path("kube-apiserver"),
                "--etcd-servers",
                f"http://127.0.0.1:{self.etcd_port}",
                "--bind-address",
                "0.0.0.0" if self.with_node else "127.0.0.1",
                "--advertise-address",
                host_address() if self.with_node else "127.0.0.1",
                "--secure-port",
                str(self.api_port),
                "--cert-dir",
                str(self.workdir / "pki"),
                "--token-auth-file",
                str(tokens),
                # a node's kubelet presents a certificate of this authority (greenops.local.node)
                "--client-ca-file",
                str(self.authority.cert_path),
                "--authorization-mode",
                "Node,RBAC",
                "--enable-admission-plugins",
                "NodeRestriction",
                "--service-account-issuer",
                "https://kubernetes.default.svc",
                "--service-account-key-file",
                str(key),
                "--service-account-signing-key-file",
                str(key),
                "--service-cluster-ip-range",
                "10.96.0.0/24",
                "--enable-priority-and-fairness=false",
                *([] if self.with_node else ["--disable-admission-plugins", "ServiceAccount"]),
                *(
                    [
                        "--kubelet-client-certificate",
                        str(kubelet_client.cert),
                        "--kubelet-client-key",
                        str(kubelet_client.key),
                        # a node's name is no DNS name here: its address is
                        "--kubelet-preferred-address-types",
                        "InternalIP",
                    ]
                    if kubelet_client
                    else []
                ),
                *self._admission_config(),
                "--v",
                "1",
            ],
        )
        self._wait(f"{self.server}/readyz", "kube-apiserver")
        self.write_kubeconfig()
        if self.with_controller_manager or self.with_node:
            self._component(
                "kube-controller-manager",
                "--controllers",
                ",".join(CONTROLLERS + (NODE_CONTROLLERS if self.with_node else ())),
                "--service-account-private-key-file",
                str(key),
                # the CA of the API server's serving certificate: what a pod's token volume carries
                *(["--root-ca-file", str(self.workdir / "pki" / "apiserver.crt")] if self.with_node else []),
            )
        if self.with_node:
            self._component("kube-scheduler")

    def _component(self, name: str, *flags: str) -> None:
        """A control-plane component that talks to the API server as its admin, on loopback, alone."""
        common = ["--kubeconfig", str(self.kubeconfig_path), "--bind-address", "127.0.0.1"]
        common += ["--secure-port", str(free_port()), "--leader-elect=false", "--v", "1"]
        self._spawn(name, [tool_path(name), *common, *flags])

    def _admission_config(self) -> list[str]:
        """The flag giving the admission webhooks their credentials, when any is set."""
        if not self.webhook_tokens:
            return []
        kubeconfig = self.workdir / "webhook-kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(webhook_kubeconfig(self.webhook_tokens)))
        kubeconfig.chmod(0o600)
        config = self.workdir / "admission-config.yaml"
        config.write_text(yaml.safe_dump(admission_configuration(str(kubeconfig))))
        return ["--admission-control-config-file", str(config)]

    def stop(self) -> None:
        for proc in reversed(self._procs):
            if proc.popen.poll() is None:
                proc.popen.send_signal(signal.SIGTERM)
                try:
                    proc.popen.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.popen.kill()
                    proc.popen.wait()
        self._procs.clear()
        if os.environ.get("GREENOPS_KEEP_CONTROLPLANE") != "1":
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- helpers ------------------------------------------------------------------------------
    @property
    def kubeconfig_path(self) -> Path:
        return self.workdir / "kubeconfig"

    def kubeconfig(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "greenops-local",
            "clusters": [
                {"name": "greenops-local", "cluster": {"server": self.server, "insecure-skip-tls-verify": True}}
            ],
            "users": [{"name": ADMIN_TOKEN_USER, "user": {"token": self.token}}],
            "contexts": [
                {"name": "greenops-local", "context": {"cluster": "greenops-local", "user": ADMIN_TOKEN_USER}}
            ],
        }

    def write_kubeconfig(self) -> Path:
        self.kubeconfig_path.write_text(yaml.safe_dump(self.kubeconfig()))
        self.kubeconfig_path.chmod(0o600)
        return self.kubeconfig_path

    def client(self, timeout: float = 30.0) -> httpx.Client:
        """An httpx client authenticated as cluster admin (the serving cert is self-signed)."""
        return httpx.Client(
            base_url=self.server, verify=False, timeout=timeout, headers={"Authorization": f"Bearer {self.token}"}
        )

    def create_crd(self, crd: dict[str, Any], timeout: float = 30.0) -> None:
        """Create a CRD server-side (large schemas too) and wait until it is Established."""
        name = crd["metadata"]["name"]
        with self.client() as k:
            r = k.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
            if r.status_code not in (201, 409):
                raise ControlPlaneError(f"CRD {name}: HTTP {r.status_code}: {r.text[:500]}")
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                got = k.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}").json()
                conditions = (got.get("status") or {}).get("conditions") or []
                if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    return
                time.sleep(0.1)
        raise ControlPlaneError(f"CRD {name} was not Established within {timeout:.0f}s")

    def restart_apiserver(self, down_seconds: float = 0.0) -> None:
        """kill -9 kube-apiserver, keep it down ``down_seconds``, and start it again on the same
        port and etcd: every open watch breaks without a goodbye, nothing stored is lost."""
        old = next(p for p in self._procs if p.name == "kube-apiserver")
        old.popen.kill()
        old.popen.wait()
        self._procs.remove(old)
        time.sleep(down_seconds)
        self._spawn("kube-apiserver", old.argv)
        self._wait(f"{self.server}/readyz", "kube-apiserver")

    @property
    def pids(self) -> list[int]:
        return [p.popen.pid for p in self._procs]

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = self.workdir / f"{name}.log"
        self.workdir.mkdir(parents=True, exist_ok=True)
        # the child writes through its own copy of the descriptor: this process keeps none open
        with log.open("wb") as fh:
            popen = subprocess.Popen(
                argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        self._procs.append(_Proc(name, popen, log, argv))

    def _wait(self, url: str, name: str, headers: dict[str, str] | None = None) -> None:
        proc = self._procs[-1]
        deadline = time.monotonic() + self.startup_timeout
        hdrs = {"Authorization": f"Bearer {self.token}"} if headers is None else headers
        last = "no answer yet"
        while time.monotonic() < deadline:
            if proc.popen.poll() is not None:
                tail = proc.log.read_text(errors="replace")[-2000:]
                raise ControlPlaneError(f"{name} exited with code {proc.popen.returncode}:\n{tail}")
            try:
                r = httpx.get(url, verify=False, timeout=2.0, headers=hdrs)
                if r.status_code == 200:
                    return
                last = f"HTTP {r.status_code}: {r.text[:200]}"
            except httpx.HTTPError as exc:
                last = str(exc)
            time.sleep(0.25)
        raise ControlPlaneError(f"{name} did not become ready within {self.startup_timeout:.0f}s ({last})")
