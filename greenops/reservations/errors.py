"""What a booking or a report can fail with, for the caller to act on."""

from __future__ import annotations

from greenops.common.errors import GreenOpsError


class Conflict(GreenOpsError):
    """Another booking changed what the search saw: search again."""


class QuotaExceeded(GreenOpsError):
    """The tenant's active reservations plus this one exceed its quota."""


class UnknownReservation(GreenOpsError):
    """No reservation has this key."""
