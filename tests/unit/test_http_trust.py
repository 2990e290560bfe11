"""Every client of a process shares one SSL context per CA (greenops.common.httpclient.trust):
building one parses the whole CA bundle, which a Placement used to do three times per workload."""

from __future__ import annotations

import ssl

from greenops.common.httpclient import RetryingClient, trust
from greenops.local.webhook import loopback_tls

LOCAL_CA = {"commonName": "greenops-local-ca"}


def subjects(context: ssl.SSLContext) -> list[dict]:
    return [dict(x[0] for x in c["subject"]) for c in context.get_ca_certs()]


def test_one_context_per_ca_shared_by_every_client():
    assert trust(None) is trust(None)
    clients = [RetryingClient("http://127.0.0.1:1") for _ in range(3)]
    try:
        # (httpx keeps the context it was handed on its transport's connection pool)
        contexts = {id(c._client._transport._pool._ssl_context) for c in clients}
        assert contexts == {id(trust(None))}
    finally:
        for c in clients:
            c.close()


def test_a_platform_ca_gets_its_own_context_trusting_it(tmp_path):
    ca, another = (loopback_tls(tmp_path / n).ca_pem.decode() for n in ("one", "two"))
    mine = trust(ca)
    assert mine is trust(ca) and mine is not trust(another) and mine is not trust(None)
    assert mine.verify_mode is ssl.CERT_REQUIRED
    assert LOCAL_CA in subjects(mine) and LOCAL_CA not in subjects(trust(None))


def test_the_trust_settings_of_the_environment_are_read_at_each_call(tmp_path, monkeypatch):
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(loopback_tls(tmp_path / "tls").ca_pem)
    default = trust(None)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    assert trust(None) is not default
    assert LOCAL_CA in subjects(trust(None))
