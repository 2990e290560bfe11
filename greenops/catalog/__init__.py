"""The curated catalog of facts in ``data/``: one source for Python code and the OPA bundle."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from .catalog import Catalog, data_dir, haversine_km
from .schema import CarbonProfile, Region, VmSize
from .sizing import fits, select_size, size_order


@cache
def _load(root: Path) -> Catalog:
    return Catalog(root)


def load_catalog(root: Path | None = None) -> Catalog:
    """The catalog, read and validated once per process per folder."""
    return _load((root or data_dir()).resolve())


__all__ = [
    "CarbonProfile",
    "Catalog",
    "Region",
    "VmSize",
    "data_dir",
    "haversine_km",
    "fits",
    "load_catalog",
    "select_size",
    "size_order",
]
