"""Provider renderers register themselves here; adding a provider means adding one module."""
from __future__ import annotations

import importlib
import pkgutil

from greenops.catalog import Catalog, load_catalog
from greenops.errors import RenderError
from greenops.models import Decision, Workload

from .base import RenderContext, RenderFn, RenderSettings

_RENDERERS: dict[str, RenderFn] = {}
_KINDS: dict[str, list[tuple[str, str]]] = {}
_PROVIDER_MODULES = "greenops.renderers.providers"


def renderer(provider: str, kinds: list[tuple[str, str]]):
    """Registration: ``@renderer("gcp", kinds=[(apiVersion, kind), ...]) def render(ctx): ...``.

    ``kinds`` lists every object type the renderer emits (the platform installs their CRDs).
    """

    def register(fn: RenderFn) -> RenderFn:
        _RENDERERS[provider] = fn
        _KINDS[provider] = list(kinds)
        return fn

    return register


def rendered_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every object any provider renderer emits."""
    _discover()
    return [k for provider in sorted(_KINDS) for k in _KINDS[provider]]


def _discover() -> None:
    package = importlib.import_module(_PROVIDER_MODULES)
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{_PROVIDER_MODULES}.{info.name}")


def providers() -> list[str]:
    _discover()
    return sorted(_RENDERERS)


def render(
    workload: Workload,
    decision: Decision,
    settings: RenderSettings | None = None,
    catalog: Catalog | None = None,
) -> list[dict]:
    """The provider-specific minimum set (thesis §3.4) for a decision, as plain dicts."""
    _discover()
    fn = _RENDERERS.get(decision.provider)
    if fn is None:
        raise RenderError(f"workload {workload.name!r}: no renderer for provider {decision.provider!r}")
    ctx = RenderContext(workload, decision, settings or RenderSettings(), catalog or load_catalog())
    return fn(ctx)
