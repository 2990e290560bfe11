"""What a booking or a report can fail with, for the caller to act on."""

from __future__ import annotations

from greenops.common.errors import GreenOpsError


class Conflict(GreenOpsError):
    """Another booking changed what the search saw: search again."""


class QuotaExceeded(GreenOpsError):
    """The tenant's active reservations plus this one exceed its quota."""


class UnknownReservation(GreenOpsError):
    """No reservation has this key (among the tenants the caller reads)."""


class AmbiguousKey(GreenOpsError):
    """A caller of several tenants named a key that more than one of them holds, without saying
    whose (HTTP 409): it names the tenant (``?tenant=``)."""


class QueueFull(GreenOpsError):
    """The tenant already has as many requests waiting in the queue as it may (HTTP 409)."""


class NotPlaced(GreenOpsError):
    """A report of a placed phase for a reservation still Pending in the queue (HTTP 409)."""
