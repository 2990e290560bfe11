"""The shared error formatter never echoes unbounded input: a quoted value is cut to a few dozen
characters with an ellipsis, a field path likewise, and every message is one line."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from greenops.common.errors import MAX_MESSAGE_CHARS, QUOTE_CHARS, field_errors, quote


class _Named(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str

    @field_validator("name")
    @classmethod
    def _short(cls, v: str) -> str:
        if len(v) > 3:
            raise ValueError(f"{v!r} is not a valid name:\nuse three letters")
        return v


def errors_of(doc: dict) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as info:
        _Named.model_validate(doc)
    return field_errors(info.value.errors())


def test_a_long_quoted_value_is_cut_with_an_ellipsis():
    [(field, msg)] = errors_of({"name": "x" * 1_000_000})
    assert field == "name"
    assert msg == f"'{'x' * (QUOTE_CHARS - 1)}…' is not a valid name: use three letters"


def test_short_values_and_prose_are_left_as_they_are():
    [(_, msg)] = errors_of({"name": "abcd"})
    assert msg == "'abcd' is not a valid name: use three letters"


def test_an_unknown_key_of_any_length_is_a_bounded_field_path():
    [(field, msg)] = errors_of({"name": "a", "k" * 100_000: 1})
    assert msg == "Extra inputs are not permitted"
    assert field == "k" * (QUOTE_CHARS - 1) + "…"


def test_any_message_is_one_bounded_line():
    class _Loud(BaseModel):
        v: int

        @field_validator("v", mode="before")
        @classmethod
        def _loud(cls, v: object) -> object:
            raise ValueError("because " + "word " * 100_000)

    with pytest.raises(ValidationError) as info:
        _Loud.model_validate({"v": 1})
    [(_, msg)] = field_errors(info.value.errors())
    assert len(msg) <= MAX_MESSAGE_CHARS and msg.endswith("…") and "\n" not in msg


@pytest.mark.parametrize(
    "value, expected",
    [
        ("short", "'short'"),
        ("y" * 200, "'" + "y" * (QUOTE_CHARS - 1) + "…'"),
    ],
)
def test_quote_bounds_any_string(value, expected):
    assert quote(value) == expected


def test_quote_never_builds_the_whole_text_of_a_large_value():
    nested: list = ["lol"] * 9
    for _ in range(8):
        nested = [nested] * 9  # 387 million items if written out
    text = quote({"name": nested})
    assert text.startswith("{'name': [[[") and len(text) <= QUOTE_CHARS + 2
