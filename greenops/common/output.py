"""How the command line prints what it lists: one table helper and the machine formats.

``-o table`` (the default) is a Rich table rendered to plain text, at most ``WIDTH`` columns wide, with
every column that is empty in every row left out (a report of planned runs has no hindsight to show).
``-o json`` and ``-o yaml`` print the same document of plain fields, the one a script reads: its field
names are each command's contract (the ``--help`` epilogs list them), so times are ISO-8601 UTC strings
and no cell ever carries Rich markup.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TextIO

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from greenops.common.clock import parse_time, stamp

FORMATS = ("table", "json", "yaml")
WIDTH = 100  # what a CI log, a pasted terminal and a review comment all show without wrapping
EMPTY = (None, "", "-")  # what a cell holds when the row has no value
GAP = 2  # spaces between two columns


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default="table",
        help="table (default), or the same content as a JSON or YAML document (fields: see below)",
    )


def width(stream: TextIO | None = None) -> int:
    """The terminal's width when ``stream`` is one, never more than ``WIDTH``; ``WIDTH`` otherwise, so a
    pipe or a test sees the same table whatever terminal it ran under."""
    stream = stream or sys.stdout
    if stream.isatty():
        return min(shutil.get_terminal_size((WIDTH, 24)).columns, WIDTH)
    return WIDTH


def table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    max_width: int | None = None,
    whole: Sequence[str] | None = None,
) -> str:
    """``rows`` under ``columns`` as plain text: no borders, two spaces between columns, ``-`` for a
    missing value (None), and the columns empty in every row (None, "" or "-") dropped. Cells are
    Text, never markup: a reason written by an operator ("<b>", "[red]") prints as written.

    The ``whole`` columns (by default the first) name the row: the others give way before them, so
    two rows never look alike because their names were cut. A column of instants is whole too: a
    time cut to ``2026-11-29T04:3…`` says nothing."""
    cells = [["-" if v is None else str(v) for v in row] for row in rows]
    keep = [i for i in range(len(columns)) if not cells or any(row[i] not in EMPTY for row in cells)]
    limit = max_width or width()
    named = set(columns[:1] if whole is None else whole)
    named |= {columns[i] for i in keep if any(INSTANT.fullmatch(row[i]) for row in cells)}
    widths = _fitted(
        [max([len(columns[i])] + [len(row[i]) for row in cells]) for i in keep],
        limit,
        [columns[i] in named for i in keep],
    )
    # no borders, two spaces between columns and none at the edges: the shape of kubectl's tables
    grid = Table(box=None, show_edge=False, pad_edge=False, padding=(0, GAP, 0, 0))
    for i, cap in zip(keep, widths, strict=True):
        # one line per row, so a row stays greppable: what does not fit ends in "…" (-o json has it whole)
        grid.add_column(Text(columns[i]), no_wrap=True, overflow="ellipsis", max_width=cap)
    for row in cells:
        grid.add_row(*(Text(row[i]) for i in keep))
    out = io.StringIO()
    Console(file=out, width=limit, color_system=None, highlight=False, emoji=False).print(grid)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


INSTANT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})")
NARROWEST = 7  # a cut column still shows six characters and its "…": "Runni…" reads, "R…" does not


def _fitted(widths: list[int], limit: int, whole: list[bool]) -> list[int]:
    """The columns' widths within ``limit``, the widest giving way first: a long region or time is cut
    rather than every short column (Rich's own fit takes from all of them alike). The ``whole``
    columns give way only when every other one is down to NARROWEST, and no column goes below it
    unless the table cannot fit otherwise."""
    widths = list(widths)

    def too_wide() -> bool:
        return sum(widths) + GAP * (len(widths) - 1) > limit

    others, every = [not w for w in whole], [True] * len(widths)
    # the others down to NARROWEST, then the whole ones too, then anything, to fit at all
    for may_cut, floor in ((others, NARROWEST), (every, NARROWEST), (every, 1)):
        while too_wide():
            cuttable = [(w, i) for i, w in enumerate(widths) if may_cut[i] and w > floor]
            if not cuttable:
                break
            widths[max(cuttable)[1]] -= 1
    return widths


def utc(value: str | datetime | None) -> str | None:
    """An instant as ISO-8601 UTC (``2027-01-01T00:00:00Z``), whatever offset it was written with."""
    if value is None:
        return None
    return stamp((value if isinstance(value, datetime) else parse_time(value)).astimezone(UTC))


def dump(document: Any, fmt: str) -> str:
    """``document`` as JSON or YAML: the same fields, in the same order."""
    if fmt == "json":
        return json.dumps(document, indent=2)
    if fmt == "yaml":
        return yaml.safe_dump(document, sort_keys=False).rstrip("\n")
    raise ValueError(f"not a document format: {fmt}")
