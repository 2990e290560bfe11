"""A real PostgreSQL server on loopback (tests and benchmarks of the reservation record).

It uses Debian's PostgreSQL server binaries, which ``make postgres`` (tools/install-deb.sh)
installs. PostgreSQL refuses to run as root, so when we are root the server runs as the
``postgres`` account the package creates.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from greenops.common.errors import GreenOpsError
from greenops.local.controlplane import free_port
from greenops.local.service import LoopbackService


def postgres_bindir() -> Path:
    """Where initdb and postgres are: GREENOPS_POSTGRES_BIN, else the newest Debian install."""
    if os.environ.get("GREENOPS_POSTGRES_BIN"):
        return Path(os.environ["GREENOPS_POSTGRES_BIN"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise GreenOpsError(
            "PostgreSQL server binaries not found: run `make postgres` (Debian's postgresql "
            "package) or set GREENOPS_POSTGRES_BIN"
        )
    return Path(found[-1]).parent


@dataclass
class PostgresServer(LoopbackService):
    """``with PostgresServer() as pg: pg.url`` -- a fresh cluster with one database and one role."""

    port: int = 0
    database: str = "greenops"
    user: str = "greenops"
    password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    max_connections: int = 200
    startup_timeout: float = 60.0
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="greenops-pg-")))
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    def start(self) -> None:
        bindir = postgres_bindir()
        self.port = self.port or free_port()
        data, log = self.workdir / "data", self.workdir / "postgres.log"
        (self.workdir / "pw").write_text(self.password)
        as_user = self._account()
        self._run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                self.user,
                f"--pwfile={self.workdir / 'pw'}",
                "-A",
                "scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            as_user,
        )
        (self.workdir / "pw").unlink()
        # the child writes through its own copy of the descriptor: this process keeps none open
        with log.open("ab") as out:
            self._proc = subprocess.Popen(
                [
                    str(bindir / "postgres"),
                    "-D",
                    str(data),
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.workdir),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    f"max_connections={self.max_connections}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                **as_user,
            )
        self._wait_ready(bindir, log)
        self._run(
            [
                str(bindir / "psql"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                "postgres",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                f'CREATE DATABASE "{self.database}"',
            ],
            as_user,
            env={**os.environ, "PGPASSWORD": self.password},
        )

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)  # "fast" shutdown: roll back sessions, checkpoint, exit
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _account(self) -> dict[str, Any]:
        if os.geteuid() != 0:
            return {}
        account = pwd.getpwnam("postgres")
        os.chown(self.workdir, account.pw_uid, account.pw_gid)
        os.chown(self.workdir / "pw", account.pw_uid, account.pw_gid)

        def demote() -> None:
            os.setgid(account.pw_gid)
            os.setuid(account.pw_uid)

        return {"preexec_fn": demote, "cwd": str(self.workdir)}

    def _run(self, argv: list[str], as_user: dict[str, Any], env: dict[str, str] | None = None) -> None:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, **as_user)
        if done.returncode != 0:
            raise GreenOpsError(
                f"{Path(argv[0]).name} failed ({done.returncode}): {(done.stderr or done.stdout)[-1500:]}"
            )

    def _wait_ready(self, bindir: Path, log: Path) -> None:
        proc = self._proc
        assert proc is not None, "start launches postgres first"
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise GreenOpsError(f"postgres exited with code {proc.returncode}: {log.read_text()[-2000:]}")
            ready = subprocess.run([str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"])
            if ready.returncode == 0:
                return
            time.sleep(0.2)
        raise GreenOpsError(f"postgres did not become ready within {self.startup_timeout:.0f}s")
