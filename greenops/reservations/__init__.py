"""The durable record of placements, shared by the Pulumi and the cluster path."""

from .listing import ListingFilter
from .store import ACTIVE, TERMINAL, Booking, Conflict, QuotaExceeded, ReservationStore, Seen, UnknownReservation, milli

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
