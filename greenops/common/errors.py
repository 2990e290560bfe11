"""Errors that carry a message fit for the person who wrote the workload or the stack config.

Every error names the object it is about and the reason, so callers print ``str(err)`` and never
a traceback.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails


class GreenOpsError(Exception):
    """Base class: a user-facing failure with a self-explanatory message."""


class CatalogError(GreenOpsError):
    """A fact is missing from, or inconsistent in, the curated catalog in ``data/``."""


class NoFittingSize(CatalogError):
    """No VM size in a region offers the requested vCPU and memory."""


class RenderError(GreenOpsError):
    """A decision cannot be turned into provider manifests (e.g. missing settings)."""


# A message quotes what the user wrote so they can find it, but a value can be anything a tenant
# writes: a megabyte string, or a few hundred bytes of YAML aliases that expand to a billion items.
# A quoted value keeps this many characters, a whole message this many.
QUOTE_CHARS = 80
MAX_MESSAGE_CHARS = 400
ELLIPSIS = "…"

# reprlib stops walking a container after a few items and levels, so the repr of a value of any
# size costs what the few shown items cost
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel = 3
_SHORT_REPR.maxtuple = _SHORT_REPR.maxlist = _SHORT_REPR.maxdict = _SHORT_REPR.maxset = 4
_SHORT_REPR.maxstring = _SHORT_REPR.maxlong = _SHORT_REPR.maxother = QUOTE_CHARS

# A quoted value in a message ('...' or "..." as repr writes them); a quote after a letter is an
# apostrophe in prose ("it's"), not the start of a value.
_QUOTED = re.compile(r"""(?<![A-Za-z])(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")


def cut(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` if it is at most ``limit`` characters, else its first ``limit - 1`` and an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def quote(value: object) -> str:
    """``repr(value)`` cut to about QUOTE_CHARS characters, without ever building the whole repr."""
    if isinstance(value, str):
        if len(value) <= QUOTE_CHARS:
            return repr(value)
        head = repr(value[: QUOTE_CHARS - 1])
        return head[:-1] + ELLIPSIS + head[-1]
    try:
        return cut(_SHORT_REPR.repr(value))
    except ValueError:  # an int of more digits than Python will write out
        return f"<{type(value).__name__} too large to show>"


def one_line(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A message as one line of at most ``limit`` characters, each quoted value in it cut to
    QUOTE_CHARS: the last word on anything a user-facing message says about user input."""
    flat = " ".join(message.split())
    return cut(_QUOTED.sub(lambda m: _cut_quoted(m.group()), flat), limit)


def _cut_quoted(quoted: str) -> str:
    if len(quoted) <= QUOTE_CHARS + 2:
        return quoted
    return quoted[:QUOTE_CHARS] + ELLIPSIS + quoted[-1]


def field_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as a readable path: ("kinds", 0, "scope") -> "kinds[0].scope".
    A key comes from the input (an unknown key of any length), so each part is cut."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{shown(part)}" if out else shown(part))
    return out


def shown(name: object) -> str:
    """A key or path as written (cut) when it reads as one; quoted when empty or holding spaces or
    control characters, which would make the message ambiguous or break its line."""
    text = str(name)
    return cut(text) if text and text.isprintable() and " " not in text else quote(text)


def field_errors(
    errors: Sequence[ErrorDetails], reason: Callable[[ErrorDetails], str | None] | None = None
) -> list[tuple[str, str]]:
    """(field path, message) for each of a pydantic ValidationError's ``errors()``, without
    pydantic's "Value error, " prefix: the one way every edge names a bad field. ``reason`` may
    word an error better than pydantic does; where it returns None, pydantic's message stands.
    Each message is one line with its quoted values cut (see one_line)."""
    return [
        (field_path(e["loc"]), one_line((reason(e) if reason else None) or e["msg"].removeprefix("Value error, ")))
        for e in errors
    ]
