"""The lifecycle every loopback helper shares: ``with Service() as s`` starts it and always stops it."""
from __future__ import annotations

from typing import Self


class LoopbackService:
    """Subclasses implement start() and stop(); a failed start still stops what did start."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
