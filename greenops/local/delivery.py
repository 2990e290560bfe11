"""What a placed VM is given to run, read back from the object its operator would take, and run
here: the demo's proof that a workload's ``run.script`` reaches its VM byte for byte.

No VM boots on this machine, so the script runs in a scratch directory instead, from the cloud-init
user-data the renderer put in the VM object (ASO ``osProfile.customData``, Config Connector's
``user-data`` metadata item, ACK ``userData``), after cloud-init's own schema check when cloud-init
is installed (``make cloud-init``).
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from greenops.renderers.user_data import RUN_SCRIPT

RUN_SECONDS = 30  # a demo script that takes longer is cut off and says so


@dataclass(frozen=True)
class Delivered:
    field: str  # where the object carries it
    user_data: str  # the cloud-config text

    def script(self) -> str:
        """The script the cloud-config writes to RUN_SCRIPT and runs."""
        config = yaml.safe_load(self.user_data)
        for item in config.get("write_files") or []:
            if item.get("path") == RUN_SCRIPT:
                content = item["content"]
                return base64.b64decode(content).decode() if item.get("encoding") == "b64" else str(content)
        raise ValueError(f"the user-data writes no {RUN_SCRIPT}")


def delivered(obj: dict[str, Any]) -> Delivered | None:
    """The user-data an ASO VirtualMachine, a Config Connector ComputeInstance or an ACK Instance
    carries; None when it carries none."""
    spec = obj.get("spec") or {}
    kind = obj.get("kind")
    if kind == "VirtualMachine" and (custom := (spec.get("osProfile") or {}).get("customData")):
        return Delivered("spec.osProfile.customData", base64.b64decode(custom).decode())
    if kind == "ComputeInstance":
        for item in (spec.get("metadata") or {}).get("items") or []:
            if item.get("key") == "user-data":
                return Delivered("spec.metadata.items[user-data]", str(item["value"]))
    if kind == "Instance" and (data := spec.get("userData")):
        return Delivered("spec.userData", base64.b64decode(data).decode())
    return None


def schema_check(user_data: str) -> str:
    """cloud-init's verdict on the user-data, or why it was not asked."""
    tool = shutil.which("cloud-init")
    if tool is None:
        return "not checked: cloud-init is not installed (make cloud-init)"
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as fh:
        fh.write(user_data)
        fh.flush()
        done = subprocess.run([tool, "schema", "-c", fh.name], capture_output=True, text=True, timeout=60)
    return "valid (cloud-init schema)" if done.returncode == 0 else f"INVALID: {done.stdout.strip()}"


def run_here(script: str, workdir: Path) -> tuple[int | None, str]:
    """Run ``script`` with sh in ``workdir``: its exit status (None: cut off) and its output."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "run.sh"
    path.write_text(script)
    try:
        done = subprocess.run(
            ["sh", str(path)], cwd=workdir, capture_output=True, text=True, timeout=RUN_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        return None, f"cut off after {RUN_SECONDS} s"
    return done.returncode, (done.stdout + done.stderr).strip()
