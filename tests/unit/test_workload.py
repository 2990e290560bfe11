import re
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from greenops.models import DataResidency, Decision, Workload
from tests.support.common import IN_PARIS, NOW


def errors_of(exc: ValidationError) -> dict[str, str]:
    return {".".join(map(str, e["loc"])) or "__root__": e["msg"] for e in exc.errors()}


def test_thesis_tuple_and_defaults(make_workload):
    w = make_workload()
    assert (w.cpu, w.memory, w.duration_hours, w.max_latency) == (4, 8.0, 6.0, 2000)
    assert w.eligible_providers == ("azure", "gcp", "aws")
    assert w.data_residency is DataResidency.NONE
    assert w.deadline == datetime(2026, 11, 30, tzinfo=UTC)


def test_deadline_with_offset_is_normalised_to_utc(make_workload):
    w = make_workload(deadline="2026-11-30T02:00:00+02:00")
    assert w.deadline == datetime(2026, 11, 30, tzinfo=UTC)
    assert w.spec()["deadline"] == "2026-11-30T00:00:00Z"


def test_spec_is_camel_case_and_round_trips(make_workload):
    w = make_workload(duration="90m", maxLatency=100, eligibleProviders=["gcp", "azure"], dataResidency="eu")
    spec = w.spec()
    assert spec["duration"] == "1h30m" and spec["maxLatency"] == 100 and spec["eligibleProviders"] == ["gcp", "azure"]
    assert Workload.model_validate(spec, context={"now": NOW}) == w


@pytest.mark.parametrize(
    "field,value,fragment",
    [
        ("cpu", 0, "greater than 0"),
        ("cpu", -2, "greater than 0"),
        ("cpu", 2.5, "integer"),
        ("memory", 0, "greater than 0"),
        ("memory", -1, "greater than 0"),
        ("duration", "6 hours", "is not a duration"),
        ("duration", "0h", "positive"),
        ("originRegion", "atlantis-1", "unknown origin region"),
        ("eligibleProviders", ["azure", "oracle"], "unknown provider(s) oracle"),
        ("deadline", "2026-12-01T00:00:00", "an RFC 3339 time with an offset"),
        ("deadline", "next friday", "an RFC 3339 time with an offset"),
        ("maxLatency", 0, "greater than 0"),
        ("name", "Train_1", "1-40 lowercase letters"),
        ("tenant", "a b", "a Kubernetes label value"),
        ("dataResidency", "mars", "'eu' or 'none'"),
        ("provider", "ibm", "unknown provider"),
    ],
)
def test_invalid_field_is_named_with_reason(make_workload, field, value, fragment):
    with pytest.raises(ValidationError) as info:
        make_workload(**{field: value})
    errs = errors_of(info.value)
    assert any(field in loc for loc in errs), errs
    assert any(fragment in msg for msg in errs.values()), errs


def test_deadline_earlier_than_now_plus_duration_is_rejected(make_workload):
    with pytest.raises(ValidationError, match="earlier than now plus the duration"):
        make_workload(deadline="2026-11-21T17:00:00Z", duration="6h")
    # Exactly enough time is fine.
    assert make_workload(deadline="2026-11-21T18:00:00Z", duration="6h").name == "train-1"


def test_deadline_in_the_past_is_rejected(make_workload):
    with pytest.raises(ValidationError, match="cannot finish in time"):
        make_workload(deadline="2025-01-01T00:00:00Z")


def test_unknown_fields_are_rejected(make_workload):
    with pytest.raises(ValidationError) as info:
        make_workload(gpus=1)
    assert "gpus" in errors_of(info.value)


def test_requested_provider_must_be_eligible(make_workload):
    with pytest.raises(ValidationError, match="not among eligibleProviders"):
        make_workload(provider="aws", eligibleProviders=["gcp"])


def test_requested_region_must_belong_to_requested_provider(make_workload):
    with pytest.raises(ValidationError, match="is not a region of provider 'gcp'"):
        make_workload(provider="gcp", region="westeurope")
    assert make_workload(provider="azure", region="westeurope").region == "westeurope"


@pytest.mark.parametrize(
    "written,fragment",
    [(["GCP"], "unknown provider(s) GCP"), (["gcp", "gcp"], "listed more than once"), ("gcp,aws", "a list of")],
)
def test_providers_are_a_list_of_distinct_lowercase_names(make_workload, written, fragment):
    """The contract's one form, as the policy and the CRD read it: nothing folded, split or deduplicated."""
    with pytest.raises(ValidationError, match=re.escape(fragment)):
        make_workload(eligibleProviders=written)
    assert make_workload(eligibleProviders=["gcp", "aws"]).eligible_providers == ("gcp", "aws")


def test_whole_numbers_written_as_floats_are_read_as_ints(make_workload):
    """One JSON number: the policy reads 2000.0 as 2000, and Pulumi hands a dynamic provider every
    number as a float. A fraction or a boolean is still refused."""
    w = make_workload(cpu=4.0, maxLatency=2000.0, duration=6.0)
    assert (w.cpu, w.max_latency, w.duration_hours) == (4, 2000, 6.0)
    assert type(w.max_latency) is int
    for bad in (2.5, True):
        with pytest.raises(ValidationError) as info:
            make_workload(maxLatency=bad)
        assert "maxLatency" in errors_of(info.value)


def test_decision_saving_and_utc():
    d = Decision(**IN_PARIS, scheduling_time="2026-11-22T03:00:00+01:00", expected_intensity=30, baseline_intensity=120)
    assert d.scheduling_time == datetime(2026, 11, 22, 2, tzinfo=UTC)
    assert d.saving_percent == pytest.approx(75.0)
    assert d.model_dump(mode="json", by_alias=True)["schedulingTime"] == "2026-11-22T02:00:00Z"


def test_decision_rejects_negative_intensity():
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        Decision(**IN_PARIS, scheduling_time="2026-11-22T00:00:00Z", expected_intensity=-1)
