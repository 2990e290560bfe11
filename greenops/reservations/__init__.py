"""The durable record of placements, shared by the Pulumi and the cluster path."""

from . import orphans, queue
from .errors import AmbiguousKey, Conflict, NotPlaced, QueueFull, QuotaExceeded, UnknownReservation
from .keyed import resolve
from .listing import ListingFilter
from .store import ACTIVE, LISTED, PENDING, TERMINAL, Booking, Queued, ReservationStore, Seen, milli

__all__ = [
    "ACTIVE",
    "LISTED",
    "PENDING",
    "AmbiguousKey",
    "NotPlaced",
    "QueueFull",
    "Queued",
    "TERMINAL",
    "Booking",
    "Conflict",
    "ListingFilter",
    "QuotaExceeded",
    "ReservationStore",
    "Seen",
    "UnknownReservation",
    "milli",
    "orphans",
    "queue",
    "resolve",
]
