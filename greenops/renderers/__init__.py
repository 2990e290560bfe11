"""Decision -> provider-specific Kubernetes objects for ASO, Config Connector and ACK."""
from .base import LABEL_PREFIX, MANAGED_BY, ObjectState, RenderContext, RenderSettings
from .registry import object_state, providers, render, rendered_kinds, renderer, vm_kind

__all__ = ["LABEL_PREFIX", "MANAGED_BY", "ObjectState", "RenderContext", "RenderSettings", "object_state", "providers",
           "render", "rendered_kinds", "renderer", "vm_kind"]
