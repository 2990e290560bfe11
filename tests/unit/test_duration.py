import re
from datetime import timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from greenops.models import format_duration, parse_duration
from greenops.models.contract import DURATION_MAX_LENGTH, DURATION_PATTERN


@pytest.mark.parametrize(
    "raw,expected",
    [
        (6, timedelta(hours=6)),
        ("1.5", timedelta(minutes=90)),
        ("6", timedelta(hours=6)),
        ("6h", timedelta(hours=6)),
        ("90m", timedelta(minutes=90)),
        ("1h30m", timedelta(minutes=90)),
        ("0.5h", timedelta(minutes=30)),
    ],
)
def test_accepted_forms(raw, expected):
    assert parse_duration(raw) == expected


# The contract's one form: no case folding, no spaces, hours before minutes, whole hours as a number.
@pytest.mark.parametrize(
    "raw", ["", "h", "6 hours", "6d", "-1h", "1h-30m", "abc", None, True, [6], "2H", " 2h", "30m1h", 1.5]
)
def test_malformed_durations_are_rejected(raw):
    with pytest.raises(ValueError):
        parse_duration(raw)


@pytest.mark.parametrize("raw", [0, "0h", "0m", -2])
def test_non_positive_durations_are_rejected(raw):
    with pytest.raises(ValueError, match="not a positive duration"):
        parse_duration(raw)


@pytest.mark.parametrize(
    "text,canonical",
    [
        ("6h", "6h"),
        ("90m", "1h30m"),
        ("1h30m", "1h30m"),
        ("45m", "45m"),
        (24, "24h"),
        # not whole minutes: kept, not rounded (rounding made "0.5m" a "0m" run, and "1.5m" two minutes)
        ("0.5m", "0.5m"),
        ("1.5m", "1.5m"),
        ("1.01h", "1h0.6m"),
        ("0.123456789h", "7.407407333m"),
    ],
)
def test_format_is_canonical_and_round_trips(text, canonical):
    assert format_duration(parse_duration(text)) == canonical
    assert parse_duration(canonical) == parse_duration(text)


@given(
    hours=st.integers(min_value=0, max_value=743),
    minutes=st.decimals(min_value=0, max_value=59, places=6, allow_nan=False, allow_infinity=False),
)
def test_every_duration_written_in_the_contract_round_trips_through_its_normal_form(hours, minutes):
    """The Pulumi path asks the policy with the normal form, the cluster path with the spec as
    written: the two must be the same duration, within the contract's length."""
    written = (f"{hours}h" if hours else "") + (f"{minutes:f}m" if minutes else "")
    assume(written)
    canonical = format_duration(parse_duration(written))
    assert parse_duration(canonical) == parse_duration(written)
    assert len(canonical) <= DURATION_MAX_LENGTH and re.fullmatch(DURATION_PATTERN, canonical)
