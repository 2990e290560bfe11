"""The scheduler's declared principals: a YAML file the platform mounts (``--principals``).

Each entry is one principal, proven either by a Kubernetes ServiceAccount's token (TokenReview) or
by a static token of which only the SHA-256 digest is written here: the platform's own callers,
whose credentials exist before the scheduler does (OPA's, from a Secret). Tenants' tokens are not
declared here: they are issued and revoked at run time (``greenops token``).

    principals:
      - name: opa
        tokenSha256: 9f86d0…          # sha256 of the token in OPA's Secret
        role: write
        paths: [cluster]              # tenants omitted: every tenant, as namespaces say
      - serviceAccount: greenops-system/greenops-dashboard
        role: read
        paths: [api]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from greenops.common.errors import GreenOpsError, field_errors
from greenops.common.user_yaml import load_yaml_file

from .principal import Principal, Role
from .tokens import Tenant


class PrincipalEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str | None = Field(default=None, min_length=1, max_length=128)
    service_account: str | None = Field(
        default=None,
        alias="serviceAccount",
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="namespace/name",
    )
    token_sha256: str | None = Field(default=None, alias="tokenSha256", pattern=r"^[0-9a-f]{64}$")
    role: Role = "write"
    tenants: list[Tenant] | None = Field(default=None, max_length=1000, description="null: every tenant")
    paths: list[Literal["pulumi", "cluster", "api"]] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_proof(self) -> PrincipalEntry:
        if (self.service_account is None) == (self.token_sha256 is None):
            raise ValueError("give exactly one of serviceAccount and tokenSha256")
        if self.token_sha256 is not None and not self.name:
            raise ValueError("a tokenSha256 principal needs a name")
        return self

    def principal(self) -> Principal:
        return Principal(
            name=self.name or f"serviceaccount:{self.service_account}",
            role=self.role,
            tenants=None if self.tenants is None else frozenset(self.tenants),
            paths=frozenset(self.paths),
        )


class PrincipalsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    principals: list[PrincipalEntry] = Field(default_factory=list, max_length=1000)


@dataclass(frozen=True)
class Declared:
    by_account: dict[str, Principal] = field(default_factory=dict)  # namespace/name -> principal
    by_digest: dict[str, Principal] = field(default_factory=dict)  # sha256 hex -> principal


def load_principals(path: Path) -> Declared:
    # user_yaml bounds the size, refuses aliases and names the line of a YAML error
    raw = load_yaml_file(path, str(path)) or {}
    try:
        parsed = PrincipalsFile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{where}: {why}" for where, why in field_errors(exc.errors(include_input=False)))
        raise GreenOpsError(f"{path}: {problems}") from None
    declared = Declared()
    for entry in parsed.principals:
        if entry.service_account is not None:
            declared.by_account[entry.service_account] = entry.principal()
        elif entry.token_sha256 is not None:
            declared.by_digest[entry.token_sha256] = entry.principal()
    return declared
