"""One corpus of VmTemplate specs for the differential tests: the valid forms, every form the two
paths used to disagree on, and a hypothesis strategy for more. A spec is written as a VmTemplate
spec; ``as_pulumi`` turns it into the Pulumi path's workload document."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from greenops.common.clock import stamp

NAMESPACE, TENANT = "ml", "ml"  # the namespace the reviews come from, labelled with its tenant
_DEADLINE = datetime.now(UTC).replace(microsecond=0) + timedelta(days=3)
DEADLINE = stamp(_DEADLINE)  # "...T..:..:..Z"
BASE: dict[str, Any] = {
    "vmName": "train",
    "cpu": 2,
    "memory": 4,
    "duration": "2h",
    "deadline": DEADLINE,
    "maxLatency": 2000,
    "originRegion": "westeurope",
    "dataResidency": "eu",
}
ABSENT = object()  # an override that removes the field

# id -> the fields that differ from BASE. Every form of the audit, the valid ones around it, and the
# fields only one path used to check.
CASES: dict[str, dict[str, Any]] = {
    "base": {},
    "all-fields": {"tenant": TENANT, "eligibleProviders": ["gcp", "azure"], "maxLatency": 100, "memory": 0.5},
    "no-optional-fields": {"maxLatency": ABSENT, "dataResidency": ABSENT},
    # durations
    "duration-hours-number": {"duration": 6},
    "duration-hours-string": {"duration": "6"},
    "duration-fraction-string": {"duration": "1.5"},
    "duration-fraction-h": {"duration": "1.5h"},
    "duration-minutes": {"duration": "90m"},
    "duration-h-m": {"duration": "1h30m"},
    # not whole minutes: the Pulumi path's normal form once rounded them ("0.5m" to "0m", no run at all)
    "duration-half-minute": {"duration": "0.5m"},
    "duration-fraction-minutes": {"duration": "1h1.5m"},
    "duration-fraction-of-hours-not-whole-minutes": {"duration": "1.01"},
    "duration-upper": {"duration": "2H"},
    "duration-leading-space": {"duration": " 2h"},
    "duration-inner-space": {"duration": "1h 30m"},
    "duration-minutes-first": {"duration": "30m1h"},
    "duration-fraction-number": {"duration": 1.5},
    "duration-zero": {"duration": "0h"},
    "duration-zero-number": {"duration": 0},
    "duration-negative": {"duration": -2},
    "duration-too-long": {"duration": "745h"},
    "duration-longest": {"duration": "744h", "deadline": stamp(_DEADLINE + timedelta(days=31))},
    "duration-go-seconds": {"duration": "7200s"},
    "duration-empty": {"duration": ""},
    "duration-bool": {"duration": True},
    "duration-missing": {"duration": ABSENT},
    # deadlines
    "deadline-offset": {"deadline": (_DEADLINE + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S+01:00")},
    "deadline-fraction": {"deadline": DEADLINE[:-1] + ".250Z"},
    "deadline-no-seconds": {"deadline": DEADLINE[:16] + "Z"},
    "deadline-space": {"deadline": DEADLINE.replace("T", " ")},
    "deadline-lowercase": {"deadline": DEADLINE.lower()},
    "deadline-no-offset": {"deadline": DEADLINE[:-1]},
    "deadline-epoch": {"deadline": int(_DEADLINE.timestamp())},
    "deadline-compact-offset": {"deadline": DEADLINE[:-1] + "+0100"},
    "deadline-date-only": {"deadline": DEADLINE[:10]},
    "deadline-no-room": {"deadline": stamp(datetime.now(UTC) + timedelta(hours=1)), "duration": "6h"},
    "deadline-past": {"deadline": "2020-01-01T00:00:00Z"},
    # providers
    "providers-list": {"eligibleProviders": ["aws"]},
    "providers-empty": {"eligibleProviders": []},
    "providers-upper": {"eligibleProviders": ["Azure"]},
    "providers-comma": {"eligibleProviders": "azure,gcp"},
    "providers-duplicate": {"eligibleProviders": ["gcp", "gcp"]},
    "providers-unknown": {"eligibleProviders": ["oracle"]},
    "provider-request": {"provider": "azure"},
    "provider-request-upper": {"provider": "Azure"},
    # tenant and name
    "tenant-namespace": {"tenant": TENANT},
    "tenant-space": {"tenant": "m l"},
    "tenant-empty": {"tenant": ""},
    "tenant-long": {"tenant": "t" * 64},
    "name-upper": {"vmName": "Train"},
    "name-underscore": {"vmName": "train_1"},
    "name-space": {"vmName": " train"},
    "name-long": {"vmName": "t" * 41},
    "name-digit-first": {"vmName": "1train"},
    # numbers
    "cpu-zero": {"cpu": 0},
    "cpu-fraction": {"cpu": 2.5},
    "cpu-string": {"cpu": "2"},
    "cpu-too-many": {"cpu": 100_001},
    "memory-zero": {"memory": 0},
    "memory-below-a-megabyte": {"memory": 0.0001},
    "memory-string": {"memory": "4"},
    "latency-fraction": {"maxLatency": 100.5},
    "latency-string": {"maxLatency": "100"},
    "latency-zero": {"maxLatency": 0},
    "latency-too-large": {"maxLatency": 1_000_001},
    # regions and residency
    "origin-unknown": {"originRegion": "atlantis-1"},
    "origin-upper": {"originRegion": "WestEurope"},
    "residency-upper": {"dataResidency": "EU"},
    "residency-unknown": {"dataResidency": "mars"},
    # the OS image, by the catalog's name
    "image-named": {"image": "debian-12"},
    "image-default-named": {"image": "ubuntu-22.04"},
    "image-unknown": {"image": "windows-2022"},
    "image-upper": {"image": "Ubuntu-24.04"},
    "image-number": {"image": 24},
    # what the VM runs
    "run-script": {"run": {"script": "#!/bin/sh\necho done > /var/tmp/result\n"}},
    "run-longest-script": {"run": {"script": "x" * 10_000}},
    "run-script-too-long": {"run": {"script": "x" * 10_001}},
    "run-script-empty": {"run": {"script": ""}},
    "run-script-number": {"run": {"script": 5}},
    "run-without-script": {"run": {}},
    "run-string": {"run": "echo done"},
    "run-env": {"run": {"script": "x", "env": [{"name": "DB_PASSWORD", "secret": "db.password"}]}},
    "run-env-lower-name": {"run": {"script": "x", "env": [{"name": "db", "secret": "k"}]}},
    "run-env-bad-key": {"run": {"script": "x", "env": [{"name": "DB", "secret": "a b"}]}},
    "run-env-with-a-value": {"run": {"script": "x", "env": [{"name": "DB", "secret": "k", "value": "v"}]}},
    "run-env-repeated": {"run": {"script": "x", "env": [{"name": "DB", "secret": "k"}, {"name": "DB", "secret": "j"}]}},
    "run-env-not-a-list": {"run": {"script": "x", "env": {"DB": "k"}}},
    "run-unknown-field": {"run": {"script": "echo", "env": {"A": "1"}}},
}

# Cases the CRD's schema cannot judge: it knows forms and bounds, not the catalog, the clock or the
# scheduler's longest run. The webhook refuses them; the API server's schema lets them by.
# And memory 0: the API server compares an integer value with an integer-truncated minimum (0.001
# becomes 0), so an integer 0 passes "minimum: 0.001" while 0.0001 is refused.
BEYOND_THE_SCHEMA = {
    "duration-zero", "duration-too-long", "deadline-no-room", "deadline-past", "origin-unknown", "memory-zero",
}  # fmt: skip


def spec_of(overrides: dict[str, Any]) -> dict[str, Any]:
    merged = {**BASE, **overrides}
    return {k: v for k, v in merged.items() if v is not ABSENT}


def as_pulumi(spec: dict[str, Any]) -> dict[str, Any]:
    """The same workload as the Pulumi path's document: name for vmName, region for
    schedulingLocation, and the namespace's tenant when the spec has none (the cluster path's
    default tenant is the namespace's, the Pulumi path's the platform's: not part of the contract)."""
    renamed = {"vmName": "name", "schedulingLocation": "region"}
    doc = {renamed.get(k, k): v for k, v in spec.items()}
    doc.setdefault("tenant", TENANT)
    return doc


