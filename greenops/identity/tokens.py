"""API tokens, stored hashed in the reservation record's database.

``issue`` returns the token once; only its SHA-256 digest is stored. ``lookup`` is one indexed read;
a token it finds valid is kept for a second (greenops.identity.verified), so a caller's burst costs
one read. A revoked token is refused from the next request on by the replica that revoked it, and
within that second by every other replica that shares the database.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import RowMapping, bindparam, insert, select, update

from greenops.common.errors import GreenOpsError
from greenops.common.instants import UtcInstant
from greenops.reservations import ReservationStore
from greenops.reservations.tables import api_tokens, stored_utc

from .principal import Principal, Role
from .verified import VerifiedTokens

PREFIX = "gos_"  # says what a leaked string is, to a secret scanner and to a person
TENANT_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$"  # a Kubernetes label value


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


Tenant = Annotated[str, Field(pattern=TENANT_PATTERN, max_length=63)]
PathName = Literal["pulumi", "cluster", "api"]
DEFAULT_PATHS: tuple[PathName, ...] = ("pulumi", "api")


class TokenRequest(BaseModel):
    """What ``POST /credentials`` takes: the principal a new token proves."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@/-]*$")
    role: Role = "write"
    tenants: list[Tenant] | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="the tenants it acts for; null (read and admin tokens only) for every tenant",
    )
    paths: list[PathName] = Field(default_factory=lambda: list(DEFAULT_PATHS), min_length=1, max_length=3)
    expires_at: UtcInstant | None = None

    @model_validator(mode="after")
    def _writers_name_their_tenants(self) -> TokenRequest:
        # A writer for every tenant on every path is what the old shared token was. The one writer
        # that acts for every tenant is the admission webhook (OPA), and only on the cluster path,
        # where the tenant is the namespace's label that OPA reads; the same holds for the cluster
        # path's controller, which reports and releases (role report) for every namespace.
        if self.tenants is None and self.role in ("write", "report") and set(self.paths) != {"cluster"}:
            raise ValueError(
                f"tenants: a {self.role} token names its tenants; only the cluster path's (OPA's, the "
                "controller's), read and admin tokens cover every tenant"
            )
        return self


@dataclass(frozen=True)
class Issued:
    id: str
    token: str  # shown once
    principal: Principal


class UnknownToken(GreenOpsError):
    """No token has this id."""


class TokenStore:
    """One per scheduler (its Authenticator's): the tokens it verified lately are kept here, and a
    revocation through it drops them."""

    def __init__(self, store: ReservationStore, verified: VerifiedTokens | None = None):
        self._store = store
        self._verified = verified or VerifiedTokens()

    def issue(self, req: TokenRequest, now: datetime, issuer: Principal) -> Issued:
        """A new token, within ``issuer``'s scopes (Forbidden otherwise). Its expiry is stored in
        UTC, whatever offset the request wrote it with: every backend compares it as UTC."""
        issuer.may_issue(req.role, req.tenants, req.paths)
        token = PREFIX + secrets.token_urlsafe(32)
        token_id = "tok_" + secrets.token_hex(6)
        tenants = sorted(set(req.tenants)) if req.tenants is not None else None
        with self._store.writing("token_issue") as conn:
            conn.execute(
                insert(api_tokens).values(
                    id=token_id,
                    name=req.name,
                    token_sha256=digest(token),
                    role=req.role,
                    tenants=tenants,
                    paths=sorted(set(req.paths)),
                    created_at=now,
                    expires_at=None if req.expires_at is None else req.expires_at.astimezone(UTC),
                )
            )
        return Issued(token_id, token, _principal(req.name, req.role, tenants, req.paths, token_id))

    def revoke(self, token_id: str, now: datetime, caller: Principal) -> dict[str, Any]:
        """Revokes a token within ``caller``'s scopes; one outside them is answered as absent."""
        with self._store.writing("token_revoke") as conn:
            found = conn.execute(select(api_tokens).where(api_tokens.c.id == token_id)).mappings().first()
            if found is None or not _within(caller, found):
                raise UnknownToken(f"token {token_id}: no such token")
            row = dict(found)
            if row["revoked_at"] is None:
                conn.execute(update(api_tokens).where(api_tokens.c.id == token_id).values(revoked_at=now))
                row["revoked_at"] = now
        self._verified.forget(token_id)  # committed: this scheduler refuses it from the next request
        return _public(row)

    def list(self, caller: Principal) -> list[dict[str, Any]]:
        """The tokens within ``caller``'s scopes (all of them for the platform's admin)."""
        with self._store.reading("token_list") as conn:
            rows = conn.execute(select(api_tokens).order_by(api_tokens.c.created_at)).mappings().all()
        return [_public(dict(r)) for r in rows if _within(caller, r)]

    def verified(self, token: str, now: datetime) -> Principal | str | None:
        """What ``token`` proves when it was verified lately (no read); None: ``lookup`` it."""
        return self._verified.get(digest(token), now)

    def lookup(self, token: str, now: datetime) -> Principal | str:
        """The principal ``token`` proves, or why it proves none, as the record says now."""
        key = digest(token)
        generation = self._verified.generation
        with self._store.reading_one("token_lookup") as conn:
            row = conn.execute(_BY_DIGEST, {"digest": key}).mappings().first()
        if row is None:
            return "the bearer token is not known"
        if row["revoked_at"] is not None:
            return f"token {row['id']} ({row['name']}) was revoked"
        expires = None if row["expires_at"] is None else stored_utc(row["expires_at"])
        if expires is not None and expires <= now:
            return f"token {row['id']} ({row['name']}) expired"
        principal = _principal(row["name"], row["role"], row["tenants"], row["paths"], row["id"])
        self._verified.keep(key, self._verified.verified(principal, row["id"], row["name"], expires), generation)
        return principal


# Built once (every request looks its token up): the statement keeps its compiled form's cache key.
_BY_DIGEST = select(api_tokens).where(api_tokens.c.token_sha256 == bindparam("digest"))


def _principal(
    name: str, role: str, tenants: Collection[str] | None, paths: Collection[str], token_id: str
) -> Principal:
    return Principal(
        credential=f"token:{token_id}",
        name=name,
        role=role,  # type: ignore[arg-type]  # stored from a validated TokenRequest
        tenants=None if tenants is None else frozenset(tenants),
        paths=frozenset(paths),
    )


def _within(caller: Principal, row: Mapping[str, Any] | RowMapping) -> bool:
    return caller.covers(row["role"], row["tenants"], row["paths"])


def _public(row: dict[str, Any]) -> dict[str, Any]:
    """A token's row without its digest."""
    row.pop("token_sha256", None)
    for k in ("created_at", "expires_at", "revoked_at"):
        if row.get(k) is not None:
            row[k] = stored_utc(row[k]).isoformat()
    return row
