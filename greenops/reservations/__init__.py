"""The durable record of placements, shared by the Pulumi and the cluster path."""

from .errors import Conflict, QuotaExceeded, UnknownReservation
from .listing import ListingFilter
from .store import ACTIVE, TERMINAL, Booking, ReservationStore, Seen, milli

__all__ = [
    "ACTIVE",
    "TERMINAL",
    "Booking",
    "Conflict",
    "ListingFilter",
    "QuotaExceeded",
    "ReservationStore",
    "Seen",
    "UnknownReservation",
    "milli",
]
