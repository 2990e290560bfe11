"""A stop event that SIGTERM or SIGINT ends a wait on at once, whichever thread the signal lands on.

CPython runs a Python signal handler in the main thread only, and only when that thread runs
bytecode again. The kernel delivers a process's signal to any thread that does not block it, and
our long-running commands have others (the Automation API's gRPC server, the metrics endpoint,
an HTTP client's pool). When the signal lands on one of them, a main thread blocked in
``threading.Event.wait(3600)`` is not interrupted: it sleeps on, the handler pending, until the
wait times out. A ``greenops reconcile --watch`` between beats would then ignore SIGTERM for up
to an interval, and Kubernetes would kill it when the grace period ends.

``signal.set_wakeup_fd`` is CPython's remedy (asyncio uses it): the C-level handler writes a byte
to that descriptor from whichever thread took the signal. The main thread waits on the descriptor
with ``select``, wakes, and so runs the handler. Other threads wait on the event as usual.
"""

from __future__ import annotations

import select
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class SignalStop(threading.Event):
    """Set by the signals given (and by ``set()``, from any thread); a ``wait`` in the main thread
    ends as soon as either happens. ``close()`` puts back the handlers and wake-up descriptor it
    replaced. Install it from the main thread, as ``signal.signal`` requires."""

    def __init__(
        self, signals: Iterable[signal.Signals] = STOP_SIGNALS, said: Callable[[signal.Signals], None] | None = None
    ) -> None:
        super().__init__()
        self._said = said
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._previous: dict[signal.Signals, Any] = {s: signal.signal(s, self._received) for s in signals}

    def _received(self, signum: int, _frame: FrameType | None) -> None:
        self.set()
        if self._said is not None:
            try:
                self._said(signal.Signals(signum))
            except RuntimeError:  # it interrupted a print to the same stream (a reentrant write): the stop stands
                pass

    def set(self) -> None:
        super().set()
        try:  # wake a main thread that waits in select
            self._writer.send(b"\0")
        except (BlockingIOError, OSError):  # full (it is awake already) or closed
            pass

    def wait(self, timeout: float | None = None) -> bool:
        if threading.current_thread() is not threading.main_thread():
            return super().wait(timeout)  # only the main thread runs handlers, and only it drains
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            # a signal's byte or set()'s ends this; back in bytecode, a pending handler runs here
            select.select([self._reader], [], [], left)
            self._drain()
        return self.is_set()

    def _drain(self) -> None:
        try:
            while self._reader.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        signal.set_wakeup_fd(self._previous_fd)
        self._reader.close()
        self._writer.close()

    def __enter__(self) -> SignalStop:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
