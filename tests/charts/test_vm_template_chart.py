"""The vm-template chart, rendered by the real helm: guards, per-provider sets, and parity with the
Python renderers for the same decision. helm's ``now`` is the real clock, so every time here is set
relative to it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from greenops.catalog import select_size
from greenops.charts import stage_chart
from greenops.common import clock
from greenops.models import Decision, parse_duration
from greenops.renderers import RenderSettings, render, render_set
from tests.support.common import AZURE_SUBSCRIPTION, require_cloud_init, require_tool
from tests.support.common import SSH_KEY as KEY
from tests.support.references import owner_problems

pytestmark = pytest.mark.tools
# helm template's release and namespace: Krateo's are the VmTemplate's name and namespace.
RELEASE, NAMESPACE = "t", "greenops"


def stem_of(vm_name: str, namespace: str = NAMESPACE, release: str = RELEASE) -> str:
    """The chart's object-name stem (vmtemplate.stem), computed independently: vmName and the first
    8 hex digits of sha256("<namespace>/<release>")."""
    return f"{vm_name}-{hashlib.sha256(f'{namespace}/{release}'.encode()).hexdigest()[:8]}"


STEM = stem_of("parity")


def stamp(offset: timedelta = timedelta()) -> str:
    """The real clock plus ``offset``, as a schedulingTime (whole seconds, rounded down)."""
    return clock.stamp(datetime.now(UTC) + offset)


def started() -> str:
    """A start an hour ago: well inside the default 2h run. Taken per test, not at import, so a long
    session cannot run past its end."""
    return stamp(-timedelta(hours=1))


@pytest.fixture(scope="module")
def chart(tmp_path_factory):
    return stage_chart(tmp_path_factory.mktemp("chart"))


def helm_run(
    chart: Path, values: dict, namespace: str = NAMESPACE, release: str = RELEASE, extra: list[str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [require_tool("helm"), "template", release, str(chart), "-n", namespace, "-f", "-", *(extra or [])],
        input=json.dumps(values),
        capture_output=True,
        text=True,
    )


def helm_template(chart: Path, values: dict, namespace: str = NAMESPACE, release: str = RELEASE) -> list[dict]:
    result = helm_run(chart, values, namespace, release)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def values(**over) -> dict:
    v = {
        "vmName": "parity",
        "cpu": 4,
        "memory": 8,
        "duration": "2h",
        "deadline": "2030-01-01T00:00:00Z",
        "maxLatency": 2000,
        "originRegion": "westeurope",
        "tenant": "team-a",
        "sshPublicKey": KEY,
        "azureResourceGroup": "greenops-workloads",
        "azureSubscriptionId": AZURE_SUBSCRIPTION,
    }
    v.update(over)
    return {k: x for k, x in v.items() if x is not None}  # None: leave the value out


def azure_values(**over) -> dict:
    """``values`` with an Azure decision: westeurope, started an hour ago, a placeholder size."""
    return values(provider="azure", schedulingLocation="westeurope", schedulingTime=started(), vmSize="x", **over)


def canonical(objs: list[dict]) -> list[str]:
    return sorted(json.dumps(o, sort_keys=True) for o in objs)


# A script with what a careless template would break on: quotes, $, backslashes, a template-like
# brace, non-ASCII text, a line with trailing blanks, no final newline.
RUN = {"script": '#!/bin/sh\nset -eu\necho "it\'s $HOME \\n {{ .Values }}" > /var/tmp/résultat  \nexit 0'}


def python_render(
    catalog,
    make_workload,
    provider: str,
    region: str,
    start: str,
    skip_await: bool = False,
    run: dict | None = None,
    observed: dict | None = None,
    image: str | None = None,
) -> list[dict]:
    """The Python renderers' objects for the decision the chart values below describe."""
    chosen = {"run": run, "image": image}
    w = make_workload(name="parity", tenant="team-a", cpu=4, memory=8, **{k: v for k, v in chosen.items() if v})
    d = Decision(
        provider=provider,
        region=region,
        zone=catalog.region(provider, region).zone,
        scheduling_time=start,
        vm_size=select_size(catalog, provider, region, 4, 8).name,
        image=catalog.image(provider, region, w.image),
    )
    return render(
        w,
        d,
        RenderSettings(ssh_public_key=KEY, skip_await=skip_await, azure_subscription_id=AZURE_SUBSCRIPTION),
        observed=observed,
        stem=STEM,
    )


