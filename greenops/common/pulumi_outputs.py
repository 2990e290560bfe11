"""Many Outputs without the Python SDK's costs that grow faster than their number.

``pulumi.Output.all`` passes every argument through ``Output.from_input``, which re-walks each
resolved value and creates an Output for every nested list item and dict entry, so that Outputs
hidden inside plain data are found. Values that come from resource outputs hold none. At 1000
workloads, the placement rows and the VM manifests alone made tens of thousands of such Outputs.
``gather`` wraps each value in an object the SDK does not walk, and unwraps it again once all are
known.

The SDK then waits for every Output at the end of the program, in a loop that grows with the square
of their number (SDK 3.259 to at least 3.272); ``sdk_waits_cheaply`` gives that loop a ``wait``
that does not (see ``_AsyncioWithCheapWait``).
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pulumi


@dataclass(frozen=True)
class _Opaque:
    value: Any


def gather(*outputs: pulumi.Output[Any]) -> pulumi.Output[list[Any]]:
    """``Output.all(*outputs)`` for outputs whose values are plain data: the same list, unknown
    while any is unknown and secret if any is secret, without an Output per nested value."""
    return pulumi.Output.all(*(o.apply(_Opaque) for o in outputs)).apply(lambda boxes: [b.value for b in boxes])


class _AsyncioWithCheapWait(types.ModuleType):
    """asyncio, as ``pulumi.runtime.stack`` sees it, with a ``wait`` whose FIRST_COMPLETED is not
    proportional to the number of pending tasks.

    At the end of a program the SDK (3.259 to at least 3.272) loops ``asyncio.wait(every pending
    Output, FIRST_COMPLETED)`` until none is left. Each call hooks onto every pending task and off
    again, so the loop costs the number of pending Outputs times the number of rounds: at 1000
    workloads, half of the program's CPU. This ``wait`` first collects the tasks that are already
    done; only when none is, it waits on a few of them, at most ``_POLL_SECONDS``, and looks again.
    The SDK gets what ``asyncio.wait`` promises (done tasks, and the rest, with every task in one of
    them) and reacts as before: it awaits the done ones, raising their errors, and waits again."""

    _FEW = 32
    _POLL_SECONDS = 0.2

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    @classmethod
    async def wait(
        cls,
        fs: Iterable[asyncio.Future[Any]],
        *,
        timeout: float | None = None,
        return_when: str = asyncio.ALL_COMPLETED,
    ) -> tuple[set[asyncio.Future[Any]], set[asyncio.Future[Any]]]:
        tasks = list(fs)
        if return_when != asyncio.FIRST_COMPLETED or len(tasks) <= cls._FEW:
            return await asyncio.wait(tasks, timeout=timeout, return_when=return_when)
        done = {t for t in tasks if t.done()}
        if not done:
            poll = cls._POLL_SECONDS if timeout is None else min(timeout, cls._POLL_SECONDS)
            await asyncio.wait(tasks[: cls._FEW], timeout=poll, return_when=asyncio.FIRST_COMPLETED)
            done = {t for t in tasks if t.done()}
        return done, {t for t in tasks if t not in done}


def sdk_waits_cheaply() -> None:
    """Give the SDK's end-of-program wait the ``wait`` above (idempotent)."""
    from pulumi.runtime import stack

    # stack.asyncio is the SDK module's own `import asyncio` (not an export), replaced here on purpose
    if not isinstance(stack.asyncio, _AsyncioWithCheapWait):  # type: ignore[attr-defined]
        stack.asyncio = _AsyncioWithCheapWait("asyncio")  # type: ignore[attr-defined]
