"""Provider renderers register themselves here; adding a provider means adding one module."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from greenops.catalog import Catalog, load_catalog
from greenops.common.errors import RenderError
from greenops.models import Decision, Workload

from .base import ObjectState, RenderContext, RenderFn, RenderSettings, StateFn

_RENDERERS: dict[str, RenderFn] = {}
_KINDS: dict[str, list[tuple[str, str]]] = {}
_VM_KINDS: dict[str, str] = {}
_STATES: dict[str, StateFn] = {}
_PROVIDER_MODULES = "greenops.renderers.providers"


def renderer(
    provider: str, kinds: list[tuple[str, str]], vm_kind: str, state: StateFn
) -> Callable[[RenderFn], RenderFn]:
    """Registration: ``@renderer("gcp", kinds=[(apiVersion, kind), ...], vm_kind=..., state=...)``.

    ``kinds`` lists every object type the renderer emits (the platform installs their CRDs);
    ``vm_kind`` is the one whose readiness is the VM's, and ``state`` reads the operator's
    conditions on any of them.
    """

    def register(fn: RenderFn) -> RenderFn:
        _RENDERERS[provider] = fn
        _KINDS[provider] = list(kinds)
        _VM_KINDS[provider] = vm_kind
        _STATES[provider] = state
        return fn

    return register


def rendered_kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every object any provider renderer emits."""
    _discover()
    return [k for provider in sorted(_KINDS) for k in _KINDS[provider]]


def provider_kinds(provider: str) -> list[tuple[str, str]]:
    """(apiVersion, kind) of the objects ``provider``'s renderer emits."""
    _discover()
    return list(_KINDS[provider])


def rendered_resources(catalog: Catalog | None = None) -> dict[str, list[str]]:
    """API group -> the resources (the upstream CRDs' plurals) of every kind any renderer emits:
    the names RBAC grants them by."""
    kinds = (catalog or load_catalog()).crd_kinds
    plurals: dict[str, set[str]] = {}
    for api_version, kind in rendered_kinds():
        group = api_version.split("/")[0]
        plurals.setdefault(group, set()).add(kinds[(group, kind)].plural)
    return {group: sorted(names) for group, names in sorted(plurals.items())}


def _discover() -> None:
    package = importlib.import_module(_PROVIDER_MODULES)
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{_PROVIDER_MODULES}.{info.name}")


def vm_kind(provider: str) -> str:
    _discover()
    return _VM_KINDS[provider]


def object_state(provider: str, obj: dict[str, Any]) -> ObjectState:
    """What ``provider``'s operator reports about one of its objects."""
    _discover()
    return _STATES[provider](obj)


def providers() -> list[str]:
    _discover()
    return sorted(_RENDERERS)


@dataclass(frozen=True)
class Rendered:
    objects: list[dict[str, Any]]
    held: list[str]  # objects left out until the cluster reports what they need, each with the reason
    used: dict[str, dict[str, str]]  # "Kind/name" -> the status fields the objects were rendered with


def render_set(
    workload: Workload,
    decision: Decision,
    settings: RenderSettings | None = None,
    catalog: Catalog | None = None,
    observed: Mapping[str, Mapping[str, Any]] | None = None,
    stem: str | None = None,
    report: str | None = None,
    secrets: Mapping[str, str] | None = None,
) -> Rendered:
    """The provider-specific minimum set (thesis §3.4) for a decision, as plain dicts, given what
    the cluster reports about the set's objects so far (``"Kind/name"`` -> ``status``). ``stem``
    starts every object's name (default: the workload's name); ``report`` is the run's report script
    (greenops.renderers.user_data.report_script), when its end is to be reported; ``secrets`` the
    values its run's env names by key."""
    _discover()
    fn = _RENDERERS.get(decision.provider)
    if fn is None:
        raise RenderError(f"workload {workload.name!r}: no renderer for provider {decision.provider!r}")
    ctx = RenderContext(
        workload,
        decision,
        settings or RenderSettings(),
        catalog or load_catalog(),
        observed=dict(observed or {}),
        stem=stem,
        report=report,
        secrets=dict(secrets or {}),
    )
    return Rendered(fn(ctx), list(ctx.held), dict(ctx.used))


def render(
    workload: Workload,
    decision: Decision,
    settings: RenderSettings | None = None,
    catalog: Catalog | None = None,
    observed: Mapping[str, Mapping[str, Any]] | None = None,
    stem: str | None = None,
    report: str | None = None,
    secrets: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The objects of ``render_set``."""
    return render_set(workload, decision, settings, catalog, observed, stem, report, secrets).objects
