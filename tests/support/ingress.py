"""An NGINX ingress data plane on loopback, configured from Ingress objects as an NGINX ingress
controller would: one TLS server per rule host (SNI), its certificate from the Ingress's TLS Secret,
each path proxied to the backend Service, over HTTPS when the Ingress says the backend speaks it
(``nginx.ingress.kubernetes.io/backend-protocol: HTTPS``). An unknown host name is refused at the
handshake. Request headers, the bearer token among them, pass through as the controller passes them.

There are no Services on loopback: ``backends`` maps each (namespace, service, port) to the
address of the real server standing in for it.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from greenops.common.errors import GreenOpsError
from greenops.local.controlplane import free_port
from greenops.local.service import ProcessService

BACKEND_PROTOCOL = "nginx.ingress.kubernetes.io/backend-protocol"


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)


@dataclass
class NginxIngress(ProcessService):
    ingresses: list[dict] = field(default_factory=list)
    secrets: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # (ns, name) -> stringData
    backends: dict[tuple[str, str, int], str] = field(default_factory=dict)  # (ns, service, port) -> host:port
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-ingress-")))
    name = "nginx"

    def start(self) -> None:
        binary = nginx_binary()
        if binary is None:
            raise GreenOpsError("nginx is not installed: make ingress")
        self.port = self.port or free_port()
        conf = self.workdir / "nginx.conf"
        conf.write_text(self.config())
        self._launch([binary, "-p", str(self.workdir), "-c", str(conf), "-e", "stderr"], self.workdir / "nginx.log")
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise GreenOpsError(f"nginx exited with code {self._proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise GreenOpsError(f"nginx did not listen within {self.startup_timeout:.0f}s: {self.log.read_text()[-2000:]}")

    def config(self) -> str:
        listen = f"listen 127.0.0.1:{self.port} ssl"
        temp = "\n".join(
            f"  {kind}_temp_path {self.workdir / kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        servers = [f"  server {{ {listen} default_server; ssl_reject_handshake on; }}"]
        for ingress in self.ingresses:
            ns = ingress["metadata"]["namespace"]
            scheme = (
                "https" if (ingress["metadata"].get("annotations") or {}).get(BACKEND_PROTOCOL) == "HTTPS" else "http"
            )
            certs = {
                host: self._certificate(ns, tls["secretName"])
                for tls in ingress["spec"].get("tls", [])
                for host in tls["hosts"]
            }
            for rule in ingress["spec"]["rules"]:
                if rule["host"] not in certs:
                    raise GreenOpsError(
                        f"Ingress {ns}/{ingress['metadata']['name']}: host {rule['host']} has no TLS entry"
                    )
                crt, key = certs[rule["host"]]
                locations = []
                for path in rule["http"]["paths"]:
                    service = path["backend"]["service"]
                    address = self.backends[(ns, service["name"], service["port"]["number"])]
                    locations.append(
                        f"    location {path['path']} {{ proxy_pass {scheme}://{address}; "
                        "proxy_set_header Host $host; }"
                    )
                servers.append(
                    f"  server {{\n    {listen};\n    server_name {rule['host']};\n"
                    f"    ssl_certificate {crt};\n    ssl_certificate_key {key};\n" + "\n".join(locations) + "\n  }"
                )
        user = "user root;\n" if os.geteuid() == 0 else ""  # workers would drop to nobody, who cannot read workdir
        return (
            f"{user}daemon off;\nworker_processes 1;\npid {self.workdir / 'nginx.pid'};\nevents {{}}\nhttp {{\n"
            f"  access_log {self.workdir / 'access.log'};\n{temp}\n" + "\n".join(servers) + "\n}\n"
        )

    def _certificate(self, namespace: str, secret: str) -> tuple[Path, Path]:
        data = self.secrets[(namespace, secret)]
        crt, key = self.workdir / f"{namespace}-{secret}.crt", self.workdir / f"{namespace}-{secret}.key"
        crt.write_text(data["tls.crt"])
        key.write_text(data["tls.key"])
        key.chmod(0o600)
        return crt, key

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
