"""Client-side checks of rendered objects."""

from .crd import CrdSchemas, default_crd_dir

__all__ = ["CrdSchemas", "default_crd_dir"]
