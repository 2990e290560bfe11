"""Decision -> provider-specific Kubernetes objects for ASO, Config Connector and ACK."""
from .base import LABEL_PREFIX, MANAGED_BY, RenderContext, RenderSettings
from .registry import providers, render, rendered_kinds, renderer

__all__ = ["LABEL_PREFIX", "MANAGED_BY", "RenderContext", "RenderSettings", "providers", "render", "rendered_kinds", "renderer"]
