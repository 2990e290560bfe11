"""Program structure under Pulumi mocks (no engine, no cloud, and no dynamic provider run)."""

from __future__ import annotations

import json

import pulumi
import pytest
import yaml

from greenops.models import Decision, Workload
from greenops.renderers import RenderSettings, render
from tests.support.common import AZURE_SUBSCRIPTION, IN_PARIS
from tests.support.common import SSH_KEY as KEY

NOW_SPEC = {"cpu": 2, "memory": 4, "duration": "1h", "deadline": "2030-01-01T00:00:00Z", "originRegion": "westeurope"}
WORKLOADS = [dict(NOW_SPEC, name="due-now", tenant="finance"), dict(NOW_SPEC, name="later", tenant="ml")]
SECRET_SIG, SECRET_VALUE = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
# each tenant's Pulumi-path token at the scheduler (greenops:schedulerTokens)
TENANT_TOKENS = {"finance": "gos_finance-t0ken", "ml": "gos_ml-t0ken"}


class Mocks(pulumi.runtime.Mocks):
    """Stands in for Placement: 'due-*' workloads are running (manifests rendered), others scheduled."""

    def __init__(self):
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.resources.append(args)
        outs = dict(args.inputs)
        if args.typ == "pulumi-python:dynamic:Resource":
            w = Workload.model_validate(outs["workload"], context={"check_deadline": False})
            d = Decision(
                **{**IN_PARIS, "vm_size": "e2-standard-2"},
                scheduling_time="2029-01-01T00:00:00Z",
                expected_intensity=20,
                baseline_intensity=80,
            )
            due = w.name.startswith("due")
            outs["decision"] = d.document()
            outs["phase"] = "Running" if due else "Scheduled"
            outs["lifecycle"] = {"phase": outs["phase"], "reason": "mocked", "events": []}
            outs["nextChangeAt"] = None
            outs["manifests"] = render(w, d, RenderSettings.model_validate(outs["render"])) if due else []
        return [f"{args.name}-id", outs]

    def call(self, args):
        return {}


def configure(m: Mocks, **credentials: str) -> Mocks:
    """The test stack, with ``credentials`` as secret config (greenops:<key>)."""
    pulumi.runtime.set_mocks(m, project="greenops-platform", stack="test", preview=False)
    pulumi.runtime.set_all_config(
        {
            "greenops:workloads": json.dumps(WORKLOADS),
            "greenops:render": json.dumps(
                {"sshPublicKey": KEY, "skipAwait": True, "azureSubscriptionId": AZURE_SUBSCRIPTION}
            ),
            **{f"greenops:{k}": v for k, v in credentials.items()},
        },
        secret_keys=[f"greenops:{k}" for k in credentials],
    )
    return m


@pytest.fixture
def mocks():
    return configure(Mocks(), opaToken="s3cr3t-token", schedulerTokens=json.dumps(TENANT_TOKENS))


def by_type(m: Mocks, typ: str):
    return [r for r in m.resources if r.typ == typ]


