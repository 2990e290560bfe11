"""Kubernetes ServiceAccounts as principals, proven through the API server's TokenReview.

In a cluster the platform's own callers (OPA, the reconciler's workspaces, the dashboard's proxy)
present a ServiceAccount token bound to the scheduler's audience. The scheduler asks the API server
whether the token is valid (TokenReview, with its own ServiceAccount bound to
``system:auth-delegator``) and maps the account it names to a principal through its principals
file (greenops.identity.principals); an account not listed there is refused. Answers are cached for a few
seconds, as kube-rbac-proxy and the aggregated API servers do, so a burst costs one review.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from cachetools import TTLCache

from greenops.common.errors import GreenOpsError

from .principal import Principal
from .tokens import digest

AUDIENCE = "greenops-scheduler"
CACHE_SECONDS = 10.0
_SA_PREFIX = "system:serviceaccount:"


class TokenReviewer:
    """Reviews bearer tokens with the API server the kubernetes client is configured for."""

    def __init__(self, accounts: Mapping[str, Principal], kubeconfig: str | None = None, audience: str = AUDIENCE):
        from kubernetes import client, config

        if kubeconfig:
            api_client = config.new_client_from_config(config_file=kubeconfig)
        else:
            # The pod's own ServiceAccount; the loader re-reads its projected token as it rotates.
            config.load_incluster_config()
            api_client = client.ApiClient()
        self._api = client.AuthenticationV1Api(api_client)
        self._accounts = dict(accounts)
        self._audience = audience
        self._cache: TTLCache[str, Principal | str] = TTLCache(maxsize=4096, ttl=CACHE_SECONDS)
        self._lock = threading.Lock()

    def cached(self, token: str) -> Principal | str | None:
        """The answer kept for the token (no request to the API server), or None."""
        with self._lock:
            return self._cache.get(digest(token))

    def review(self, token: str) -> Principal | str:
        """The principal the token proves, or why it proves none."""
        if (hit := self.cached(token)) is not None:
            return hit
        answer = self._review(token)
        with self._lock:
            self._cache[digest(token)] = answer
        return answer

    def _review(self, token: str) -> Principal | str:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        body = client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token, audiences=[self._audience]))
        try:
            status = self._api.create_token_review(body, _request_timeout=5).status
        except (ApiException, HTTPError, OSError) as exc:
            # Not cached as an answer about the token: the next request asks again.
            raise ReviewUnavailable(f"the API server's TokenReview failed: {_short(exc)}") from None
        if not status or not status.authenticated:
            return "the Kubernetes token was not accepted by the API server" + (
                f" ({status.error[:200]})" if status and status.error else ""
            )
        if self._audience not in (status.audiences or []):
            return f"the Kubernetes token is not bound to the audience {self._audience}"
        username = status.user.username if status.user else ""
        if not username.startswith(_SA_PREFIX):
            return f"{username[:100]} is not a ServiceAccount"
        account = username[len(_SA_PREFIX) :].replace(":", "/", 1)
        found = self._accounts.get(account)
        return found if found else f"ServiceAccount {account} is not one of the scheduler's principals"


class ReviewUnavailable(GreenOpsError):
    """The API server could not be asked (HTTP 503: the caller may retry)."""


def _short(exc: BaseException) -> str:
    return (str(getattr(exc, "reason", "")) or type(exc).__name__)[:200]