@pytest.mark.parametrize(
    "provider,region",
    [
        ("azure", "swedencentral"),
        ("azure", "italynorth"),
        ("gcp", "europe-west9"),
        ("gcp", "us-central1"),
        ("aws", "eu-north-1"),
        ("aws", "us-east-1"),
    ],
)
@pytest.mark.parametrize("skip_await", [False, True])
@pytest.mark.parametrize("run", [None, RUN], ids=["no-run", "run"])
def test_chart_matches_the_python_renderers(chart, catalog, make_workload, provider, region, skip_await, run):
    start = started()
    python = python_render(catalog, make_workload, provider, region, start, skip_await, run)
    helm = helm_template(
        chart,
        values(
            provider=provider,
            schedulingLocation=region,
            schedulingTime=start,
            vmSize=select_size(catalog, provider, region, 4, 8).name,
            skipAwait=skip_await,
            run=run,
        ),
    )
    assert canonical(helm) == canonical(python)


@pytest.mark.parametrize(
    "provider,region",
    [("azure", "swedencentral"), ("gcp", "europe-west9"), ("aws", "eu-north-1"), ("aws", "us-east-1")],
)
@pytest.mark.parametrize("image", ["ubuntu-24.04", "debian-12"])
def test_a_named_image_renders_alike_in_python_and_the_chart(chart, catalog, make_workload, provider, region, image):
    start = started()
    python = python_render(catalog, make_workload, provider, region, start, image=image)
    size = select_size(catalog, provider, region, 4, 8).name
    helm = helm_template(
        chart, values(provider=provider, schedulingLocation=region, schedulingTime=start, vmSize=size, image=image)
    )
    assert canonical(helm) == canonical(python)
    # and it is the image named, not the default (an AWS Instance renders once its group's id is
    # reported, which helm template cannot look up: tests/e2e/test_chart_install.py installs one)
    group = {f"SecurityGroup/{STEM}-sg": {"id": "sg-0a1b2c3d"}}
    objects = (
        helm
        if provider != "aws"
        else python_render(catalog, make_workload, provider, region, start, observed=group, image=image)
    )
    vm = next(o for o in objects if o["kind"] in ("VirtualMachine", "ComputeInstance", "Instance"))
    shown, named, default = (
        json.dumps(vm["spec"]),
        catalog.image(provider, region, image),
        catalog.image(provider, region),
    )
    assert named != default
    for part in named.split(":") if provider == "azure" else [named]:
        assert json.dumps(part) in shown or part in ("latest",), (part, shown)
    assert (default.split(":")[1] if provider == "azure" else default) not in shown


def test_an_unknown_image_is_refused_by_the_charts_schema(chart):
    result = helm_run(chart, azure_values(image="windows-2022"))
    assert result.returncode != 0 and "image" in result.stderr, result.stderr


def user_data_of(objects: list[dict]) -> str | None:
    """The user-data the VM's object carries, as text (ASO and ACK take it base64)."""
    for o in objects:
        spec = o["spec"]
        if o["kind"] == "VirtualMachine" and "customData" in spec["osProfile"]:
            return base64.b64decode(spec["osProfile"]["customData"]).decode()
        if o["kind"] == "ComputeInstance":
            return {m["key"]: m["value"] for m in spec["metadata"]}.get("user-data")
        if o["kind"] == "Instance" and "userData" in spec:
            return base64.b64decode(spec["userData"]).decode()
    return None


def cloud_init_schema(text: str, folder: Path) -> subprocess.CompletedProcess:
    """cloud-init's own check of a user-data document (Debian's cloud-init: make cloud-init)."""
    path = folder / "user-data"
    path.write_text(text)
    return subprocess.run([require_cloud_init(), "schema", "--config-file", str(path)], capture_output=True, text=True)


