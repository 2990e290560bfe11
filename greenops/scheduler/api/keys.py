"""The reservation key as a route's path parameter: the body key's schema (greenops.reservations.text),
so that a key no booking could have (a NUL byte, a space, longer than the record's column) is a 422
naming it, before any database sees it. A key is its tenant's (greenops.reservations.keyed): a
principal of several tenants names whose with ``?tenant=``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from greenops.reservations.text import KEY_MAX, KEY_PATTERN

ReservationKey = Annotated[str, Path(min_length=1, max_length=KEY_MAX, pattern=KEY_PATTERN)]
KeyTenant = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=128,  # the record's column
        pattern=KEY_PATTERN,  # as every value of it: a NUL byte never reaches the database
        description="whose reservation of the key: needed when several of the caller's tenants hold it (409)",
    ),
]
