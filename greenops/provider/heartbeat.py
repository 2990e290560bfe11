"""A Pulumi pass marks its stack seen in the record (``PUT /stacks/{stack}``), so that the orphan
sweep can tell a stack that still runs from one removed without a destroy
(greenops.reservations.orphans).

Once per stack and tenant per provider process (the engine starts one per pass), from the first
Placement the pass diffs or creates. Best effort: a pass never fails for it, and a scheduler that is
down costs one short attempt. A stack whose passes cannot reach the scheduler for the whole grace
is swept like a removed one; the grace (a day by default) is far longer than any outage the
scheduler's own alerts would leave unanswered.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from greenops.common.errors import GreenOpsError
from greenops.placing import SchedulerClient

TIMEOUT_SECONDS = 2.0
log = logging.getLogger("greenops.provider")

_seen: set[tuple[str, str, str]] = set()
_lock = threading.Lock()


def mark_stack_seen(props: dict[str, Any], tenant: str, client: Callable[[], SchedulerClient]) -> bool:
    """Mark ``props``' stack seen for ``tenant`` unless this process did already; whether it called."""
    url, stack = props.get("schedulerUrl"), props.get("stack")
    if not url or not stack:
        return False
    with _lock:
        if (url, tenant, stack) in _seen:
            return False
        _seen.add((url, tenant, stack))
    scheduler = client()
    try:
        scheduler.stack_seen(str(stack), tenant=tenant)
    except GreenOpsError as exc:
        log.warning("stack %s of tenant %s not marked seen: %s", stack, tenant, exc)
    finally:
        scheduler.close()
    return True
