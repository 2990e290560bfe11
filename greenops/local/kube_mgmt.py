"""A stand-in for kube-mgmt, OPA's sidecar, on the real node here: kube-mgmt's image is published
only on Docker Hub and its module is not on the Go module proxy, so it cannot be had on this machine.

It takes the flags the PolicyEngine component gives kube-mgmt and does what they ask of it:
``--replicate-cluster=v1/namespaces`` keeps ``data.kubernetes.namespaces[<name>]`` and
``--replicate=<group>/<version>/<plural>`` keeps ``data.kubernetes.<plural>[<namespace>][<name>]``
in OPA, written with the admin token of ``--opa-auth-token-file``. It lists every ``--resync``
seconds and writes a resource's whole map when it changed (kube-mgmt watches; a list is the same
state, reached at most one period later). Policies and data ConfigMaps are off, as the component
asks (``--enable-policies=false --enable-data=false``); any other flag is refused by name.

Run in a pod: ``python -m greenops.local.kube_mgmt --opa-url=... --replicate-cluster=v1/namespaces``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from greenops.controller.kube import api_client

log = logging.getLogger("greenops.kube-mgmt")
PATH = "kubernetes"  # kube-mgmt's --replicate-path default


@dataclass(frozen=True)
class Replicated:
    """One replicated resource: ``group/version/plural`` (the core group is empty: ``v1/namespaces``)."""

    group: str
    version: str
    plural: str
    cluster: bool

    @classmethod
    def parse(cls, flag: str, value: str, cluster: bool) -> Replicated:
        parts = value.split("/")
        if len(parts) == 2:
            parts.insert(0, "")
        if len(parts) != 3 or not all(parts[1:]):
            raise ValueError(f"{flag}={value}: expected <group>/<version>/<plural> or v1/<plural>")
        return cls(parts[0], parts[1], parts[2], cluster)

    @property
    def list_path(self) -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        return f"{base}/{self.plural}"

    def tree(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        """The items as kube-mgmt lays them out under data.kubernetes.<plural>."""
        out: dict[str, Any] = {}
        for item in items:
            meta = item["metadata"]
            meta.pop("managedFields", None)  # kube-mgmt drops them too: bookkeeping, not state
            if self.cluster:
                out[meta["name"]] = item
            else:
                out.setdefault(meta["namespace"], {})[meta["name"]] = item
        return out


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[Replicated]]:
    p = argparse.ArgumentParser(prog="kube-mgmt", description=__doc__.splitlines()[0])
    p.add_argument("--opa-url", required=True)
    p.add_argument("--kubeconfig", help="else the pod's ServiceAccount")
    p.add_argument("--opa-allow-insecure", action="store_true")
    p.add_argument("--opa-auth-token-file")
    p.add_argument("--enable-policies", choices=["false"], default="false")
    p.add_argument("--enable-data", choices=["false"], default="false")
    p.add_argument("--replicate", action="append", default=[])
    p.add_argument("--replicate-cluster", action="append", default=[])
    p.add_argument("--resync", type=float, default=1.0, help="seconds between lists (a stand-in's own flag)")
    args = p.parse_args(list(argv))
    try:
        resources = [Replicated.parse("--replicate", v, False) for v in args.replicate]
        resources += [Replicated.parse("--replicate-cluster", v, True) for v in args.replicate_cluster]
    except ValueError as exc:
        p.error(str(exc))
    if not resources:
        p.error("nothing to replicate: give --replicate or --replicate-cluster")
    return args, resources


def opa_client(args: argparse.Namespace) -> httpx.Client:
    token = Path(args.opa_auth_token_file).read_text().strip() if args.opa_auth_token_file else None
    return httpx.Client(
        base_url=args.opa_url.rstrip("/"),
        verify=not args.opa_allow_insecure,  # OPA's serving cert in the same pod, over loopback
        headers={"Authorization": f"Bearer {token}"} if token else {},
        timeout=10,
    )


def sync_once(
    get: Callable[[str], list[dict[str, Any]]], opa: httpx.Client, resources: list[Replicated], last: dict[str, str]
) -> int:
    """List each resource and write its map to OPA when it differs from the last written; the
    number of writes. ``last`` (plural -> JSON written) is kept by the caller across passes."""
    writes = 0
    for r in resources:
        tree = r.tree(get(r.list_path))
        body = json.dumps(tree, sort_keys=True)
        if last.get(r.plural) == body:
            continue
        opa.put(
            f"/data/{PATH}/{r.plural}", content=body, headers={"Content-Type": "application/json"}
        ).raise_for_status()
        last[r.plural] = body
        writes += 1
    return writes


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    args, resources = parse(sys.argv[1:] if argv is None else argv)
    kube = api_client(args.kubeconfig)

    def get(path: str) -> list[dict[str, Any]]:
        listed = kube.call_api(
            path, "GET", response_types_map={200: "object"}, auth_settings=["BearerToken"], _return_http_data_only=True
        )
        items: list[dict[str, Any]] = listed["items"]
        return items

    last: dict[str, str] = {}
    with opa_client(args) as opa:
        while True:
            try:
                if writes := sync_once(get, opa, resources, last):
                    log.info("replicated %d resource(s) into OPA", writes)
            except Exception as exc:  # OPA restarting, the API server away: the next pass retries
                log.warning("replication pass failed: %s", str(exc).splitlines()[0][:300])
                last.clear()  # OPA may have restarted empty: write everything again
            time.sleep(args.resync)


if __name__ == "__main__":
    raise SystemExit(main())
