"""Which reservation a caller means by a key alone (the keyed routes: ``/reservations/{key}``).

A reservation is one tenant's key, so a key names a reservation only together with a tenant. A
caller of one tenant means its own; a caller of several (the admin, OPA's and the controller's
principals) may name the tenant, and otherwise means the one row of that key among the tenants it
reads. When several of them hold the key it has to name one: it reads them all, so saying which
hold it tells it nothing it could not list. A tenant it may not read is answered as if it held
nothing, exactly like an absent key.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .errors import AmbiguousKey
from .store import ReservationStore


def resolve(
    store: ReservationStore, key: str, readable: Collection[str] | None, tenant: str | None = None
) -> dict[str, Any] | None:
    """The row of ``key`` that a caller reading ``readable`` (None: every tenant) means, ``tenant``'s
    when it names one; None when there is none it may read. Raises AmbiguousKey when it names no
    tenant and more than one of its tenants hold the key."""
    if tenant is not None:
        if readable is not None and tenant not in readable:
            return None
        return store.get(tenant, key)
    rows = store.find(key, readable)
    if len(rows) > 1:
        holders = ", ".join(r["tenant"] for r in rows)
        raise AmbiguousKey(f"reservation {key} is held by tenants {holders}: pass ?tenant= to name the one you mean")
    return rows[0] if rows else None
