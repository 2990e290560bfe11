"""A real node for the loopback control plane: containerd and runc (Debian's), the bridge CNI
plugin, and a kubelet built from the same pinned module as the API server, registered with a
client certificate of the control plane's authority (the Node authorizer and NodeRestriction
judge it as ``system:node:<name>``); kube-proxy (iptables) for Services, and CoreDNS on the
bridge's gateway serving the cluster domain from the API server.

Everything it makes is its own and is taken down by ``stop``, even after a failed test: its
processes (containerd, kubelet, kube-proxy, CoreDNS and every runc shim it started), its mounts
(under its folder), its netns files, its bridge, its cgroups (under its own cgroupRoot), its
iptables rules and its folder. Two nodes on one machine do not meet: each has its own socket,
ports, bridge name, pod CIDR, DNS address and cgroup root. kube-proxy's chains (KUBE-SERVICES...)
have fixed names in the host's tables, so one node at a time runs one: a machine-wide lock, which
a second run's node waits for.

What this machine needs, as facts of it rather than workarounds: no CAP_SYS_RESOURCE (containerd's
``restrict_oom_score_adj``), hybrid cgroups v1 (the kubelet's ``failCgroupV1: false`` and the
cgroupfs driver; runc, not crun), and no registry.k8s.io (the sandbox image is built here, from
tools/go/pause, and imported)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from greenops.common.toolpaths import tool_path
from greenops.local.controlplane import ControlPlaneError, LocalControlPlane, free_port, host_address
from greenops.local.service import LoopbackService

CNI_BIN = Path("/usr/lib/cni")
CGROUP_V1 = Path("/sys/fs/cgroup")
NETNS = Path("/var/run/netns")
SANDBOX_IMAGE = "greenops.local/pause:1"
NEEDED = ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "umoci")
STATE = "node.json"
CLUSTER_DOMAIN = "cluster.local"
# held by the node whose kube-proxy owns the host's KUBE-* chains (released when its process dies)
PROXY_LOCK = Path("/run/lock/greenops-kube-proxy.lock")
PROXY_LOCK_WAIT = 900.0


def missing() -> list[str]:
    """What this machine lacks to run a node (empty: it can)."""
    lacks = [f"{c} (make node)" for c in NEEDED if shutil.which(c) is None]
    lacks += [f"{CNI_BIN}/{p} (make node)" for p in ("bridge", "host-local", "loopback") if not (CNI_BIN / p).exists()]
    lacks += [f"{c} (make node)" for c in ("iptables", "iptables-save") if shutil.which(c) is None]
    for tool in ("kubelet", "kube-proxy", "pause", "coredns"):
        try:
            tool_path(tool)
        except Exception:  # noqa: BLE001 - any reason it cannot be found is the same answer
            lacks.append(f"{tool} (tools/install.sh)")
    if os.geteuid() != 0:
        lacks.append("root (containerd and the kubelet run as root)")
    return lacks


@dataclass
class LocalNode(LoopbackService):
    """``with LocalNode(cp) as node:`` a Ready node of ``cp``; pods bound to it run."""

    cp: LocalControlPlane
    name: str = field(default_factory=lambda: f"node-{uuid.uuid4().hex[:6]}")
    startup_timeout: float = 120.0
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-node-")))
    _procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _netns_before: set[str] = field(default_factory=set)
    _proxy_lock: int | None = None  # the lock's descriptor while this node holds it

    def __post_init__(self) -> None:
        tag = hashlib.sha256(self.name.encode()).hexdigest()[:6]
        self.bridge = f"gno{tag}"  # at most 15 characters (IFNAMSIZ)
        self.cgroup_root = f"/greenops-{tag}"
        # a /24 of 10.200.0.0/16 not routed here already: its own pod CIDR
        taken = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, check=False).stdout
        third = next(
            n for n in range(int(tag, 16) % 250, 250 + int(tag, 16) % 250) if f"10.200.{n % 250}.0/24" not in taken
        )
        self.pod_cidr = f"10.200.{third % 250}.0/24"
        # the bridge's own address: the pods' gateway, and where CoreDNS answers them
        self.gateway = f"10.200.{third % 250}.1"

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def socket(self) -> Path:
        return self.workdir / "containerd.sock"

    def start(self) -> None:
        if lacks := missing():
            raise ControlPlaneError(f"a node cannot run here: missing {', '.join(lacks)}")
        self._hold_proxy_lock()
        reap_stale(self.workdir.parent)
        clear_proxy_rules()  # a killed run's kube-proxy left them; no live node has any (the lock)
        self._netns_before = set(os.listdir(NETNS)) if NETNS.exists() else set()
        # what a later run needs to take this node down if this process is killed before its stop
        self.workdir.joinpath(STATE).write_text(
            json.dumps({"owner": os.getpid(), "name": self.name, "netns_before": sorted(self._netns_before)})
        )
        self._cgroups(create=True)
        self._bridge()
        self._containerd()
        self._import_sandbox_image()
        self._dns()
        self._kubelet()
        self._kube_proxy()
        self.wait_ready()

    def stop(self) -> None:
        """Take down all it made; safe to call twice, and after a failed start."""
        self._drain()
        for name in ("kube-proxy", "coredns", "kubelet", "containerd"):
            proc = self._procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for pid in self.leftover_processes():
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self._unmount()
        for ns in self._own_netns():
            subprocess.run(["umount", str(NETNS / ns)], capture_output=True, check=False)
            (NETNS / ns).unlink(missing_ok=True)
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True, check=False)
        self._cgroups(create=False)
        if self._proxy_lock is not None:
            clear_proxy_rules()
            os.close(self._proxy_lock)  # the lock goes with its descriptor
            self._proxy_lock = None
        shutil.rmtree(self.workdir, ignore_errors=True)

    def trust_registry(self, host: str) -> None:
        """Pull from ``host`` (a registry on this machine's loopback, "127.0.0.1:PORT") over plain
        HTTP: containerd reads its hosts folder at each pull. Anywhere else TLS stays verified."""
        if not host.startswith(("127.0.0.1:", "localhost:")):
            raise ControlPlaneError(f"registry {host}: only a loopback registry is reached without TLS")
        folder = self.workdir / "certs.d" / host
        folder.mkdir(parents=True, exist_ok=True)
        folder.joinpath("hosts.toml").write_text(
            f'server = "http://{host}"\n[host."http://{host}"]\n  capabilities = ["pull", "resolve"]\n'
        )

    # -- what a test checks is gone --------------------------------------------------------------
    def leftover_processes(self) -> list[int]:
        """Processes still running that this node started: those with its folder in their command
        line (containerd, the kubelet, each runc shim), and every descendant of them (the pods'
        processes, whose command lines are their images')."""
        mine = str(self.workdir).encode()
        parent: dict[int, int] = {}
        roots: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                stat = entry.joinpath("stat").read_text()
                parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
                if mine in entry.joinpath("cmdline").read_bytes():
                    roots.add(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
        found = set(roots)
        grew = True
        while grew:
            more = {pid for pid, ppid in parent.items() if ppid in found and pid not in found}
            found |= more
            grew = bool(more)
        return sorted(found)

    def leftover_mounts(self) -> list[str]:
        mine = str(self.workdir)
        return [
            line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines() if mine in line.split()[4]
        ]

    def leftover_cgroups(self) -> list[Path]:
        return [p for p in (c / self.cgroup_root.lstrip("/") for c in _controllers()) if p.exists()]

    @staticmethod
    def leftover_rules() -> list[str]:
        """kube-proxy's rules in the host's tables (iptables-save, both backends)."""
        return proxy_rules()

    def leftover_links(self) -> list[str]:
        out = subprocess.run(["ip", "-o", "link", "show", self.bridge], capture_output=True, text=True, check=False)
        return [self.bridge] if out.returncode == 0 else []

    # -- parts ------------------------------------------------------------------------------------
    def _cgroups(self, create: bool) -> None:
        """The kubelet's cgroupRoot in every v1 controller (it must exist); removed bottom up."""
        for controller in _controllers():
            root = controller / self.cgroup_root.lstrip("/")
            if create:
                root.mkdir(exist_ok=True)
                if controller.name == "cpuset":  # a new cpuset has no CPUs or memory nodes until given
                    for f in ("cpuset.cpus", "cpuset.mems"):
                        root.joinpath(f).write_text(controller.joinpath(f).read_text())
            elif root.exists():
                for sub in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                    _rmdir(sub)
                _rmdir(root)

    def _hold_proxy_lock(self) -> None:
        PROXY_LOCK.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(PROXY_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + PROXY_LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise ControlPlaneError(
                        f"another node on this machine has run kube-proxy for {PROXY_LOCK_WAIT:.0f}s ({PROXY_LOCK})"
                    ) from None
                time.sleep(1)
        self._proxy_lock = fd

    def _bridge(self) -> None:
        """The bridge with its gateway address before any pod: CoreDNS binds to it at once (the CNI
        plugin takes a bridge that exists as it is)."""
        for argv in (
            ["ip", "link", "add", "name", self.bridge, "type", "bridge"],
            ["ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge],
            ["ip", "link", "set", self.bridge, "up"],
        ):
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise ControlPlaneError(f"bridge {self.bridge}: {' '.join(argv[1:])}: {done.stderr.strip()}")

    def _dns(self) -> None:
        """CoreDNS on the gateway's port 53: the cluster domain from the API server's Services and
        EndpointSlices, as a cluster's DNS add-on serves it (a host process here, as kube-proxy is)."""
        health, ready = free_port(), free_port()
        corefile = self.workdir / "Corefile"
        corefile.write_text(
            f""".:53 {{
    bind {self.gateway}
    errors
    health 127.0.0.1:{health}
    ready 127.0.0.1:{ready}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {self.cp.kubeconfig_path}
        fallthrough in-addr.arpa ip6.arpa
    }}
}}
"""
        )
        self._spawn("coredns", [str(tool_path("coredns")), "-conf", str(corefile)])
        self._wait(lambda: httpx.get(f"http://127.0.0.1:{ready}/ready", timeout=2).status_code == 200, "CoreDNS")

    def _kube_proxy(self) -> None:
        assert self.cp.authority is not None
        cert = self.cp.authority.issue_client("system:kube-proxy", (), f"kube-proxy-{self.name}")
        kubeconfig = self.workdir / "kube-proxy.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(self._kubeconfig("kube-proxy", cert)))
        healthz = free_port()
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "mode": "iptables",
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "hostnameOverride": self.name,
            "clusterCIDR": self.pod_cidr,
            "healthzBindAddress": f"127.0.0.1:{healthz}",
            "metricsBindAddress": f"127.0.0.1:{free_port()}",
            # the machine's conntrack limits and timeouts are the machine's: none written
            "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            # no NodePort on 127.0.0.1 (that needs route_localnet on every interface)
            "iptables": {"localhostNodePorts": False},
        }
        path = self.workdir / "kube-proxy.yaml"
        path.write_text(yaml.safe_dump(config))
        self._spawn("kube-proxy", [str(tool_path("kube-proxy")), "--config", str(path), "--v", "1"])
        self._wait(lambda: httpx.get(f"http://127.0.0.1:{healthz}/healthz", timeout=2).status_code == 200, "kube-proxy")

    def _kubeconfig(self, user: str, cert: Any) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "node",
            "clusters": [{"name": "loopback", "cluster": {"server": self.cp.server, "insecure-skip-tls-verify": True}}],
            "users": [{"name": user, "user": {"client-certificate": str(cert.cert), "client-key": str(cert.key)}}],
            "contexts": [{"name": "node", "context": {"cluster": "loopback", "user": user}}],
        }

    def _containerd(self) -> None:
        state = self.workdir / "containerd"
        cni_conf = self.workdir / "cni" / "net.d"
        cni_conf.mkdir(parents=True)
        network = {
            "cniVersion": "1.0.0",
            "name": f"greenops-{self.bridge}",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": self.bridge,
                    "isGateway": True,
                    "hairpinMode": True,  # a pod reaches itself through its own Service
                    "ipMasq": False,  # no iptables rule: the host reaches the pods on the bridge
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": self.pod_cidr, "gateway": self.gateway}]],
                        # through the gateway: ClusterIPs (kube-proxy's DNAT) and the API server
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(self.workdir / "cni" / "ipam"),
                    },
                }
            ],
        }
        cni_conf.joinpath("10-greenops.conflist").write_text(json.dumps(network))
        config = f"""
version = 2
root = "{state}/root"
state = "{state}/state"
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{self.socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{state}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{self.workdir / "certs.d"}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{cni_conf}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{state}/runc"
"""
        path = self.workdir / "containerd.toml"
        path.write_text(config)
        self._spawn("containerd", ["containerd", "--config", str(path)])
        self._wait(lambda: self._ctr("version").returncode == 0, "containerd")

    def _ctr(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args],
            capture_output=True,
            text=True,
            check=False,
        )

    def _import_sandbox_image(self) -> None:
        """The pause image, built here with umoci from tools/go/pause, imported into containerd."""
        build = self.workdir / "pause-image"
        rootfs = build / "rootfs"
        rootfs.mkdir(parents=True)
        shutil.copy2(tool_path("pause"), rootfs / "pause")
        layer = build / "layer.tar"
        with tarfile.open(layer, "w") as tar:
            tar.add(rootfs / "pause", arcname="pause")
        layout, image = build / "layout", f"{build / 'layout'}:1"
        for argv in (
            ["umoci", "init", "--layout", str(layout)],
            ["umoci", "new", "--image", image],
            ["umoci", "raw", "add-layer", "--image", image, str(layer)],
            ["umoci", "config", "--image", image, "--config.entrypoint=/pause", "--config.user=65535:65535"],
        ):
            subprocess.run(argv, check=True, capture_output=True)
        name, tag = SANDBOX_IMAGE.rsplit(":", 1)
        self.import_layout(layout, tag, name)
        if SANDBOX_IMAGE not in self._ctr("images", "ls", "-q").stdout:
            raise ControlPlaneError(f"the sandbox image {SANDBOX_IMAGE} is not in containerd after its import")

    def import_layout(self, layout: Path, tag: str, name: str) -> None:
        """An OCI layout's image ``tag`` imported as ``name:tag`` (an image built here)."""
        archive = self.workdir / f"{uuid.uuid4().hex}.tar"
        with tarfile.open(archive, "w") as tar:
            for entry in layout.iterdir():
                tar.add(entry, arcname=entry.name)
        done = self._ctr("images", "import", "--base-name", name, str(archive))
        archive.unlink()
        if done.returncode != 0:
            raise ControlPlaneError(f"image {name}:{tag} was not imported: {done.stderr.strip()}")

    def _kubelet(self) -> None:
        assert self.cp.authority is not None
        address = host_address()
        cert = self.cp.authority.issue_client(f"system:node:{self.name}", ("system:nodes",), f"kubelet-{self.name}")
        kubeconfig_path = self.workdir / "kubelet.kubeconfig"
        kubeconfig_path.write_text(yaml.safe_dump(self._kubeconfig("kubelet", cert)))
        config: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            # the node's address (a kubelet refuses a loopback one): the API server reaches it for
            # logs and exec; every request to it is authenticated (no anonymous, no read-only port)
            "address": address,
            "port": free_port(),
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": free_port(),
            # the API server presents a certificate of the same authority (logs, exec), others a token
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(self.cp.authority.cert_path)},
            },
            "authorization": {"mode": "Webhook"},
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup_root,
            "failCgroupV1": False,
            "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "podCIDR": self.pod_cidr,
            "resolvConf": "/etc/resolv.conf",
            "clusterDNS": [self.gateway],
            "clusterDomain": CLUSTER_DOMAIN,
            "registerNode": True,
            # no KUBE-FIREWALL of its own in the host's tables: kube-proxy's rules are the node's
            "makeIPTablesUtilChains": False,
            "serializeImagePulls": False,
            # a test machine's disk is what it is: no eviction for it
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "0%", "imagefs.available": "0%"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "localStorageCapacityIsolation": False,
            "shutdownGracePeriod": "0s",
        }
        config_path = self.workdir / "kubelet.yaml"
        config_path.write_text(yaml.safe_dump(config))
        self.healthz = f"http://127.0.0.1:{config['healthzPort']}/healthz"
        self._spawn(
            "kubelet",
            [
                str(tool_path("kubelet")),
                "--config",
                str(config_path),
                "--kubeconfig",
                str(kubeconfig_path),
                "--root-dir",
                str(self.workdir / "kubelet"),
                "--cert-dir",
                str(self.workdir / "kubelet-pki"),
                "--hostname-override",
                self.name,
                "--node-ip",
                address,
                "--v",
                "1",
            ],
        )

    def wait_ready(self) -> None:
        def ready() -> bool:
            with self.cp.client() as k:
                r = k.get(f"/api/v1/nodes/{self.name}")
            conditions = (r.json().get("status") or {}).get("conditions") or [] if r.status_code == 200 else []
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        self._wait(ready, "the kubelet's Node")

    def _drain(self) -> None:
        """Every pod of this node deleted at once, and its sandbox torn down by the kubelet (the CNI
        plugin gives back its address and its veth) before anything stops."""
        if "kubelet" not in self._procs or self._procs["kubelet"].poll() is not None:
            return
        try:
            with self.cp.client() as k:
                pods = k.get("/api/v1/pods", params={"fieldSelector": f"spec.nodeName={self.name}"}).json()
                for pod in pods.get("items") or []:
                    meta = pod["metadata"]
                    k.delete(
                        f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", params={"gracePeriodSeconds": 0}
                    )
        except Exception:  # noqa: BLE001 - the API server may be gone already: the reaper below still runs
            return
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self._ctr("tasks", "ls", "-q").stdout.strip():
            time.sleep(0.5)

    def _unmount(self) -> None:
        for target in sorted(self.leftover_mounts(), key=len, reverse=True):
            subprocess.run(["umount", "-l", target], capture_output=True, check=False)

    def _own_netns(self) -> list[str]:
        if not NETNS.exists():
            return []
        new = [n for n in os.listdir(NETNS) if n.startswith("cni-") and n not in self._netns_before]
        # another node's pod holds its own: only a namespace no process is in is left over
        return [n for n in new if not _netns_pids(n)]

    def _spawn(self, name: str, argv: list[str]) -> None:
        with (self.workdir / f"{name}.log").open("wb") as log:  # the child keeps its own descriptor
            self._procs[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )

    def _wait(self, check: Any, what: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            for name, proc in self._procs.items():
                if proc.poll() is not None:
                    tail = (self.workdir / f"{name}.log").read_text(errors="replace")[-3000:]
                    raise ControlPlaneError(f"{name} exited with code {proc.returncode}:\n{tail}")
            try:
                if check():
                    return
            except Exception:  # noqa: BLE001, S110 - not up yet
                pass
            time.sleep(0.5)
        tails = {n: (self.workdir / f"{n}.log").read_text(errors="replace")[-1500:] for n in self._procs}
        raise ControlPlaneError(f"{what} was not ready within {self.startup_timeout:.0f}s: {tails}")


def reap_stale(parent: Path) -> list[Path]:
    """Take down the nodes under ``parent`` whose owner process is gone (a test run killed before
    its stop ran): the same stop, from what each one wrote when it started. The folders reaped."""
    reaped = []
    for folder in parent.glob("greenops-node-*"):
        try:
            state = json.loads(folder.joinpath(STATE).read_text())
            os.kill(int(state["owner"]), 0)
            continue  # its owner still runs: its own stop is to come
        except ProcessLookupError:
            pass
        except (OSError, ValueError, KeyError):
            continue  # not started (no state yet), or not ours to judge
        node = LocalNode.__new__(LocalNode)
        node.cp, node.name, node.workdir = None, state["name"], folder  # type: ignore[assignment]
        node._procs, node._netns_before = {}, set(state.get("netns_before") or [])
        node.__post_init__()
        node.stop()
        reaped.append(folder)
    if reaped:
        _clear_rules_if_free()
    return reaped


def _clear_rules_if_free() -> None:
    """The host's kube-proxy rules cleared when no live node holds the lock (its rules are its own)."""
    if not PROXY_LOCK.exists():
        return
    fd = os.open(PROXY_LOCK, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # a live node (maybe the caller's own start) holds it
    else:
        clear_proxy_rules()
    finally:
        os.close(fd)


SAVERS = ("iptables-save", "ip6tables-save", "iptables-legacy-save", "ip6tables-legacy-save")
# the chains a kubelet makes when asked to (makeIPTablesUtilChains; ours is not), cleared after a
# run whose kubelet did: "table": chains, with the built-in chains that jump to them
KUBELET_CHAINS = {
    "filter": (("KUBE-FIREWALL", "KUBE-KUBELET-CANARY"), ("INPUT", "OUTPUT")),
    "mangle": (("KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"), ()),
    "nat": (("KUBE-KUBELET-CANARY",), ()),
}


def proxy_rules() -> list[str]:
    """Every KUBE-* rule and chain in the host's tables, from both families and both backends."""
    found = []
    for save in SAVERS:
        if shutil.which(save) is None:
            continue
        out = subprocess.run([save], capture_output=True, text=True, check=False).stdout
        found += [f"{save}: {line}" for line in out.splitlines() if "KUBE-" in line]
    return found


def clear_proxy_rules() -> None:
    """kube-proxy's own cleanup (its iptables, ipvs and nftables state), then a kubelet's chains.
    Only by the lock's holder."""
    if not proxy_rules():
        return
    subprocess.run([str(tool_path("kube-proxy")), "--cleanup", "--v", "0"], capture_output=True, check=False)
    for tool in ("iptables", "ip6tables"):
        if shutil.which(tool) is None:
            continue
        for table, (chains, builtins) in KUBELET_CHAINS.items():
            for builtin in builtins:
                for chain in chains:
                    subprocess.run([tool, "-t", table, "-D", builtin, "-j", chain], capture_output=True, check=False)
            for chain in chains:
                subprocess.run([tool, "-t", table, "-F", chain], capture_output=True, check=False)
                subprocess.run([tool, "-t", table, "-X", chain], capture_output=True, check=False)


def _netns_pids(name: str) -> str:
    return subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, check=False).stdout.strip()


def _controllers() -> list[Path]:
    """The mounted cgroup v1 hierarchies (named ones, like systemd's, included)."""
    return [p for p in CGROUP_V1.iterdir() if p.is_dir() and p.name != "unified" and (p / "cgroup.procs").exists()]


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
