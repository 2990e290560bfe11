"""The durable record of placements, shared by the Pulumi and the cluster path."""

from . import orphans
from .errors import AmbiguousKey, Conflict, QuotaExceeded, UnknownReservation
from .keyed import resolve
from .listing import ListingFilter
from .store import ACTIVE, TERMINAL, Booking, ReservationStore, Seen, milli

__all__ = [
    "ACTIVE",
    "AmbiguousKey",
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
    "resolve",
]
