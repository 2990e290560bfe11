"""Property-based fuzzing of the live service from its own OpenAPI schema: no request gets a 5xx."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from greenops.local.scheduler import SchedulerServer

pytestmark = pytest.mark.integration


def test_no_request_gets_a_server_error():
    with SchedulerServer(capacity_vcpu=1e9) as service:
        schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert {op.path for op in operations} >= {"/scheduling", "/healthz", "/readyz"}
        seen: dict[int, int] = {}
        for op in operations:

            @given(case=op.as_strategy())
            @settings(
                max_examples=150 if op.path == "/scheduling" else 5,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            )
            def call(case):
                response = case.call(timeout=15)
                seen[response.status_code] = seen.get(response.status_code, 0) + 1
                assert response.status_code < 500, (
                    f"{case.method} {case.path} {case.body!r} -> {response.status_code} {response.text}"
                )

            call()
        # the fuzzer reached both the happy path and the validation errors
        assert 422 in seen and 200 in seen, seen
