"""Properties over what a tenant can write: any stack config value and any workload file either
validates, or is refused with the platform's error, one line, of bounded length. Never a
traceback, never an unbounded message."""

from __future__ import annotations

import itertools
import string
from datetime import UTC, datetime

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenops.common.errors import MAX_MESSAGE_CHARS, GreenOpsError
from greenops.common.user_yaml import load_yaml_text
from greenops.stack.stack_config import KEYS, MAX_REPORTED_ERRORS, StackConfig, parse_stack_config

NOW = datetime(2026, 11, 22, tzinfo=UTC)
# every reported error is a place, a field path and a message; the place and path are cut as values are
BOUND = MAX_REPORTED_ERRORS * 2 * MAX_MESSAGE_CHARS
FIELDS = (
    "name",
    "cpu",
    "memory",
    "duration",
    "deadline",
    "maxLatency",
    "originRegion",
    "eligibleProviders",
    "dataResidency",
    "tenant",
    "provider",
    "region",
    "provisioning",
)
VALID = {
    "name": "ok",
    "cpu": 2,
    "memory": 4,
    "duration": "1h",
    "deadline": "2027-01-01T00:00:00Z",
    "originRegion": "westeurope",
}
PROPERTY = settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),
    st.text(max_size=30),
    st.text(max_size=2000),
    st.sampled_from(["1e-300", "99999999999999999999h", "0h", "744h", "745h", "2027-13-45", "azure", "eu", "x" * 500]),
    st.datetimes(timezones=st.none() | st.just(UTC)),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=20) | st.sampled_from(FIELDS), inner, max_size=5)
    ),
    max_leaves=20,
)
# a workload with some of its fields changed to anything, some removed, and perhaps an unknown key
workloads = st.builds(
    lambda changes, dropped, extra: {
        **{k: v for k, v in VALID.items() if k not in dropped},
        **changes,
        **extra,
    },
    st.dictionaries(st.sampled_from(FIELDS), values, max_size=4),
    st.sets(st.sampled_from(sorted(VALID)), max_size=2),
    st.dictionaries(st.text(max_size=10), values, max_size=1),
)
stack_configs = st.fixed_dictionaries(
    {},
    optional={
        "workloads": st.lists(workloads, max_size=30) | values,
        **{key: values for key in KEYS if key not in ("workloads", "workloadsFrom")},
        "platform": values,
    },
)


def assert_refused_or_valid(parse) -> None:
    try:
        assert isinstance(parse(), StackConfig)
    except GreenOpsError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg and len(msg) <= BOUND, msg[:2000]


@PROPERTY
@given(raw=stack_configs, unknown=st.dictionaries(st.text(max_size=50), values, max_size=3))
def test_any_stack_config_validates_or_is_one_bounded_line(raw, unknown):
    assert_refused_or_valid(lambda: parse_stack_config({**unknown, **raw}, now=NOW))


# YAML-ish text: fragments that exercise the scanner, the parser and the constructors, including
# the anchors, aliases, tags and nesting the loader refuses
FRAGMENTS = [
    *"[]{}:,-?|>'\"#&*!%@`\t\n ",
    "- ",
    ": ",
    "\n  ",
    "---\n",
    "...\n",
    "&a ",
    "*a",
    "!!binary ",
    "!!python/object:os.system ",
    "!!set ",
    "<<: ",
    "name",
    "workloads",
    "tenant",
    "cpu",
    "memory",
    "duration",
    "1e-300",
    "9" * 40,
    ".inf",
    ".nan",
    "2027-13-45",
    "2027-01-01T00:00:00Z",
    "0001-01-01T00:00:00+01:00",
    "\x00",
    "\ufeff",
    "\\x",
]
yamlish = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS) | st.text(string.ascii_lowercase, max_size=5), max_size=60).map("".join),
    st.text(max_size=300),
    st.builds(
        lambda doc, cut: yaml.safe_dump(doc)[:cut],
        st.lists(workloads, max_size=5) | st.fixed_dictionaries({"tenant": values, "workloads": st.lists(workloads)}),
        st.integers(min_value=0, max_value=5000),
    ),
)
examples = itertools.count()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return tmp_path_factory.mktemp("project")


@PROPERTY
@given(text=yamlish)
def test_any_workload_file_validates_or_is_one_bounded_line(project, text):
    name = f"w{next(examples)}.yaml"
    (project / name).write_text(text, encoding="utf-8", errors="surrogatepass")
    assert_refused_or_valid(lambda: parse_stack_config({"workloadsFrom": name}, now=NOW, root=project))


@PROPERTY
@given(text=yamlish)
def test_the_loader_loads_or_refuses_in_one_bounded_line(text):
    try:
        load_yaml_text(text, "doc.yaml")
    except GreenOpsError as exc:
        assert "\n" not in str(exc) and len(str(exc)) <= 2 * MAX_MESSAGE_CHARS


@PROPERTY
@given(
    entries=st.lists(
        st.text(max_size=60) | st.sampled_from(["/", "..", "/etc/passwd", "../x", "./.", "\x00"]), max_size=3
    )
)
def test_any_workloads_from_setting_is_read_inside_the_project_or_refused(project, entries):
    assert_refused_or_valid(lambda: parse_stack_config({"workloadsFrom": entries}, now=NOW, root=project))