@pytest.mark.parametrize(
    "provider,region", [("azure", "swedencentral"), ("gcp", "europe-west9"), ("aws", "eu-north-1")]
)
def test_the_run_reaches_the_vm_as_cloud_init_reads_it(chart, catalog, make_workload, provider, region, tmp_path):
    start = started()
    group = {f"SecurityGroup/{STEM}-sg": {"id": "sg-0a1b2c3d"}}  # ACK's Instance waits for its group's id
    python = user_data_of(python_render(catalog, make_workload, provider, region, start, run=RUN, observed=group))
    assert python is not None
    if provider != "aws":  # helm template cannot look the group up: tests/e2e/test_chart_install.py installs it
        chart_values = values(provider=provider, schedulingLocation=region, schedulingTime=start, vmSize="x", run=RUN)
        assert user_data_of(helm_template(chart, chart_values)) == python
    checked = cloud_init_schema(python, tmp_path)
    assert checked.returncode == 0 and "Valid cloud-config" in checked.stdout, checked.stdout + checked.stderr
    document = yaml.safe_load(python)
    [script] = document["write_files"]
    assert base64.b64decode(script["content"]).decode() == RUN["script"]  # every byte as written
    assert script["path"] in document["runcmd"][0][2] and document["power_state"]["mode"] == "poweroff"
    # and the check can fail: cloud-init refuses a document that is not in its schema
    assert cloud_init_schema(python.replace("mode: poweroff", "mode: nap"), tmp_path).returncode != 0


def test_without_a_run_no_vm_gets_user_data(chart, catalog, make_workload):
    start = started()
    for provider, region in (("azure", "swedencentral"), ("gcp", "europe-west9")):
        python = python_render(catalog, make_workload, provider, region, start)
        helm = helm_template(
            chart, values(provider=provider, schedulingLocation=region, schedulingTime=start, vmSize="x")
        )
        assert user_data_of(python) is None and user_data_of(helm) is None


@pytest.mark.crds
def test_chart_output_validates_against_the_crds(chart, crd_schemas):
    for provider, region, size in [
        ("azure", "francecentral", "Standard_F4s_v2"),
        ("gcp", "europe-west1", "e2-standard-4"),
        ("aws", "eu-west-3", "c6a.xlarge"),
    ]:
        objs = helm_template(
            chart, values(provider=provider, schedulingLocation=region, schedulingTime=started(), vmSize=size)
        )
        assert objs and [e for o in objs for e in crd_schemas.errors(o)] == []


def test_azure_owners_resolve_in_a_namespace_of_our_objects(chart):
    """The resource group is named by ARM id; only the subnet is owned by name, by our VNet."""
    objs = helm_template(chart, azure_values(azureResourceGroup="rg-ml"))
    assert owner_problems(objs) == []
    group = f"/subscriptions/{AZURE_SUBSCRIPTION}/resourceGroups/rg-ml"
    assert {o["kind"]: o["spec"]["owner"] for o in objs} == {
        "VirtualNetwork": {"armId": group},
        "VirtualNetworksSubnet": {"name": f"{STEM}-vnet"},
        "NetworkInterface": {"armId": group},
        "VirtualMachine": {"armId": group},
    }


def test_azure_without_a_subscription_fails_naming_the_vmtemplate(chart):
    """A malformed subscription or group is the schema's to refuse (test_every_string_field_...)."""
    result = helm_run(chart, azure_values(azureSubscriptionId=None))
    assert result.returncode != 0 and result.stdout == ""  # not one object, let alone half of them
    says = 'need azureSubscriptionId, the subscription of resource group greenops-workloads, as a GUID; got ""'
    assert "VmTemplate parity: " in result.stderr and says in result.stderr, result.stderr


@pytest.mark.parametrize(
    "field,value",
    [("azureSubscriptionId", "my-subscription"), ("azureResourceGroup", "rg/ml"), ("azureResourceGroup", "rg.")],
)
def test_azure_without_a_well_formed_owner_is_refused_by_the_schema(chart, field, value):
    """The Python side refuses the same values (tests/renderers/test_renderers.py)."""
    result = helm_run(chart, azure_values(**{field: value}))
    assert result.returncode != 0 and result.stdout == ""  # not one object, let alone half of them
    assert f"at '/{field}'" in result.stderr, result.stderr


