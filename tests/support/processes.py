"""A long-running command as a user runs it: one stream of output lines (stdout and stderr), read
until a line says it is ready, then stopped as a terminal or a supervisor stops it."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable


class CommandLines:
    """``argv`` started in a session of its own, so that leaving the ``with`` block while it still
    runs (a failing test) kills it and whatever it started. ``lines`` holds every line read so far."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        self.lines: list[str] = []

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def until(self, done: Callable[[str], bool]) -> str:
        """Read lines until ``done`` holds for one (it sees each line as it comes); that line."""
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.append(line.rstrip())
            if done(self.lines[-1]):
                return self.lines[-1]
        raise AssertionError(f"the command ended (exit {self.proc.wait()}) before the line awaited:\n{self.text}")

    def finish(self, timeout: float) -> int:
        """Wait for it to end and read the rest of its output; its exit code."""
        rest, _ = self.proc.communicate(timeout=timeout)
        self.lines += rest.splitlines()
        return self.proc.returncode

    def __enter__(self) -> CommandLines:
        return self

    def __exit__(self, *_: object) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
