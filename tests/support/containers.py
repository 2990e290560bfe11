"""Starting an image the way a kubelet's runtime would: unpacked by umoci, run by runc (Debian's),
as the image's user, with a read-only root, no capabilities, no new privileges and a tmpfs /tmp.
The host's network namespace is kept, so a server in the container is reached on loopback."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


def unpack(layout: Path, tag: str, bundle: Path) -> Path:
    subprocess.run(["umoci", "unpack", "--image", f"{layout}:{tag}", str(bundle)], check=True, capture_output=True)
    return bundle


def _configure(bundle: Path, args: Sequence[str] | None, env: dict[str, str]) -> dict:
    config = json.loads(bundle.joinpath("config.json").read_text())
    process = config["process"]
    process["terminal"] = False
    process["noNewPrivileges"] = True
    process["capabilities"] = {k: [] for k in ("bounding", "effective", "permitted", "ambient")}
    if args is not None:
        process["args"] = list(args)
    process["env"] = [*process.get("env", []), *(f"{k}={v}" for k, v in env.items())]
    config["root"]["readonly"] = True
    config["mounts"].append(
        {
            "destination": "/tmp",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "nodev", "mode=1777", "size=64m"],
        }
    )
    config["linux"]["namespaces"] = [n for n in config["linux"]["namespaces"] if n["type"] != "network"]
    bundle.joinpath("config.json").write_text(json.dumps(config))
    return config


def run(
    bundle: Path, args: Sequence[str] | None = None, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the bundle's process (or ``args``) to its end."""
    _configure(bundle, args, env or {})
    name = f"greenops-test-{uuid.uuid4().hex[:12]}"
    try:
        return subprocess.run(["runc", "run", name], cwd=bundle, capture_output=True, text=True, timeout=timeout)
    finally:
        subprocess.run(["runc", "delete", "--force", name], capture_output=True)


@contextmanager
def started(
    bundle: Path, args: Sequence[str] | None = None, env: dict[str, str] | None = None
) -> Iterator[tuple[str, Path]]:
    """The bundle's process running in the background: its container name and its log file."""
    _configure(bundle, args, env or {})
    name = f"greenops-test-{uuid.uuid4().hex[:12]}"
    log_path = bundle.parent / f"{name}.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(["runc", "run", name], cwd=bundle, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield name, log_path
        finally:
            subprocess.run(["runc", "kill", name, "KILL"], capture_output=True)
            process.wait(timeout=30)
            subprocess.run(["runc", "delete", "--force", name], capture_output=True)


def process_ids(name: str) -> tuple[int, int]:
    """The real uid and gid of the container's first process, as the kernel reports them."""
    state = json.loads(subprocess.run(["runc", "state", name], capture_output=True, text=True, check=True).stdout)
    status = Path(f"/proc/{state['pid']}/status").read_text().splitlines()
    uid = next(line.split()[1] for line in status if line.startswith("Uid:"))
    gid = next(line.split()[1] for line in status if line.startswith("Gid:"))
    return int(uid), int(gid)