@pulumi.runtime.test
def test_each_workload_is_a_component_with_its_vm_and_objects(mocks):
    from greenops.stack import program

    components = program.run()

    def check(_):
        names = {r.name for r in by_type(mocks, "greenops:index:GreenWorkload")}
        assert names == {"due-now", "later"}
        assert {r.name for r in by_type(mocks, "pulumi-python:dynamic:Resource")} == {
            "due-now-placement",
            "later-placement",
        }
        groups = {r.name: r for r in by_type(mocks, "kubernetes:yaml/v2:ConfigGroup")}
        # The time gate: only the due workload has objects, in a ConfigGroup (as one YAML stream); a
        # waiting one has none (greenops.placing.declared: a first pass follows the recorded phase)
        assert set(groups) == {"due-now-vm"}
        objs = [d for d in yaml.safe_load_all(groups["due-now-vm"].inputs["yaml"]) if d]
        assert [o["kind"] for o in objs] == ["ComputeNetwork", "ComputeSubnetwork", "ComputeInstance"]
        assert all(o["metadata"]["labels"]["greenops-tenant"] == "finance" for o in objs)
        assert all(o["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true" for o in objs)
        # deleted without waiting for the garbage collector (they own nothing)
        assert all(o["metadata"]["annotations"]["pulumi.com/deletionPropagationPolicy"] == "background" for o in objs)

    return pulumi.Output.all(*[c.objects.apply(lambda g: g.urn if g else None) for c in components]).apply(check)


@pulumi.runtime.test
def test_children_are_parented_to_their_workload(mocks):
    from greenops.stack import program

    components = program.run()

    def check(urns):
        assert len(urns) == len(components)
        for placement, objects in urns:
            # a child's URN carries its parent's type: ...GreenWorkload$pulumi-python:dynamic:Resource::
            assert "greenops:index:GreenWorkload$pulumi-python:dynamic:Resource::" in placement
            assert objects is None or "greenops:index:GreenWorkload$kubernetes:yaml/v2:ConfigGroup::" in objects
        assert any(objects for _, objects in urns)

    def urn_of(group):
        return group.urn if group is not None else None

    return pulumi.Output.all(*[pulumi.Output.all(c.vm.urn, c.objects.apply(urn_of)) for c in components]).apply(check)


@pulumi.runtime.test
def test_tokens_stay_secret(mocks):
    from greenops.stack import program

    components = program.run()

    def check(decisions):
        for r in by_type(mocks, "pulumi-python:dynamic:Resource"):
            token = r.inputs["opaToken"]
            # Pulumi's wire marker for a secret value: it reaches the engine encrypted, never plain.
            assert token == {SECRET_SIG: SECRET_VALUE, "value": "s3cr3t-token"}
            # each workload presents its own tenant's token to the scheduler, never another's
            tenant = r.inputs["workload"]["tenant"]
            assert r.inputs["schedulerToken"] == {SECRET_SIG: SECRET_VALUE, "value": TENANT_TOKENS[tenant]}
        for secret in ("s3cr3t-token", *TENANT_TOKENS.values()):
            assert secret not in json.dumps(decisions)

    return pulumi.Output.all(*[c.decision for c in components]).apply(check)


def placement_tokens(m: Mocks) -> dict[str, object]:
    return {
        r.inputs["workload"]["name"]: r.inputs.get("schedulerToken")
        for r in by_type(m, "pulumi-python:dynamic:Resource")
    }


def test_one_stack_token_serves_every_tenant_and_a_tenant_token_wins_over_it():
    from greenops.stack import program

    shared = configure(Mocks(), schedulerToken="gos_stack-t0ken")
    pulumi.runtime.test(program.run)()
    assert placement_tokens(shared) == {
        "due-now": {SECRET_SIG: SECRET_VALUE, "value": "gos_stack-t0ken"},
        "later": {SECRET_SIG: SECRET_VALUE, "value": "gos_stack-t0ken"},
    }
    both = configure(Mocks(), schedulerToken="gos_stack-t0ken", schedulerTokens=json.dumps({"ml": "gos_ml-t0ken"}))
    pulumi.runtime.test(program.run)()
    assert placement_tokens(both) == {
        "due-now": {SECRET_SIG: SECRET_VALUE, "value": "gos_stack-t0ken"},
        "later": {SECRET_SIG: SECRET_VALUE, "value": "gos_ml-t0ken"},
    }


def test_a_tenant_without_a_token_is_refused_by_name_and_a_bad_map_without_quoting_it():
    from greenops.stack import program

    configure(Mocks(), schedulerTokens=json.dumps({"ml": "gos_ml-t0ken"}))
    with pytest.raises(pulumi.RunError) as refused:
        program.run()
    assert str(refused.value).startswith(
        "greenops:schedulerTokens: no token for tenant(s) finance, used by due-now (finance): "
    )
    assert "gos_ml-t0ken" not in str(refused.value)
    for bad in ('["gos_leaked-t0ken"]', json.dumps({"ml": ""}), json.dumps({"ml": 7}), "gos_leaked-t0ken"):
        configure(Mocks(), schedulerTokens=bad)
        with pytest.raises(pulumi.RunError) as refused:
            program.run()
        assert str(refused.value) == "greenops:schedulerTokens: must map each tenant to its token (a non-empty string)"


def test_bad_config_fails_with_named_error():
    pulumi.runtime.set_mocks(Mocks(), project="greenops-platform", stack="test", preview=True)
    pulumi.runtime.set_all_config({"greenops:workloads": json.dumps([dict(WORKLOADS[0], cpu=-1)])})
    from greenops.stack import program

    with pytest.raises(pulumi.RunError, match=r"greenops:workloads\[0\] \(due-now\)\.cpu"):
        program.run()


def test_bad_endpoint_config_names_the_key():
    pulumi.runtime.set_mocks(Mocks(), project="greenops-platform", stack="test", preview=True)
    pulumi.runtime.set_all_config({"greenops:endpoints": json.dumps({"opaUrl": "not a url"})})
    from greenops.stack import program

    with pytest.raises(pulumi.RunError, match=r"greenops:endpoints\.opaUrl"):
        program.run()


def test_too_much_inline_config_is_refused_naming_workloads_from():
    """The Automation API hands an inline program its config without an environment, but the CLI and
    the Pulumi Kubernetes Operator cannot: the same stack is refused on every path."""
    pulumi.runtime.set_mocks(Mocks(), project="greenops-platform", stack="test", preview=True)
    many = [dict(NOW_SPEC, name=f"job-{i}") for i in range(1000)]
    pulumi.runtime.set_all_config({"greenops:workloads": json.dumps(many)})
    from greenops.stack import program

    with pytest.raises(pulumi.RunError, match=r"^the stack's config is \d+ bytes .*greenops:workloadsFrom"):
        program.run()


def test_platform_config_that_is_not_json_is_named_without_quoting_it():
    pulumi.runtime.set_mocks(Mocks(), project="greenops-platform", stack="test", preview=True)
    pulumi.runtime.set_all_config({"greenops:platform": "hunter2-" + "x" * 100_000})
    from greenops.stack import program

    with pytest.raises(pulumi.RunError) as info:
        program.run()
    msg = str(info.value)
    assert msg.startswith("greenops:platform: Input should be a valid dictionary")
    assert "hunter2" not in msg and "\n" not in msg