def test_the_aws_instance_waits_for_its_security_group_as_in_python(chart, catalog, make_workload):
    """With no cluster to look up (helm template), the group has no id yet: the chart holds the
    Instance back, as the Python renderer does. tests/e2e/test_chart_install.py shows the Instance
    following, attached by the id, once a real API server holds the group's status."""
    objs = helm_template(
        chart, values(provider="aws", schedulingLocation="eu-west-3", schedulingTime=started(), vmSize="c6a.xlarge")
    )
    assert sorted(o["kind"] for o in objs) == ["SecurityGroup", "Subnet", "VPC"]
    python = render_set(
        make_workload(name="parity"),
        Decision(
            provider="aws",
            region="eu-west-3",
            zone=catalog.region("aws", "eu-west-3").zone,
            scheduling_time=started(),
            vm_size="c6a.xlarge",
            image=catalog.image("aws", "eu-west-3"),
        ),
        RenderSettings(ssh_public_key=KEY),
        stem=STEM,
    )
    assert [o["kind"] for o in python.objects] == ["VPC", "Subnet", "SecurityGroup"] and python.held


def test_nothing_before_the_scheduling_time(chart):
    assert (
        helm_template(
            chart,
            values(
                provider="gcp",
                schedulingLocation="europe-west9",
                schedulingTime=stamp(timedelta(hours=2)),
                vmSize="e2-standard-4",
            ),
        )
        == []
    )


def test_the_lead_time_opens_the_gate_early(chart):
    base = values(
        provider="gcp",
        schedulingLocation="europe-west9",
        schedulingTime=stamp(timedelta(minutes=2)),
        vmSize="e2-standard-4",
    )
    assert len(helm_template(chart, dict(base, provisioningLeadSeconds=300))) == 3
    assert helm_template(chart, dict(base, provisioningLeadSeconds=0)) == []


# Every duration form of the workload contract (greenops/models/contract.py): whole hours as a number,
# a numeric string is hours, else hours then minutes, lowercase, without spaces.
DURATIONS = [6, "6", "1.5", "6h", "90m", "1h30m", "0.5h"]


@pytest.mark.parametrize("duration", DURATIONS, ids=repr)
def test_the_run_renders_until_schedulingtime_plus_duration(chart, catalog, make_workload, duration):
    """The end guard, checked the way the start one is (against helm's real clock), for each form,
    with the run's length as the Python side reads it."""
    run = parse_duration(duration)

    def rendered(start: str) -> list[dict]:
        size = select_size(catalog, "gcp", "europe-west9", 4, 8).name
        return helm_template(
            chart,
            values(
                provider="gcp", schedulingLocation="europe-west9", schedulingTime=start, vmSize=size, duration=duration
            ),
        )

    ending = stamp(timedelta(minutes=2) - run)  # the run ends in two minutes
    assert canonical(rendered(ending)) == canonical(
        python_render(catalog, make_workload, "gcp", "europe-west9", ending)
    )
    assert rendered(stamp(-run)) == []  # ended this very second (the stamp rounds down)
    assert rendered(stamp(-run - timedelta(minutes=1))) == []


@pytest.mark.parametrize("provider,region", [("azure", "westeurope"), ("gcp", "europe-west1"), ("aws", "eu-west-3")])
def test_every_provider_retires_its_vm_after_the_run(chart, provider, region):
    base = values(provider=provider, schedulingLocation=region, vmSize="x", duration="1h30m")
    assert helm_template(chart, dict(base, schedulingTime=stamp(-timedelta(minutes=89))))
    assert helm_template(chart, dict(base, schedulingTime=stamp(-timedelta(minutes=91)))) == []


