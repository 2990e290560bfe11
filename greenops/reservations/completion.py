"""A run's own report of its end, with a credential scoped to its one reservation.

The owner of an active reservation (its tenant's writer on the Pulumi path, the controller on the
cluster path) asks for a completion token when it renders the VM; the token goes into the VM's
user-data, and the script's wrapper presents it to ``POST /reservations/{key}/completion`` with the
exit status when the script ends. Only the token's SHA-256 digest is stored, on the reservation's
row: a new token replaces the last one (which then reports nothing), a new decision clears it, and
it is good for nothing else: no other endpoint takes it, and it reports for its own reservation only
(its tenant's key: the report names the key, and the token says whose, since another tenant may hold
the same key).

What the run reported is recorded once (``completion``: exit status, and when the scheduler received
it, by its own clock, never the VM's); the same report again is a replay, a different one a
conflict. The lifecycle's owner then records Completed (exit status 0) or Failed from it
(greenops.placing.lifecycle).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import and_, select, update

from greenops.common.clock import stamp
from greenops.common.errors import GreenOpsError

from .errors import UnknownReservation
from .store import ACTIVE, ReservationStore
from .tables import reservations

PREFIX = "gor_"  # says what a leaked string is: a run's report credential


class CompletionRefused(GreenOpsError):
    """The token is not this reservation's, or the reservation takes no report; names the key."""


class CompletionConflict(GreenOpsError):
    """The run already reported a different end."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(store: ReservationStore, tenant: str, key: str, now: datetime, replace: bool = False) -> str:
    """A completion token for tenant ``tenant``'s active reservation ``key``. Once per decision unless ``replace``
    (the last one then stops working): an owner that asks again after a crash learns that its first
    token went out, rather than silently invalidating the one its VM may already carry."""
    token = PREFIX + secrets.token_urlsafe(32)
    mine = and_(reservations.c.tenant == tenant, reservations.c.key == key)
    with store.writing("completion_token") as conn:
        query = select(reservations.c.phase, reservations.c.completion_token_sha256).where(mine)
        row = conn.execute(query.with_for_update()).first()
        if row is None:
            raise UnknownReservation(f"reservation {key}: no such key")
        if row.phase not in ACTIVE:
            raise CompletionRefused(f"reservation {key} is {row.phase}: a run that ended reports nothing more")
        if row.completion_token_sha256 and not replace:
            raise CompletionConflict(
                f"reservation {key}: its completion token was issued already (replace=true: a new one)"
            )
        conn.execute(update(reservations).where(mine).values(completion_token_sha256=_digest(token), updated_at=now))
    return token


def record(store: ReservationStore, key: str, token: str, exit_status: int, now: datetime) -> dict[str, Any]:
    """Record the run's end on the reservation ``key`` whose completion token ``token`` is; the row.
    Of the tenants holding ``key``, the token's is the one: every row's digest is compared, so the
    time taken says nothing about which, or whether any, matched."""
    refused = f"reservation {key}: the completion token is not this reservation's (or was replaced)"
    given = _digest(token)
    with store.writing("completion") as conn:
        rows = conn.execute(select(reservations).where(reservations.c.key == key).with_for_update()).mappings().all()
        # a row without a token matches nothing: no digest is empty
        matched = [r for r in rows if hmac.compare_digest(r["completion_token_sha256"] or "", given)]
        if not token.startswith(PREFIX) or not matched:
            raise CompletionRefused(refused)  # no row, or none whose token this is: no hint which
        row = matched[0]
        done = row["completion"]
        if done is not None:
            if done["exitStatus"] == exit_status:
                return dict(row)  # a retried report
            raise CompletionConflict(
                f"reservation {key}: the run already reported exit status {done['exitStatus']} at {done['reportedAt']}"
            )
        if row["phase"] not in ACTIVE:
            raise CompletionRefused(f"reservation {key} is {row['phase']}: its run's end is recorded already")
        completion = {"exitStatus": exit_status, "reportedAt": stamp(now)}
        mine = and_(reservations.c.tenant == row["tenant"], reservations.c.key == key)
        conn.execute(update(reservations).where(mine).values(completion=completion, updated_at=now))
        return {**dict(row), "completion": completion}
