"""What a caller's text may be where the record keeps it or compares a column with it.

PostgreSQL refuses a NUL byte in text (a 500 for what the caller sent, where SQLite took it), and
a value longer than its column is refused or cut by the database. So text is checked at the edge:

- a ``Word`` (a reservation key, and a filter on any of the record's name-like columns: tenant,
  zone, region, provider, path, phase): printable ASCII without spaces, 512 at most (the key's
  column, the longest of them). No row has a value of another shape, so none is lost by the rule;
- ``Text`` (a reason): free text but for the NUL byte; its length is bounded where it is used.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

KEY_PATTERN = r"^[\x21-\x7e]+$"
KEY_MAX = 512

Word = Annotated[str, Field(min_length=1, max_length=KEY_MAX, pattern=KEY_PATTERN)]


def _without_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain a NUL byte (the record cannot store one)")
    return value


Text = Annotated[str, AfterValidator(_without_nul)]
