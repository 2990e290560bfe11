"""Code blocks in the docs that can run are run by a test.

The convention (docs/quickstart.md, "First steps"): a fenced block whose info string is ``console``
runs; any other block (``bash``, ``yaml``...) is only shown. In a ``console`` block a line starting
``$ `` is a command, and the lines after it, up to the next command, must appear in its output in that
order; ``...`` stands for lines left out. Whitespace runs compare equal, so a column that widens does
not fail a page. Only the project's own commands may run, from the repository root: the blocks are for
cheap, offline commands, and a ``make`` target or a server stays in a ``bash`` block."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from greenops.common.toolpaths import REPO

DOCS = REPO / "docs"
PROGRAMS = {"greenops", "greenops-eval", "greenops-forecast"}
ELIDED = "..."


@dataclass
class Command:
    line: str
    expected: list[str] = field(default_factory=list)


def console_blocks(text: str) -> list[list[Command]]:
    """The commands of each ``console`` block of a Markdown page, with the output each shows."""
    blocks: list[list[Command]] = []
    current: list[Command] | None = None
    for line in text.splitlines():
        fence = line.strip()
        if current is None:
            if fence.startswith("```") and fence[3:].strip() == "console":
                current = []
        elif fence.startswith("```"):
            blocks.append(current)
            current = None
        elif line.startswith("$ "):
            current.append(Command(line[2:].strip()))
        elif current and fence and fence != ELIDED:
            current[-1].expected.append(line)
    return blocks


def squeeze(line: str) -> str:
    return " ".join(line.split())


def environment() -> dict[str, str]:
    env = dict(os.environ)
    # the virtualenv's entry points first, as after `make setup` with .venv/bin on PATH
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # the pages describe this checkout: run its code, whichever checkout the virtualenv was installed from
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO), env.get("PYTHONPATH", "")] if p)
    # argparse wraps help to the terminal's width; a fixed one keeps the shown lines whole
    env["COLUMNS"] = "80"
    return env


def problems(command: Command) -> list[str]:
    """What is wrong with running ``command`` as the page shows it: nothing when it exits 0 and prints
    the lines shown."""
    argv = shlex.split(command.line)
    if not argv or argv[0] not in PROGRAMS:
        return [f"{command.line}: only {sorted(PROGRAMS)} run from the docs; show it in a bash block"]
    result = subprocess.run(argv, cwd=REPO, env=environment(), capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    found = []
    if result.returncode != 0:
        found.append(f"{command.line}: exit {result.returncode}\n{output}")
    lines = [squeeze(line) for line in output.splitlines()]
    at = 0
    for want in command.expected:
        hit = next((i for i in range(at, len(lines)) if squeeze(want) in lines[i]), None)
        if hit is None:
            found.append(f"{command.line}: no line {want.strip()!r} (in order) in its output:\n{output}")
            break
        at = hit + 1
    return found


def documented() -> list[tuple[str, Command]]:
    return [
        (f"{page.relative_to(DOCS).as_posix()}: {command.line}", command)
        for page in sorted(DOCS.rglob("*.md"))
        for block in console_blocks(page.read_text())
        for command in block
    ]


DOCUMENTED = documented()


def test_the_docs_show_runnable_blocks():
    assert len(DOCUMENTED) >= 3


@pytest.mark.parametrize("command", [c for _, c in DOCUMENTED], ids=[i for i, _ in DOCUMENTED])
def test_each_documented_command_runs_as_shown(command):
    assert problems(command) == []


SAMPLE = """Text.

```bash
$ greenops up --stack prod
```

```console
$ greenops --help
usage: greenops [-h]
...
    catalog             list regions

$ greenops catalog --provider gcp
```
"""


def test_the_extractor_takes_console_blocks_only():
    [block] = console_blocks(SAMPLE)
    assert [(c.line, c.expected) for c in block] == [
        ("greenops --help", ["usage: greenops [-h]", "    catalog             list regions"]),
        ("greenops catalog --provider gcp", []),
    ]


def test_a_broken_command_fails():
    [found] = problems(Command("greenops no-such-command"))
    assert found.startswith("greenops no-such-command: exit 2")


def test_output_not_shown_fails():
    assert problems(Command("greenops --help", ["usage: greenops [-h]"])) == []
    [found] = problems(Command("greenops --help", ["no such line in the help"]))
    assert "no line 'no such line in the help'" in found


def test_output_out_of_order_fails():
    catalog, serve = "list regions with zone", "run OPA and the scheduler on loopback"
    assert problems(Command("greenops --help", [catalog, serve])) == []
    assert problems(Command("greenops --help", [serve, catalog])) != []


def test_only_the_projects_commands_run():
    [found] = problems(Command("make test"))
    assert "show it in a bash block" in found
