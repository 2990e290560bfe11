"""Every provider's minimum set (thesis §3.4) renders and validates against the real CRDs."""

import pytest

from greenops.common.errors import RenderError
from greenops.renderers import RenderSettings, providers, render, render_set
from tests.support.common import AZURE_SUBSCRIPTION
from tests.support.references import group_reported, owner_problems, security_group_problems

REGIONS = {
    "azure": ["italynorth", "swedencentral", "francecentral", "eastus", "japaneast"],
    "gcp": ["europe-west9", "europe-north1", "us-central1", "asia-northeast1"],
    "aws": ["eu-west-3", "eu-north-1", "us-east-1", "ap-southeast-2"],
}
MINIMUM_SET = {
    "azure": ["VirtualNetwork", "VirtualNetworksSubnet", "NetworkInterface", "VirtualMachine"],
    "gcp": ["ComputeNetwork", "ComputeSubnetwork", "ComputeInstance"],
    "aws": ["VPC", "Subnet", "SecurityGroup", "Instance"],
}
CASES = [(p, r) for p, regions in REGIONS.items() for r in regions]


def test_every_catalog_provider_has_a_renderer(catalog):
    assert providers() == sorted(catalog.providers)


@pytest.mark.crds
@pytest.mark.parametrize("provider,region", CASES)
def test_4vcpu_8gb_validates_against_upstream_crds(crd_schemas, make_workload, decide, settings, provider, region):
    w = make_workload()
    objects = render(w, decide(w, provider, region), settings, observed=group_reported(w.name))
    assert [o["kind"] for o in objects] == MINIMUM_SET[provider]
    problems = [e for o in objects for e in crd_schemas.errors(o)]
    assert problems == []


@pytest.mark.parametrize("provider,region", CASES)
def test_region_size_and_image_fields(catalog, make_workload, decide, settings, provider, region):
    w = make_workload()
    d = decide(w, provider, region)
    by_kind = {o["kind"]: o for o in render(w, d, settings, observed=group_reported(w.name))}
    if provider == "azure":
        vm = by_kind["VirtualMachine"]["spec"]
        assert vm["location"] == region and vm["hardwareProfile"]["vmSize"] == d.vm_size
        assert vm["storageProfile"]["imageReference"]["offer"] == "0001-com-ubuntu-server-jammy"
        assert {by_kind[k]["spec"]["location"] for k in ("VirtualNetwork", "NetworkInterface")} == {region}
    elif provider == "gcp":
        inst = by_kind["ComputeInstance"]["spec"]
        assert inst["zone"] in catalog.region("gcp", region).availabilityZones
        assert inst["zone"].startswith(region + "-")
        assert inst["machineType"] == d.vm_size
        assert inst["bootDisk"]["initializeParams"]["sourceImageRef"]["external"] == d.image
        assert by_kind["ComputeSubnetwork"]["spec"]["region"] == region
    else:
        inst = by_kind["Instance"]
        assert inst["spec"]["imageID"] == catalog.image("aws", region)
        assert inst["spec"]["instanceType"] == d.vm_size
        assert {o["metadata"]["annotations"]["services.k8s.aws/region"] for o in by_kind.values()} == {region}


@pytest.mark.parametrize("provider,region", [("azure", "westeurope"), ("gcp", "europe-west1"), ("aws", "eu-west-1")])
def test_names_labels_and_references_are_consistent(make_workload, decide, settings, provider, region):
    w = make_workload(name="etl-42", tenant="finance")
    objects = render(w, decide(w, provider, region), settings, observed=group_reported(w.name))
    names = {o["metadata"]["name"] for o in objects}
    assert all(n == "etl-42" or n.startswith("etl-42-") for n in names)
    assert len(names) == len(objects)
    for o in objects:
        labels = o["metadata"]["labels"]
        values = set(labels.values())
        assert {"etl-42", "finance", "greenops"} <= values, labels
        assert o["metadata"]["namespace"] == "greenops"
    # Every in-cluster reference points at an object of the same set: nothing else lives in the namespace.
    refs = set()
    for o in objects:
        collect_refs(o["spec"], refs)
    assert refs and refs <= names
    assert owner_problems(objects) == []


