"""Property-based fuzzing of the live service from its own OpenAPI schema: no request gets a 5xx,
whoever sends it (the platform's admin, a tenant's token, or nobody)."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenops.local.scheduler import SchedulerServer

pytestmark = pytest.mark.integration


def test_no_request_gets_a_server_error():
    with SchedulerServer(capacity_vcpu=1e9) as service:
        callers = {
            "admin": service.admin_headers,
            "tenant": {"Authorization": f"Bearer {service.issue('fuzz', ['fuzz'])}"},
            "nobody": {},
        }
        schema = schemathesis.openapi.from_url(f"{service.url}/openapi.json", headers=service.admin_headers)
        operations = [result.ok() for result in schema.get_all_operations()]
        assert {op.path for op in operations} >= {"/scheduling", "/healthz", "/readyz", "/credentials"}
        seen: dict[int, int] = {}
        for op in operations:

            @given(case=op.as_strategy(), who=st.sampled_from(sorted(callers)))
            @settings(
                max_examples=150 if op.path == "/scheduling" else 5,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            )
            def call(case, who):
                response = case.call(timeout=15, headers=callers[who])
                seen[response.status_code] = seen.get(response.status_code, 0) + 1
                assert response.status_code < 500, (
                    f"{who}: {case.method} {case.path} {case.body!r} -> {response.status_code} {response.text}"
                )

            call()
        # the fuzzer reached the happy path, the validation errors and the refusals
        assert {200, 401, 422} <= set(seen), seen
