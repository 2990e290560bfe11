"""Pulumi's file backend (``file://``), with atomic writes only.

The backend stores each stack's state through gocloud's fileblob driver. That driver writes the
state file atomically (a temporary file, then a rename), but by default it also writes a sidecar
``<file>.attrs`` beside it, and that one in place: truncated, then filled. A read of the stack in
between finds the sidecar empty and fails with ``failed to load checkpoint: EOF``.

Reads during writes are ordinary here: a ``pulumi up`` from the CLI writes its state after every
step while the program reads its own outputs through a stack reference (greenops/stack/program.py,
PreviousPass), and ``greenops placements`` or a second run read a stack another run is updating.
Measured with the pinned CLI (3.259): 51 of 224 ``pulumi stack output`` calls failed so while an
``up`` of 300 resources wrote its state; with ``metadata=skip`` (fileblob's documented switch: no
sidecar at all), 0 of 177. Pulumi reads nothing it needs from the sidecar. A sidecar written before
is still read, and is never rewritten, so it cannot be caught half-written either.
Writing no sidecar also spares an MD5 of the whole state per write: an ``up`` placing 100 workloads
with the state written after every step took 49.9 and 52.9 s, against 58.0 and 58.7 s with
sidecars (benchmarks/pulumi_up.py).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

SCHEME = "file://"
NO_SIDECAR = ("metadata", "skip")


def writes_sidecars(url: str | None) -> bool:
    """Whether ``url`` is a file backend that writes sidecar files in place (no ``metadata`` setting)."""
    if not url or not url.startswith(SCHEME):
        return False
    return NO_SIDECAR[0] not in dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def without_sidecars(url: str | None) -> str | None:
    """``url`` with ``metadata=skip`` added when it is a file backend that would write sidecars;
    any other URL (or a file backend whose ``metadata`` the caller set) unchanged."""
    if url is None or not writes_sidecars(url):
        return url
    return f"{url}{'&' if '?' in url else '?'}{urlencode([NO_SIDECAR])}"


def backend_folder(url: str | None) -> Path | None:
    """The folder of a file backend URL (its query left out, ``~`` expanded); None for any other backend."""
    if not url or not url.startswith(SCHEME):
        return None
    return Path(url.removeprefix(SCHEME).split("?", 1)[0]).expanduser()