def collect_refs(node, out):
    if isinstance(node, dict):
        for key, value in node.items():
            if (
                key in ("owner", "reference", "networkRef", "subnetworkRef")
                and isinstance(value, dict)
                and "name" in value
            ):
                out.add(value["name"])
            elif key in ("vpcRef", "subnetRef"):
                out.add(value["from"]["name"])
            else:
                collect_refs(value, out)
    elif isinstance(node, list):
        for item in node:
            collect_refs(item, out)


def test_azure_objects_are_owned_by_the_configured_resource_group(make_workload, decide):
    """By ARM id: the group is made by pulumi-azure-native, never an ASO object in the namespace."""
    w = make_workload()
    s = RenderSettings(
        ssh_public_key="ssh-ed25519 AAAA k", azure_resource_group="rg-ml", azure_subscription_id=AZURE_SUBSCRIPTION
    )
    objects = render(w, decide(w, "azure", "westeurope"), s)
    group = f"/subscriptions/{AZURE_SUBSCRIPTION}/resourceGroups/rg-ml"
    owners = {o["kind"]: o["spec"]["owner"] for o in objects}
    assert owners == {
        "VirtualNetwork": {"armId": group},
        "VirtualNetworksSubnet": {"name": "train-1-vnet"},
        "NetworkInterface": {"armId": group},
        "VirtualMachine": {"armId": group},
    }
    assert owner_problems(objects) == []


def test_a_dangling_in_namespace_owner_is_caught(make_workload, decide, settings):
    """The check above fails on what the renderer used to emit: owner.name of a ResourceGroup
    object that nothing in the namespace creates."""
    w = make_workload()
    objects = render(w, decide(w, "azure", "westeurope"), settings)
    objects[0]["spec"]["owner"] = {"name": "greenops-workloads"}
    assert owner_problems(objects) == [
        "VirtualNetwork/train-1-vnet: spec.owner.name: 'greenops-workloads' is not an object of this set, "
        "and nothing else creates it in namespace 'greenops'"
    ]


@pytest.mark.parametrize("region", REGIONS["aws"])
def test_the_aws_instance_attaches_the_security_group_we_render(make_workload, decide, settings, region):
    """ACK's Instance (ec2-controller v1.20.0) takes groups by id only, so it is rendered once the
    cluster reports the group's id, and attaches it."""
    w = make_workload()
    reported = group_reported(w.name)
    objects = render(w, decide(w, "aws", region), settings, observed=reported)
    assert [o["kind"] for o in objects] == MINIMUM_SET["aws"]
    assert security_group_problems(objects, reported) == []


def test_the_aws_instance_is_held_until_its_group_reports_an_id(make_workload, decide, settings):
    w = make_workload()
    rendered = render_set(w, decide(w, "aws", "eu-west-3"), settings)
    assert [o["kind"] for o in rendered.objects] == ["VPC", "Subnet", "SecurityGroup"]
    assert rendered.held == [
        "Instance train-1 is held until SecurityGroup train-1-sg reports its id (status.id), which "
        "the Instance attaches by id (ACK's Instance has no reference to a group)"
    ]
    assert rendered.used == {}
    # A status without the id (the controller has not created the group yet) holds it too.
    assert (
        render_set(
            w, decide(w, "aws", "eu-west-3"), settings, observed={"SecurityGroup/train-1-sg": {"conditions": []}}
        ).held
        == rendered.held
    )


def test_an_instance_without_the_group_is_caught(make_workload, decide, settings):
    """The check above fails on what the renderer used to emit: an Instance with no group at all."""
    w = make_workload()
    reported = group_reported(w.name)
    objects = render(w, decide(w, "aws", "eu-west-3"), settings, observed=reported)
    del objects[-1]["spec"]["securityGroupIDs"]
    assert security_group_problems(objects, reported) == [
        "Instance/train-1: spec.securityGroupIDs [] does not attach SecurityGroup train-1-sg (reported id "
        "sg-0a1b2c3d4e5f60718)"
    ]


def test_azure_without_a_subscription_fails_closed(make_workload, decide):
    w = make_workload()
    with pytest.raises(
        RenderError,
        match="workload 'train-1': Azure objects are owned by resource group "
        "'greenops-workloads' through its ARM id, which needs its subscription; "
        "set azureSubscriptionId",
    ):
        render(w, decide(w, "azure", "westeurope"), RenderSettings(ssh_public_key="ssh-ed25519 AAAA k"))


