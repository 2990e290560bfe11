"""A principal and what its scopes allow. Every decision about a body's tenant, path or quota, and
about who may change a reservation, is taken here, so the routes cannot each read it differently."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from greenops.common.errors import GreenOpsError

# report: reads, reports phases, confirms holds and releases what it owns, but never books (the
# cluster path's controller: it follows what admission booked and must not place anything itself)
Role = Literal["read", "report", "write", "admin"]
Path = Literal["pulumi", "cluster", "api"]
ALL_PATHS: frozenset[str] = frozenset({"pulumi", "cluster", "api"})
_RANK = {"read": 0, "report": 1, "write": 2, "admin": 3}


class Forbidden(GreenOpsError):
    """The caller is known but its scopes do not cover what it asked (HTTP 403)."""


class Invisible(GreenOpsError):
    """A reservation of a tenant the caller may not read: answered exactly as an absent key
    (HTTP 404), so that no one learns which keys another tenant holds."""


@dataclass(frozen=True)
class Principal:
    name: str
    role: Role
    tenants: frozenset[str] | None  # None: every tenant
    paths: frozenset[str]  # the paths whose reservations it books and changes
    # What tells principals apart where their names may not (two tokens issued with one name): the
    # rate limit's bucket. Unset: the name, unique for the admin, declared and ServiceAccount ones.
    credential: str = ""

    @property
    def bucket(self) -> str:
        return self.credential or f"name:{self.name}"

    def bucket_for(self, tenant: str, path: str) -> str:
        """The rate limit's bucket for a booking under ``tenant`` on ``path``. On the cluster path
        the tenant is the namespace's, which OPA reads from the API server and no object's author
        chooses: OPA's one principal admits for every tenant, so it gets a bucket per tenant, and one
        tenant's burst (dry runs included) never spends another's. Elsewhere the caller chooses the
        body's tenant, so a principal's tenants share its one bucket: rotating them gains nothing."""
        return f"{self.bucket}|tenant:{tenant}" if path == "cluster" else self.bucket

    # --- the scopes ---------------------------------------------------------------------------
    def has(self, role: Role) -> bool:
        return _RANK[self.role] >= _RANK[role]

    def reads(self, tenant: str) -> bool:
        return self.tenants is None or tenant in self.tenants

    def writes(self, tenant: str, path: str, role: Role = "write") -> bool:
        return self.has(role) and self.reads(tenant) and path in self.paths

    def describe(self) -> str:
        tenants = "every tenant" if self.tenants is None else "tenant(s) " + ", ".join(sorted(self.tenants))
        return f"principal {self.name} ({self.role}; {tenants}; path(s) {', '.join(sorted(self.paths)) or 'none'})"

    # --- what a booking is made under ---------------------------------------------------------
    def tenant_for(self, asked: str | None, default: str) -> str:
        """The tenant a booking counts against: the one the body names, if this principal acts for
        it; when the body names none, its only tenant, or the platform's default tenant."""
        if asked is None:
            if self.tenants is not None and len(self.tenants) == 1:
                return next(iter(self.tenants))
            asked = default
        if not self.reads(asked):
            raise Forbidden(f"tenant: {self.describe()} may not act for tenant {asked}")
        return asked

    def path_for(self, asked: str | None) -> str:
        """The path a booking is recorded under: the body's, if this principal may book on it; when
        the body names none, its only path, else api."""
        if asked is None:
            asked = next(iter(self.paths)) if len(self.paths) == 1 else "api"
        if asked not in self.paths:
            raise Forbidden(f"path: {self.describe()} may not book on path {asked}")
        return asked

    def may_change(self, row: Mapping[str, Any]) -> None:
        """Raises Forbidden unless this principal may book over the reservation ``row`` (its tenant and path)."""
        self._owns(row, "write")

    def may_report(self, row: Mapping[str, Any]) -> None:
        """Raises Forbidden unless this principal may report on, confirm or release ``row``: the
        report role is enough (its tenant and path still have to be the principal's). A row of a
        tenant it may not read is Invisible: the caller cannot tell it from an absent one."""
        if not self.reads(row["tenant"]):
            raise Invisible(f"reservation {row['key']}: no such key")
        self._owns(row, "report")

    def _owns(self, row: Mapping[str, Any], role: Role) -> None:
        if not self.writes(row["tenant"], row["path"], role):
            raise Forbidden(
                f"reservation {row['key']} belongs to tenant {row['tenant']} on path {row['path']}: "
                f"{self.describe()} may not change it"
            )

    # --- what a credential it issues may prove ------------------------------------------------
    def covers(self, role: Role, tenants: Collection[str] | None, paths: Collection[str]) -> bool:
        """Whether a principal of ``role`` for ``tenants`` (None: every tenant) on ``paths`` is
        within this one's scopes: no higher role, no tenant or path it does not have itself."""
        if not self.has(role) or not set(paths) <= self.paths:
            return False
        if self.tenants is None:
            return True
        return tenants is not None and set(tenants) <= self.tenants

    def may_issue(self, role: Role, tenants: Collection[str] | None, paths: Collection[str]) -> None:
        """Raises Forbidden unless a token for that principal stays within this one's scopes (a
        token scoped to one tenant cannot mint one for every tenant, nor for another)."""
        if not self.covers(role, tenants, paths):
            asked = "every tenant" if tenants is None else "tenant(s) " + ", ".join(sorted(tenants))
            raise Forbidden(
                f"credentials: {self.describe()} may not issue a {role} token for {asked} on path(s) "
                f"{', '.join(sorted(paths))}: a token can only be issued within its issuer's scopes"
            )

    def may_read(self, row: Mapping[str, Any]) -> bool:
        return self.reads(row["tenant"])

    def readable(self, asked: str | None) -> Collection[str] | None:
        """The tenants a listing may show: the asked one (if readable), else all of this principal's."""
        if asked is not None:
            if not self.reads(asked):
                raise Forbidden(f"tenant: {self.describe()} may not read tenant {asked}'s reservations")
            return [asked]
        return None if self.tenants is None else sorted(self.tenants)
