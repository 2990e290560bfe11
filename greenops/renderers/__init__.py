"""Decision -> provider-specific Kubernetes objects for ASO, Config Connector and ACK."""

from .base import LABEL_PREFIX, MANAGED_BY, ObjectState, RenderContext, RenderSettings
from .registry import (
    Rendered,
    object_state,
    provider_kinds,
    providers,
    render,
    render_set,
    rendered_kinds,
    rendered_resources,
    renderer,
    vm_kind,
)

__all__ = [
    "LABEL_PREFIX",
    "MANAGED_BY",
    "ObjectState",
    "RenderContext",
    "RenderSettings",
    "Rendered",
    "object_state",
    "provider_kinds",
    "providers",
    "render",
    "render_set",
    "rendered_kinds",
    "rendered_resources",
    "renderer",
    "vm_kind",
]
