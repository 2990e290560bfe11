"""The program in direct mode under Pulumi mocks: which cloud resources exist before, during and
after each workload's window, declared from the placement's record and the pass's instant."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pulumi
import pytest

from greenops import direct
from greenops.common.clock import stamp
from greenops.direct.records import RECORDS_OUTPUT, record_of
from greenops.models import Workload
from greenops.placing.lifecycle import Lifecycle, Phase
from tests.support.common import AZURE_SUBSCRIPTION
from tests.support.common import REGION_PER_CLOUD as REGIONS
from tests.support.common import SSH_KEY as KEY

from .mocks import SDK_DEPRECATIONS, DirectMocks
from .test_direct_sets import EXPECTED, REGION_INPUT

pytestmark = SDK_DEPRECATIONS

START = datetime(2030, 1, 1, 2, tzinfo=UTC)
LEAD = timedelta(seconds=300)  # greenops:reconcile's default interval plus margin
SPEC = {"cpu": 2, "memory": 4, "duration": "1h", "deadline": "2030-01-02T00:00:00Z", "originRegion": "westeurope"}
RENDER = {"sshPublicKey": KEY, "azureSubscriptionId": AZURE_SUBSCRIPTION, "gcpProject": "greenops-test"}


def spec(cloud: str, **fields) -> dict:
    return {**SPEC, "name": f"{cloud}-job", "eligibleProviders": [cloud], "region": REGIONS[cloud], **fields}


def lifecycle(phase: Phase) -> dict:
    """A recorded lifecycle in ``phase``; a started run has run since START."""
    lc = Lifecycle.placed(START - timedelta(days=1), "placed")
    if phase is not Phase.SCHEDULED:
        lc = lc.to(Phase.PROVISIONING, START - LEAD, "gate opened", gate_opened_at=START - LEAD)
    if phase in (Phase.RUNNING, Phase.COMPLETED):
        lc = lc.to(Phase.RUNNING, START, "running", running_since=START)
    if phase is Phase.COMPLETED:
        lc = lc.to(Phase.COMPLETED, START + timedelta(hours=1), "completed", completed_at=START + timedelta(hours=1))
    if phase is Phase.FAILED:
        lc = lc.to(Phase.FAILED, START, "failed", failed_at=START)
    return lc.document()


def record(cloud: str, phase: Phase, decide, **spec_fields) -> dict:
    w = Workload.model_validate(spec(cloud, **spec_fields), context={"check_deadline": False})
    decision = decide(w, cloud, REGIONS[cloud], at=START)
    found = record_of({"workload": w.spec(), "decision": decision.document(), "lifecycle": lifecycle(phase)})
    assert found is not None
    return found.model_dump()


class ProgramMocks(DirectMocks):
    """The cloud mocks, plus a StackReference answering with this stack's last records and rows."""

    def __init__(self, records: dict | None, rows: list[dict] | None = None) -> None:
        super().__init__()
        self.records = records
        self.rows = rows

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        if args.typ == "pulumi:pulumi:StackReference":
            self.resources.append(args)
            outputs = {} if self.records is None else {RECORDS_OUTPUT: self.records}
            if self.rows is not None:
                outputs["placements"] = self.rows
            return [args.name, {"name": args.name, "outputs": outputs}]
        return super().new_resource(args)


def run_program(
    workloads: list[dict], records: dict | None, now: datetime, rows: list[dict] | None = None, **config
) -> tuple[ProgramMocks, pulumi.Output]:
    """The program at ``now`` on a direct-mode stack, its records (and the previous pass's rows)
    read through the self reference; with an output that resolves once every workload's VM (if
    any) and ConfigGroup (if any) is registered."""
    from greenops.stack import program

    m = ProgramMocks(records, rows)
    pulumi.runtime.set_mocks(m, project="greenops-platform", stack="test", preview=False)
    pulumi.runtime.set_all_config(
        {
            "greenops:workloads": json.dumps(workloads),
            "greenops:render": json.dumps(RENDER),
            "greenops:provisioning": config.pop("provisioning", "direct"),
            **{f"greenops:{k}": json.dumps(v) for k, v in config.items()},
        }
    )
    components = program.run(now=now)
    # (the machines resolve once the VMs are registered; the Placements' URNs once they are)
    registered = [c.vm.urn for c in components] + [c.objects.apply(_urn_of) for c in components]
    return m, pulumi.Output.all(*(c.machine for c in components)).apply(
        lambda machines: pulumi.Output.all(*registered).apply(lambda _: machines)
    )


def _urn_of(resource: pulumi.Resource | None) -> pulumi.Output[str] | None:
    return resource.urn if resource is not None else None


CLOUD_PACKAGES = ("aws", "gcp", "azure-native")


def cloud_types(m: ProgramMocks) -> set[str]:
    """The types of the cloud resources and cloud providers registered."""
    return {
        r.typ
        for r in m.resources
        if r.typ.split(":")[0] in CLOUD_PACKAGES or r.typ.removeprefix("pulumi:providers:") in CLOUD_PACKAGES
    }


# (recorded phase, the pass's instant, whether the VM exists in that pass)
PASSES = [
    (Phase.SCHEDULED, START - LEAD - timedelta(seconds=1), False),  # before the gate
    (Phase.SCHEDULED, START - LEAD, True),  # the gate opens: the VM is declared
    (Phase.PROVISIONING, START - LEAD + timedelta(seconds=30), True),
    (Phase.RUNNING, START + timedelta(minutes=59), True),
    (Phase.RUNNING, START + timedelta(hours=1), False),  # the run has had its hour: retired
    (Phase.COMPLETED, START + timedelta(hours=2), False),
    (Phase.FAILED, START + timedelta(hours=2), False),
]


