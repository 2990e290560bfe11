"""A progress bar for the long runs (``greenops up --shards``, ``greenops-eval``), on stderr and only when
stderr is a terminal: a CI log or a test reads exactly what it read before, and stdout stays the
command's output."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

Advance = Callable[[str | None], None]
"""One step done; the text, when given, says what runs next."""


@contextmanager
def progress(description: str, total: int, stream: TextIO | None = None) -> Iterator[Advance]:
    """Yields ``advance``; safe to call from worker threads (Rich's Progress holds a lock)."""
    stream = stream or sys.stderr
    if not stream.isatty():

        def nothing(text: str | None = None) -> None:
            pass

        yield nothing
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    # transient: the bar leaves the terminal when done, so what stays is what a log would have shown
    with Progress(*columns, console=Console(file=stream), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def advance(text: str | None = None) -> None:
            bar.update(task, advance=1, description=text)  # None keeps the description

        yield advance
