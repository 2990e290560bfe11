"""Declared principals for tests that restart a scheduler on a fresh record: a principal issued
through POST /credentials lives in one record, a declared one (``--principals``, by its token's
digest) in the file every scheduler process started with it reads, as in a cluster install
(components.scheduler declares OPA that way)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml

from greenops.identity.tokens import digest


@dataclass(frozen=True)
class Declared:
    path: Path  # the principals file, for SchedulerServer(principals=...)
    tokens: dict[str, str]  # principal name -> its token


def declare(folder: Path, **principals: dict) -> Declared:
    """``declare(tmp, opa={"paths": ["cluster"]}, ml={"tenants": ["ml"], "paths": ["pulumi"]})``:
    each principal (role write unless given) with a fresh random token."""
    tokens = {name: secrets.token_hex(24) for name in principals}
    entries = [
        {"name": name, "tokenSha256": digest(tokens[name]), "role": "write", **scopes}
        for name, scopes in principals.items()
    ]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "principals.yaml"
    path.write_text(yaml.safe_dump({"principals": entries}, sort_keys=False))
    return Declared(path, tokens)


def declare_opa(folder: Path) -> Declared:
    """OPA as a cluster install declares it: write, every tenant, the cluster path only."""
    return declare(folder, opa={"paths": ["cluster"]})
