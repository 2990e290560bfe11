"""The release's two non-image artifacts in OCI form: the VmTemplate chart (helm package / push)
and the policy bundle (an OCI image whose one tar+gzip layer is the bundle, which OPA's
``type: oci`` service pulls)."""

from __future__ import annotations

import re
import shutil
import tarfile
from pathlib import Path

from greenops import __version__
from release.layers import normalize_tar_gz, tar_layer
from release.oci import Built, Layer, pack
from release.run import PROJECT, ReleaseError, sh, tool
from release.spec import ImageSpec, Source

CHART_DIR = PROJECT / "components" / "charts" / "vm-template"
POLICY = ImageSpec(
    name="greenops-policy",
    tag=__version__,
    title="greenops policy bundle (OPA, type: oci)",
    pin="",
)


def package_chart(out: Path, epoch: int) -> Path:
    """``helm package`` of the VmTemplate chart into ``out``, its times set to ``epoch``."""
    out.mkdir(parents=True, exist_ok=True)
    text = sh("chart package", [tool("helm"), "package", CHART_DIR, "--destination", out])
    return normalize_tar_gz(Path(text.strip().rsplit(": ", 1)[-1]), epoch)


def push_chart(package: Path, registry: str) -> str:
    """``helm push`` to ``oci://<registry>/charts``: the digest helm reports."""
    plain = ["--plain-http"] if registry.startswith(("127.0.0.1:", "localhost:")) else []
    said = sh(
        f"chart push {package.name}",
        [tool("helm"), "push", package, f"oci://{registry}/charts", *plain],
        with_stderr=True,
    )
    found = re.search(r"Digest: (sha256:[0-9a-f]{64})", said)
    if not found:
        raise ReleaseError(f"helm push {package.name}: no digest in its output: {said.strip()}")
    return found.group(1)


def policy_bundle(work: Path, source: Source) -> Built:
    """The policy bundle (``opa build``, as the platform ships it) as an OCI image in ``work``."""
    from greenops.policies.bundle import build

    scratch = work / "policy"
    shutil.rmtree(scratch, ignore_errors=True)
    bundle = build(scratch / "bundle.tar.gz", f"{__version__}+{source.revision[:12]}")
    files = scratch / "files"
    with tarfile.open(bundle) as archive:
        archive.extractall(files, filter="data")
    layer = Layer(tar_layer(files, scratch / "bundle.tar", source.epoch), "opa build --bundle")
    built = pack(POLICY, [layer], work / "oci" / POLICY.name, source)
    shutil.rmtree(scratch)
    return built