# Malformed, and the forms the contract refuses on purpose: a fractional number (the CRD types the
# field integer-or-string), uppercase, spaces, minutes before hours.
@pytest.mark.parametrize(
    "duration",
    ["", "h", "6 hours", "6d", "-1h", "1h-30m", "abc", "90s", "1h30", ".5h", "1e3", 1.5, " 2H ", "2H", "30m1h"],
    ids=repr,
)
@pytest.mark.parametrize("offset", [timedelta(hours=-1), timedelta(hours=2)], ids=["running", "not-yet-due"])
def test_a_malformed_duration_fails_naming_the_field(chart, duration, offset):
    with pytest.raises(ValueError):  # the Python side refuses it too
        parse_duration(duration)
    result = helm_run(
        chart,
        values(
            provider="aws", schedulingLocation="eu-west-3", schedulingTime=stamp(offset), vmSize="x", duration=duration
        ),
    )
    assert result.returncode != 0 and result.stdout == ""  # not one object, let alone half of them
    # the chart's schema (the contract's form) refuses it before any template runs
    assert "at '/duration'" in result.stderr, result.stderr


@pytest.mark.parametrize(
    "duration,refusal",
    [
        # a number: the schema's minimum; a string of the contract's form: the template's guard
        (0, "at '/duration': minimum: got 0, want 1"),
        (-2, "at '/duration': minimum: got -2, want 1"),
        ("0", "VmTemplate parity: duration must be positive, got 0"),
        ("0h", "VmTemplate parity: duration must be positive, got 0h"),
        ("0m", "VmTemplate parity: duration must be positive, got 0m"),
    ],
    ids=repr,
)
def test_a_duration_must_be_positive(chart, duration, refusal):
    with pytest.raises(ValueError, match="positive"):
        parse_duration(duration)
    with pytest.raises(RuntimeError, match=re.escape(refusal)):
        helm_template(
            chart,
            values(
                provider="aws", schedulingLocation="eu-west-3", schedulingTime=started(), vmSize="x", duration=duration
            ),
        )


def test_nothing_without_a_decision(chart):
    assert helm_template(chart, values()) == []
    assert helm_template(chart, values(provider="aws", schedulingTime=started())) == []  # no region or size yet


@pytest.mark.parametrize(
    "provider,kinds",
    [
        ("azure", {"VirtualNetwork", "VirtualNetworksSubnet", "NetworkInterface", "VirtualMachine"}),
        ("gcp", {"ComputeNetwork", "ComputeSubnetwork", "ComputeInstance"}),
        ("aws", {"VPC", "Subnet", "SecurityGroup"}),  # the Instance follows its group's id (see below)
    ],
)
def test_each_provider_renders_only_its_own_set(chart, provider, kinds):
    region = {"azure": "westeurope", "gcp": "europe-west1", "aws": "eu-west-3"}[provider]
    objs = helm_template(
        chart, values(provider=provider, schedulingLocation=region, schedulingTime=started(), vmSize="x")
    )
    assert {o["kind"] for o in objs} == kinds


def test_schema_rejects_bad_values(chart):
    with pytest.raises(RuntimeError, match="cpu"):
        helm_template(chart, values(cpu="four"))
    with pytest.raises(RuntimeError, match="provider"):
        helm_template(chart, values(provider="oracle"))
    with pytest.raises(RuntimeError, match="duration"):
        helm_template(chart, values(duration=True))


def test_clear_failures(chart):
    with pytest.raises(RuntimeError, match="no AMI is known for aws region ca-west-1"):
        helm_template(
            chart, values(provider="aws", schedulingLocation="ca-west-1", schedulingTime=started(), vmSize="x")
        )
    with pytest.raises(RuntimeError, match="Azure Linux VMs need sshPublicKey"):
        helm_template(chart, azure_values(sshPublicKey=None))


def test_helm_lint(chart):
    result = subprocess.run([require_tool("helm"), "lint", str(chart)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_controllers_default_lead_is_the_charts():
    """The cluster path's controller opens a gate when the chart starts rendering; a VmTemplate
    that sets no provisioningLeadSeconds gets values.yaml's."""
    from greenops.charts import CHART_SOURCE, PROVISIONING_LEAD_SECONDS

    values = yaml.safe_load((CHART_SOURCE / "values.yaml").read_text())
    assert values["provisioningLeadSeconds"] == PROVISIONING_LEAD_SECONDS
