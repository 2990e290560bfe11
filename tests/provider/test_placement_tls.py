"""Placement reaches an OPA served over HTTPS by a private CA (the platform's own, as in a cluster)
when the stack gives that CA as greenops:endpoints.caCertificate, and fails with a named error
without it. Real OPA and scheduler on loopback; nothing set process-wide."""

from __future__ import annotations

import pytest

from greenops.common.errors import GreenOpsError
from greenops.local.webhook import loopback_tls
from greenops.provider.placement import PlacementProvider
from tests.provider.test_placement_provider import Clock, placement_servers, props
from tests.support.common import require_tool

pytestmark = pytest.mark.integration


def test_the_platforms_ca_is_trusted_only_when_given(tmp_path, monkeypatch):
    require_tool("opa")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    tls = loopback_tls(tmp_path / "tls")
    with placement_servers(opa={"tls_cert": tls.cert_file, "tls_key": tls.key_file}) as servers:
        opa, _ = servers
        assert opa.url.startswith("https://")
        p = props(servers) | {"stack": "dev"}
        with pytest.raises(
            GreenOpsError,
            match=r"workload 'etl' was not placed: OPA at https://127\.0\.0\.1:\d+ did "
            r"not answer .*CERTIFICATE_VERIFY_FAILED",
        ):
            PlacementProvider(Clock()).create(p)
        out = PlacementProvider(Clock()).create(p | {"caCertificate": tls.ca_pem.decode()}).outs
        assert out["decision"]["provider"] in ("azure", "gcp", "aws")
