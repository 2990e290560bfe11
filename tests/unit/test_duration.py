from datetime import timedelta

import pytest

from greenops.models import format_duration, parse_duration


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
    "text,canonical", [("6h", "6h"), ("90m", "1h30m"), ("1h30m", "1h30m"), ("45m", "45m"), (24, "24h")]
)
def test_format_is_canonical_and_round_trips(text, canonical):
    assert format_duration(parse_duration(text)) == canonical
    assert parse_duration(canonical) == parse_duration(text)