def placement_inputs(m: ProgramMocks) -> dict[str, dict]:
    return {r.inputs["workload"]["name"]: r.inputs for r in m.resources if r.typ == "pulumi-python:dynamic:Resource"}


@pytest.mark.parametrize("cloud", direct.CLOUDS)
@pytest.mark.parametrize(("phase", "now", "exists"), PASSES, ids=lambda v: getattr(v, "value", None) or str(v))
@pulumi.runtime.test
def test_the_set_exists_only_while_the_record_says_due(cloud, phase, now, exists, decide):
    m, done = run_program([spec(cloud)], {f"{cloud}-job": record(cloud, phase, decide)}, now)

    def check(machines):
        assert cloud_types(m) == (set(EXPECTED[cloud]) if exists else set())
        placement = placement_inputs(m)[f"{cloud}-job"]
        assert placement["provisioning"] == "direct"
        assert placement["direct"]["declared"] is exists
        assert placement["direct"]["at"] == now.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert placement["direct"]["basis"]["phase"] == phase.value  # the record it was judged from
        assert not [r for r in m.resources if r.typ.startswith("kubernetes:yaml")]  # no operator objects
        if exists:
            provider = next(r for r in m.resources if r.typ.startswith("pulumi:providers:") and cloud in r.typ)
            assert provider.inputs[REGION_INPUT[cloud]] == REGIONS[cloud]
            assert machines[0]["resourceId"] and machines[0]["privateIp"]
        else:
            assert machines == [{}]

    return done.apply(check)


@pytest.mark.parametrize("cloud", direct.CLOUDS)
@pytest.mark.parametrize("recorded", ["none", "another spec"])
@pulumi.runtime.test
def test_no_record_of_this_spec_declares_nothing(cloud, recorded, decide):
    now = START - LEAD + timedelta(seconds=1)  # due, had the record been this spec's
    records = None if recorded == "none" else {f"{cloud}-job": record(cloud, Phase.SCHEDULED, decide, cpu=4)}
    m, done = run_program([spec(cloud)], records, now)

    def check(_):
        assert cloud_types(m) == set()
        handed = placement_inputs(m)[f"{cloud}-job"]["direct"]
        assert handed["at"] == "2030-01-01T01:55:01Z" and handed["declared"] is False
        assert handed.get("basis") is None  # (a None input is not sent at all)

    return done.apply(check)


@pulumi.runtime.test
def test_a_workload_may_stay_with_the_operator_in_a_direct_stack(decide):
    records = {"aws-job": record("aws", Phase.SCHEDULED, decide), "gcp-job": record("gcp", Phase.SCHEDULED, decide)}
    # the operator one's row: its gate is now, so its objects are declared in this pass
    rows = [{"workload": "gcp-job", "phase": "Scheduled", "nextChangeAt": stamp(START - LEAD)}]
    m, done = run_program([spec("aws"), spec("gcp", provisioning="operator")], records, START - LEAD, rows)

    def check(_):
        assert cloud_types(m) == set(EXPECTED["aws"])
        gcp = placement_inputs(m)["gcp-job"]
        assert gcp.get("provisioning") is None and "direct" not in gcp
        assert "provisioning" not in gcp["workload"]  # how it is provisioned is not what it is
        assert [r.name for r in m.resources if r.typ == "kubernetes:yaml/v2:ConfigGroup"] == ["gcp-job-vm"]

    return done.apply(check)


@pulumi.runtime.test
def test_an_operator_stack_declares_from_its_previous_rows_not_from_records():
    """An operator stack reads its previous pass's rows (phase, next change) through the one self
    reference, and a workload whose gate is an hour away gets no ConfigGroup; no cloud resource."""
    rows = [{"workload": "aws-job", "phase": "Scheduled", "nextChangeAt": stamp(START + timedelta(hours=1))}]
    m, done = run_program([spec("aws")], None, START, rows, provisioning="operator")

    def check(_):
        assert len([r for r in m.resources if r.typ == "pulumi:pulumi:StackReference"]) == 1
        assert cloud_types(m) == set()
        assert not [r for r in m.resources if r.typ == "kubernetes:yaml/v2:ConfigGroup"]
        assert placement_inputs(m)["aws-job"]["objectsDeclared"] is False

    return done.apply(check)


@pytest.mark.parametrize(
    "backend, warned", [("file:///srv/state", True), ("file:///srv/state?metadata=skip", False), ("s3://b", False)]
)
def test_a_file_backend_that_writes_sidecars_is_named_when_the_program_reads_itself(monkeypatch, backend, warned):
    """`pulumi up` from the CLI writes the state after every step while the self reference reads
    it: on a file backend with sidecars that read can fail (greenops/common/file_backend.py)."""
    said: list[str] = []
    monkeypatch.setenv("PULUMI_BACKEND_URL", backend)
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: said.append(message))
    rows = [{"workload": "aws-job", "phase": "Scheduled", "nextChangeAt": stamp(START + timedelta(hours=1))}]

    @pulumi.runtime.test
    def run():
        return run_program([spec("aws")], None, START, rows, provisioning="operator")[1]

    run()
    sidecar = [s for s in said if "metadata=skip" in s]
    assert bool(sidecar) == warned
    assert not warned or (backend in sidecar[0] and "failed to load checkpoint: EOF" in sidecar[0])