# Generated: each field drawn from its valid forms and its near misses (case, spaces, order,
# fractions, types), so the paths are compared on combinations no one wrote down.
_number = st.one_of(st.integers(-3, 12), st.floats(-1, 12, allow_nan=False).map(lambda x: round(x, 2)))
_duration = st.one_of(
    st.integers(-1, 800),
    st.floats(0, 10, allow_nan=False).map(lambda x: round(x, 1)),
    st.from_regex(r"\A ?[0-9]{1,3}(\.[0-9])?[hHmM]?([0-9]{1,2}[mMhH])? ?\Z"),
    st.sampled_from(["", "h", "1h30", "1d", "PT1H", "2h0m", "0.5m"]),
)
_deadline = st.sampled_from([c["deadline"] for c in CASES.values() if "deadline" in c] + [DEADLINE])
_providers = st.one_of(
    st.lists(st.sampled_from(["azure", "gcp", "aws", "AWS", "oracle", " gcp"]), max_size=4),
    st.sampled_from(["azure", "azure,gcp"]),
)
_names = st.from_regex(r"\A[a-zA-Z0-9_ -]{0,42}\Z")
generated = st.fixed_dictionaries(
    {
        "vmName": st.one_of(st.just("train"), _names),
        "cpu": st.one_of(st.integers(-1, 16), _number),
        "memory": _number,
        "duration": _duration,
        "deadline": _deadline,
        "originRegion": st.sampled_from(["westeurope", "europe-west9", "eu-west-3", "WestEurope", "nowhere"]),
    },
    optional={
        "maxLatency": st.one_of(st.integers(-1, 3000), _number),
        "dataResidency": st.sampled_from(["eu", "none", "EU", ""]),
        "run": st.one_of(
            st.fixed_dictionaries({"script": st.text(max_size=40)}),
            st.sampled_from([{}, "echo", {"script": None}, {"script": "echo", "x": 1}]),
        ),
        "eligibleProviders": _providers,
        "tenant": st.sampled_from([TENANT, "m l", ""]),
    },
)
