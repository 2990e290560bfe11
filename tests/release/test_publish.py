"""Publishing to a real registry on loopback (CNCF distribution): every artifact pushed, pulled back
by digest and checked; signed with an offline key pair and verified, and refused for another key or
other content; OPA pulls the policy bundle by digest; the pins name exactly what was built."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from components.platform_config import PolicyEngineConfig
from components.policy_engine import opa_config
from greenops.common.toolpaths import tool_path
from greenops.local.controlplane import free_port
from greenops.policies import ADMIN_TOKEN_VARIABLE, QUERY_TOKEN_VARIABLE
from release import artifacts, pins, registry, sign, steps
from release.run import ReleaseError

REPOSITORY = "greenops-platform"


@pytest.fixture(scope="module")
def published(built, local_registry, tmp_path_factory):
    out, _ = built
    to = f"{local_registry}/{REPOSITORY}"
    manifest = steps.publish(out, to)
    key, public = sign.generate_key_pair(tmp_path_factory.mktemp("keys"))
    steps.sign_all(out, to, key)
    return out, to, manifest, public


def test_every_artifact_is_served_by_its_digest(published):
    _, to, manifest, _ = published
    references = manifest["published"]["references"]
    assert set(references) == {*manifest["images"], artifacts.POLICY.name, "chart"}
    for name, entry in {**manifest["images"], artifacts.POLICY.name: manifest["policy"]}.items():
        assert references[name] == f"{to}/{name}@{entry['digest']}"
        assert registry.remote_digest(references[name]) == entry["digest"]
    assert registry.remote_digest(references["chart"]) == manifest["chart"]["digest"]


def test_signatures_and_sboms_verify_with_the_release_key(published):
    out, to, manifest, public = published
    steps.verify_all(out, to, public)
    envelope = json.loads(sign.verify_sbom(manifest["published"]["references"]["greenops"], public).splitlines()[0])
    import base64

    statement = json.loads(base64.b64decode(envelope["payload"]))
    components = {c["name"] for c in statement["predicate"]["components"]}
    # the SBOM lists the venv's packages and Debian's
    assert {"greenops-platform", "fastapi", "python3"} <= components
    python_sbom = json.loads((out / "sbom" / "python-environment.cdx.json").read_text())
    assert {"pulumi", "fastapi"} <= {c["name"] for c in python_sbom["components"]}


def test_another_key_is_refused(published, tmp_path):
    _, _, manifest, _ = published
    _, stranger = sign.generate_key_pair(tmp_path)
    with pytest.raises(ReleaseError, match="verifying"):
        sign.verify(manifest["published"]["references"]["opa"], stranger)


def test_changed_content_under_the_signed_tag_is_refused(published, tmp_path):
    """Someone pushes other content under the release's tag: it carries no signature of the key."""
    _, to, manifest, public = published
    layout = Path(manifest["images"]["bundle-init"]["layout"])
    changed = tmp_path / "changed"
    shutil.copytree(layout, changed)
    subprocess.run(
        ["umoci", "config", "--image", f"{changed}:{manifest['images']['bundle-init']['tag']}", "--config.label=x=y"],
        check=True,
        capture_output=True,
    )
    tag = manifest["images"]["bundle-init"]["tag"]
    registry.push(f"{changed}:{tag}", f"{to}/bundle-init:{tag}")
    with pytest.raises(ReleaseError, match="no signatures found|no matching signatures"):
        sign.verify(f"{to}/bundle-init:{tag}", public)
    # the signed digest still verifies: the pin names content, not a tag
    sign.verify(manifest["published"]["references"]["bundle-init"], public)


def test_the_pins_name_what_was_built_and_a_changed_pin_is_caught(published, tmp_path):
    out, _, manifest, _ = published
    versions = tmp_path / "versions.yaml"
    shutil.copy(pins.VERSIONS_FILE, versions)
    written = steps.pin(out, "registry.example.com/platform", versions)
    for name, entry in manifest["images"].items():
        reference = f"registry.example.com/platform/{name}:{entry['tag']}@{entry['digest']}"
        assert written[entry["pin"]] == reference
        assert pins.read_pin(entry["pin"], versions) == reference
    assert steps.pin_mismatches(out, "registry.example.com/platform", versions) == []
    text = versions.read_text().replace(manifest["images"]["opa"]["digest"], "sha256:" + "0" * 64)
    versions.write_text(text)
    opa = f"registry.example.com/platform/opa:{manifest['images']['opa']['tag']}"
    assert steps.pin_mismatches(out, "registry.example.com/platform", versions) == [
        f"opa_image: pinned {opa}@sha256:{'0' * 64}, built {opa}@{manifest['images']['opa']['digest']}"
    ]


def test_opa_pulls_the_policy_bundle_by_digest(published, tmp_path):
    """The platform's own OPA configuration (bundleServiceType: oci) against the registry."""
    _, to, manifest, _ = published
    host = to.split("/", 1)[0]
    config = opa_config(
        PolicyEngineConfig(
            bundle_service_url=f"http://{host}",
            bundle_service_type="oci",
            bundle_resource=manifest["published"]["references"][artifacts.POLICY.name],
        )
    )
    config["persistence_directory"] = str(tmp_path / "persist")
    (tmp_path / "config.json").write_text(json.dumps(config))
    port = free_port()
    admin = secrets.token_hex(24)
    env = {**os.environ, ADMIN_TOKEN_VARIABLE: admin, QUERY_TOKEN_VARIABLE: secrets.token_hex(24)}
    argv = [tool_path("opa"), "run", "--server", "--addr", f"127.0.0.1:{port}", "--authentication=token"]
    argv += ["--authorization=basic", "--config-file", str(tmp_path / "config.json")]
    with open(tmp_path / "opa.log", "w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{url}/health?bundles", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.3)
            else:
                pytest.fail(f"OPA never activated the bundle: {(tmp_path / 'opa.log').read_text()[-2000:]}")
            bundles = httpx.get(f"{url}/v1/data/system/bundles", headers={"Authorization": f"Bearer {admin}"}).json()
            [loaded] = bundles["result"].values()
            assert loaded["manifest"]["revision"] == f"{manifest['version']}+{manifest['revision'][:12]}"
        finally:
            proc.terminate()
            proc.wait(timeout=10)
