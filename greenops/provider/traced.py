"""The dynamic provider's spans: each operation of Placement, in the process the Pulumi engine starts
for it (``python -m pulumi.dynamic``), as a child of the pass that ran the engine.

The engine starts that process with the CLI's environment, so the pass's trace context arrives in
``TRACEPARENT`` (greenops.engine.automation puts it there) and the OTLP settings in the ``OTEL_*``
variables. Tracing is set up on the first operation, and what an operation recorded is exported
before it returns: the engine stops this process when the update ends, with no time to wait for a
batch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from greenops.observability import spans, tracing

SERVICE = "greenops-placement"
F = TypeVar("F", bound=Callable[..., Any])


def traced(operation: str, about: Callable[[dict[str, Any]], dict[str, str]]) -> Callable[[F], F]:
    """Decorates a provider method whose last argument is the resource's properties; ``about``
    gives the span's attributes from them."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def run(self: object, *args: Any) -> Any:
            tracing.setup_tracing(SERVICE)
            props = args[-1] if args and isinstance(args[-1], dict) else {}
            try:
                with tracing.tracer(__name__).start_as_current_span(
                    spans.PROVIDER + operation, context=tracing.context_from_env(), attributes=about(props)
                ):
                    return method(self, *args)
            finally:
                tracing.flush()

        return cast(F, run)

    return decorate
