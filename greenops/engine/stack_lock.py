"""One greenops run per stack at a time, on a file backend; and every refusal told the same way.

Pulumi's file backend (``file://``) locks a stack by writing ``.pulumi/locks/<org>/<project>/
<stack>/<uuid>.json`` and then listing that folder and reading every other file in it. The write
goes through a temporary ``<uuid>.json.<hex>.tmp`` beside the lock (Pulumi sets fileblob's
``no_tmp_dir``) and a rename, and an ending run deletes its lock. A run that lists the folder while
another is writing or deleting its lock lists a file that is gone when it reads it, and fails with
the read's raw error (``...json.<hex>.tmp: no such file or directory``, ``NotFound``, ``could not
list bucket``) instead of "currently locked". The stress test (tests/provider/test_two_runs_at_once.py)
measured it with the pinned CLI.

So every greenops operation on a file-backend stack first takes an advisory ``flock`` on a file
beside the state (``<backend>/.greenops/locks/<project>/<stack>.lock``). Two greenops runs never
reach Pulumi's lock at the same time; the loser is refused at once, told which run holds the stack.
The kernel releases a ``flock`` when its holder dies, so a ``kill -9`` leaves nothing to clear.
A plain ``pulumi up`` does not take this lock, so a greenops run beside one can still meet
Pulumi's race: ``lock_race`` recognises those errors and they become the same refusal.

A bucket backend (``s3://``, ``gs://``, ``azblob://``) keeps its locks the same way, and no
``flock`` reaches a bucket: there the runs of a stack are kept apart by who runs them (the
operator's one workspace per stack, the CI job's concurrency group), and ``lock_race`` still turns
the race into the refusal. Pulumi Cloud locks on its server.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from greenops.common.errors import GreenOpsError
from greenops.common.file_backend import backend_folder

LOCKS = (".greenops", "locks")
_ARGV_SHOWN = 160  # characters of the holder's command line kept in its lock file


class StackLocked(GreenOpsError):
    """Another run holds the stack: a greenops run (its flock) or Pulumi's own lock."""


def lock_file(backend_url: str | None, project: str, stack: str, work_dir: str | None = None) -> Path | None:
    """The greenops lock file of ``stack`` on a file backend; None for any other backend. A relative
    backend folder is the CLI's, which runs in ``work_dir``."""
    folder = backend_folder(backend_url)
    if folder is None:
        return None
    name = stack.rsplit("/", 1)[-1]  # a fully qualified name's last part: the file backend's own key
    return Path(work_dir or ".").joinpath(folder, *LOCKS, project, f"{name}.lock").absolute()


# The thread that holds each lock file of this process. A pass holds its stack across its reads and
# its `up`; the `up` inside it (same thread) must not refuse its own pass. Another thread of the
# process opens the file anew, and flock refuses it as it refuses another process.
_held: dict[Path, int] = {}
_held_mutex = threading.Lock()


@contextmanager
def holding(backend_url: str | None, project: str, stack: str, work_dir: str | None = None) -> Iterator[None]:
    """Hold ``stack`` for this thread's operation; StackLocked at once when another run holds it.
    Within a hold of this thread, a hold of the same stack is the same hold."""
    path = lock_file(backend_url, project, stack, work_dir)
    with _held_mutex:
        nested = path is None or _held.get(path) == threading.get_ident()
    if nested or path is None:
        yield
        return
    fd = _take(path, stack)
    with _held_mutex:
        _held[path] = threading.get_ident()
    try:
        yield
    finally:
        with _held_mutex:
            del _held[path]
        os.ftruncate(fd, 0)  # the next reader finds no holder rather than this one's stale line
        os.close(fd)  # releases the flock


def _take(path: Path, stack: str) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    # (O_CLOEXEC, Python's default: a Pulumi CLI this process starts must not inherit the lock)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StackLocked(
            f"stack {stack} is being updated by another run ({_holder_of(path)}); try again when it ends"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps(_me()).encode())
    return fd


def _me() -> dict[str, object]:
    command = " ".join([Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:]])
    return {
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "command": command[:_ARGV_SHOWN],
        "since": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _holder_of(path: Path) -> str:
    """Who holds ``path``, as its holder wrote it; it may be mid-write, or just released."""
    try:
        holder = json.loads(path.read_text())
        return (
            f"greenops run `{holder['command']}`, pid {holder['pid']} on {holder['hostname']}, since {holder['since']}"
        )
    except (OSError, ValueError, TypeError, KeyError):
        return "another greenops run"


def pulumi_holders(backend_url: str | None, project: str, stack: str) -> list[str]:
    """Pulumi's own locks of ``stack`` on a file backend, each as its holder wrote it."""
    folder = backend_folder(backend_url)
    if folder is None:
        return []
    name = stack.rsplit("/", 1)[-1]
    found = []
    for lock in sorted(folder.glob(f".pulumi/locks/*/{project}/{name}/*.json")):
        try:
            h = json.loads(lock.read_text())
            found.append(f"pulumi pid {h['pid']} of {h['username']}@{h['hostname']}, since {h['timestamp']}")
        except (OSError, ValueError, TypeError, KeyError):
            continue  # deleted or being written as we look: its holder is ending or starting
    return found


# The read of a lock file that another run renames into place or deletes between Pulumi's listing
# and its read: the temporary file's or the lock's name, then the error of a file that is gone.
_LOCK_FILE_GONE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.json(\.[0-9a-f]+\.tmp)?"
    r"(: no such file or directory|\b.*\bNotFound)",
    re.IGNORECASE,
)
# Another run's temporary lock file read before anything was written to it: the JSON decoder's
# error is all the operation says, before it printed anything (an Automation API CommandError's text).
_LOCK_FILE_EMPTY = re.compile(r"stdout:\s*stderr:\s*error: unexpected end of JSON input\s*$")


def lock_race(text: str) -> bool:
    """Whether a failed operation's output is Pulumi's file-backend lock race: another run's lock
    file was listed, then was gone (renamed into place, deleted) or still empty when read. It is the
    same situation as a held lock. Measured with the pinned CLI, six plain `pulumi destroy` loops on
    one stack: 2 of 240 runs failed so (a deleted lock's ``stat ... no such file or directory``, an
    empty temporary file's JSON error), 23 were told "currently locked"; CI met the renamed kind."""
    if "could not list bucket" in text and "/.pulumi/locks/" in text:
        return True
    return bool(_LOCK_FILE_GONE.search(text) or _LOCK_FILE_EMPTY.search(text))