@pytest.mark.parametrize(
    "field,value",
    [
        ("azureSubscriptionId", "my-subscription"),
        ("azureSubscriptionId", "11111111-2222-3333-4444-55555555555/"),
        ("azureResourceGroup", "rg/ml"),
        ("azureResourceGroup", "rg-ml."),
        ("azureResourceGroup", ""),
    ],
)
def test_settings_that_cannot_form_the_owner_arm_id_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        RenderSettings.model_validate({field: value})


def test_rendering_is_deterministic(make_workload, decide, settings):
    w = make_workload()
    d = decide(w, "gcp", "europe-west9")
    assert render(w, d, settings) == render(w, d, settings)


def test_skip_await_and_project_annotations(make_workload, decide):
    w = make_workload()
    s = RenderSettings(skip_await=True, gcp_project="acme-green")
    for o in render(w, decide(w, "gcp", "europe-west9"), s):
        # the instance alone may be stopped by Config Connector to take a new machineType (a resize)
        resizable = (
            {"cnrm.cloud.google.com/allow-stopping-for-update": "true"} if o["kind"] == "ComputeInstance" else {}
        )
        assert o["metadata"]["annotations"] == {
            "cnrm.cloud.google.com/project-id": "acme-green",
            "pulumi.com/skipAwait": "true",
            **resizable,
        }


def test_azure_without_ssh_key_fails_closed(make_workload, decide):
    w = make_workload()
    with pytest.raises(RenderError, match="workload 'train-1': Azure Linux VMs need an SSH public key"):
        render(w, decide(w, "azure", "westeurope"), RenderSettings(azure_subscription_id=AZURE_SUBSCRIPTION))


def test_gcp_region_without_compute_zones_is_refused(make_workload, decide, settings):
    w = make_workload()
    d = decide(w, "gcp", "europe-north2")
    with pytest.raises(RenderError, match="no compute zone is known for GCP region 'europe-north2'"):
        render(w, d, settings)


def test_unknown_provider_has_no_renderer(make_workload, decide, settings):
    w = make_workload()
    d = decide(w, "gcp", "europe-west9").model_copy(update={"provider": "oracle"})
    with pytest.raises(RenderError, match="no renderer for provider 'oracle'"):
        render(w, d, settings)


@pytest.mark.parametrize("provider,region", [("azure", "westeurope"), ("gcp", "europe-west1"), ("aws", "eu-west-1")])
def test_declared_kinds_cover_what_is_rendered(make_workload, decide, settings, catalog, provider, region):
    from greenops.renderers import rendered_kinds

    w = make_workload()
    emitted = {(o["apiVersion"], o["kind"]) for o in render(w, decide(w, provider, region), settings)}
    assert emitted <= set(rendered_kinds())
    # and every declared kind is an upstream CRD in the catalog (render-mode stubs need its facts)
    for api_version, kind in rendered_kinds():
        fact = catalog.crd_kinds[(api_version.split("/")[0], kind)]
        assert api_version.split("/")[1] in fact.served


@pytest.mark.parametrize(
    "field,value,says",
    [
        ("namespace", "team-b\nkind: Secret", "is not valid: a DNS-1123 label"),
        ("namespace", "Team", "is not valid: a DNS-1123 label"),
        ("adminUsername", "root", '"root" is reserved by Azure for a VM\'s administrator'),
        ("adminUsername", "ops\n", "is not valid: a Linux user name"),  # Python's $ would take it
        ("sshPublicKey", "ssh-ed25519 AAAA\n---\nkind: Secret", "is not valid: one OpenSSH public key line"),
        ("gcpProject", "Prod", "is not valid: a GCP project id"),
        ("azureResourceGroup", "rg\nx: y", "is not valid: an Azure resource group name"),
    ],
)
def test_render_settings_refuse_what_the_chart_refuses(field, value, says):
    """The same rules as the chart's schema and admission (greenops/models/strings.py), each error
    naming the setting and the reason."""
    with pytest.raises(ValueError) as info:
        RenderSettings.model_validate({field: value})
    [error] = info.value.errors()  # type: ignore[attr-defined]
    assert error["loc"] == (field,) and says in error["msg"], error
