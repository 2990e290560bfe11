"""Which shard a workload is in, and what a shard's stack is called: read by the program's config,
the operator's per-shard Stacks and ``greenops --shards`` alike (greenops/engine/shards.py runs them)."""

from __future__ import annotations

import hashlib


def shard_of(workload: str, count: int) -> int:
    """The shard of a workload: stable for its name, whatever else the stack declares."""
    return int.from_bytes(hashlib.sha256(workload.encode()).digest()[:8], "big") % count


def shard_stack(stack: str, index: int) -> str:
    return f"{stack}-shard-{index}"
