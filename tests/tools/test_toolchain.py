"""Smoke tests of the pinned toolchain: real binaries, real engine, real control plane."""

from __future__ import annotations

import json
import os
import subprocess
from importlib.metadata import version as dist_version
from pathlib import Path

import pytest
import yaml

from greenops.common.toolpaths import REPO, TOOLS_BIN, pulumi_env
from greenops.engine import automation
from greenops.local.controlplane import LocalControlPlane

pytestmark = pytest.mark.tools


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, check=True, env=pulumi_env(), **kw).stdout


def test_pulumi_cli_matches_the_python_sdk(tools):
    assert run([tools["pulumi"], "version"]).strip() == "v" + dist_version("pulumi")


def test_kubernetes_plugin_matches_the_python_package(tools):
    plugins = run([tools["pulumi"], "plugin", "ls", "--json"])
    versions = {(p["name"], p["kind"]): p["version"] for p in json.loads(plugins)}
    assert versions[("kubernetes", "resource")] == dist_version("pulumi-kubernetes")


def test_opa_evaluates_rego(tools, tmp_path):
    assert run([tools["opa"], "version"]).startswith("Version: 1.")
    policy = tmp_path / "p.rego"
    policy.write_text("package smoke\nimport rego.v1\nallow if input.cpu <= 4\n")
    out = run([tools["opa"], "eval", "-d", str(policy), "-I", "-f", "raw", "data.smoke.allow"], input='{"cpu": 2}')
    assert out.strip() == "true"


def test_helm_reports_a_current_kubernetes(tools, tmp_path):
    assert run([tools["helm"], "version", "--short"]).startswith("v3.")
    chart = tmp_path / "c"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kv}\ndata: "
        "{minor: {{ .Capabilities.KubeVersion.Minor | quote }}}\n"
    )
    out = run([tools["helm"], "template", str(chart)])
    minor = int(yaml.safe_load(out)["data"]["minor"])
    assert minor >= 30, out  # an unset version makes helm assume Kubernetes 1.20


def test_pulumi_engine_runs_a_dynamic_resource_and_renders_kubernetes_yaml(tools, tmp_path):
    """Real CLI + the python dynamic-provider shim + the Kubernetes plugin in render mode."""

    tools["pulumi"], tools["pulumi-resource-kubernetes"], tools["pulumi-resource-pulumi-python"]
    rendered = tmp_path / "rendered"

    def program():
        import pulumi
        import pulumi_kubernetes as k8s

        from tests.tools.echo_provider import Echo

        echo = Echo("echo", value="green")
        renderer = k8s.Provider("render", render_yaml_to_directory=str(rendered))
        k8s.core.v1.ConfigMap(
            "cm",
            metadata={"name": "smoke", "namespace": "default"},
            data={"echoed": echo.echoed},
            opts=pulumi.ResourceOptions(provider=renderer),
        )
        pulumi.export("echoed", echo.echoed)

    env = {
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PYTHONPATH": str(REPO),  # the provider process imports tests.tools.echo_provider
    }
    (tmp_path / "state").mkdir()
    stack = automation.inline_stack("smoke", program, tmp_path, env, project="greenops-smoke")
    try:
        preview = stack.preview()
        assert preview.change_summary.get("create") == 4  # stack, echo, provider, configmap
        up = stack.up()
        assert up.outputs["echoed"].value == "GREEN"
        manifest = (rendered / "1-manifest" / "v1-configmap-default-smoke.yaml").read_text()
        assert "echoed: GREEN" in manifest
        again = stack.preview()
        assert set(again.change_summary) == {"same"}
    finally:
        stack.destroy()
        stack.workspace.remove_stack("smoke")


def test_local_control_plane_accepts_a_crd_and_a_custom_object_and_tears_down(tools):
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.smoke.greenops.io"},
        "spec": {
            "group": "smoke.greenops.io",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
                        }
                    },
                }
            ],
        },
    }
    tools["etcd"], tools["kube-apiserver"]
    with LocalControlPlane() as cp:
        pids, workdir = cp.pids, cp.workdir
        with cp.client() as k:
            assert k.get("/readyz").text == "ok"
            cp.create_crd(crd)
            obj = {
                "apiVersion": "smoke.greenops.io/v1",
                "kind": "Widget",
                "metadata": {"name": "w1"},
                "spec": {"size": 3},
            }
            r = k.post("/apis/smoke.greenops.io/v1/namespaces/default/widgets", json=obj)
            assert r.status_code == 201, r.text
            assert k.get("/apis/smoke.greenops.io/v1/namespaces/default/widgets/w1").json()["spec"] == {"size": 3}
            bad = dict(obj, metadata={"name": "w2"}, spec={"size": "big"})
            assert k.post("/apis/smoke.greenops.io/v1/namespaces/default/widgets", json=bad).status_code == 422
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    assert not workdir.exists()
    assert os.path.isdir(TOOLS_BIN)


def test_pulumi_cli_previews_a_python_project_through_the_language_host(tools, tmp_path):
    """`pulumi preview` and `up` from the CLI: language host, program runner, dynamic shim, plugin."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(
        f"name: greenops-cli-smoke\nruntime:\n  name: python\n  options:\n    virtualenv: {REPO / '.venv'}\n"
    )
    (project / "__main__.py").write_text(
        "import pulumi, pulumi_kubernetes as k8s\n"
        "from tests.tools.echo_provider import Echo\n"
        "echo = Echo('echo', value=pulumi.Config().require('word'))\n"
        f"renderer = k8s.Provider('render', render_yaml_to_directory={str(tmp_path / 'out')!r})\n"
        "k8s.core.v1.ConfigMap('cm', metadata={'name': 'cli', 'namespace': 'default'}, data={'w': echo.echoed},\n"
        "                      opts=pulumi.ResourceOptions(provider=renderer))\n"
        "pulumi.export('echoed', echo.echoed)\n"
    )
    (tmp_path / "state").mkdir()
    env = pulumi_env({"PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}", "PYTHONPATH": str(REPO)})

    def pulumi(*args):
        return subprocess.run(
            [tools["pulumi"], *args, "--non-interactive", "--cwd", str(project)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    assert pulumi("stack", "init", "dev").returncode == 0
    assert pulumi("config", "set", "word", "cli").returncode == 0
    preview = pulumi("preview", "--json")
    assert preview.returncode == 0, preview.stderr + preview.stdout
    steps = json.loads(preview.stdout)["steps"]
    assert {s["urn"].rsplit("::", 1)[1] for s in steps if s["op"] == "create"} >= {"echo", "render", "cm"}
    up = pulumi("up", "--yes", "--skip-preview")
    assert up.returncode == 0, up.stderr + up.stdout
    assert pulumi("stack", "output", "echoed").stdout.strip() == "CLI"
    assert "w: CLI" in (tmp_path / "out" / "1-manifest" / "v1-configmap-default-cli.yaml").read_text()
    bad = pulumi("config", "rm", "word"), pulumi("preview")
    assert bad[1].returncode != 0 and "Missing required configuration variable" in bad[1].stdout + bad[1].stderr
    assert pulumi("destroy", "--yes").returncode == 0
