"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

The Lease names its holder and when it last renewed. A candidate takes it only when the holder has
not renewed it for ``duration`` seconds *as this candidate observed it* (time measured on its own
monotonic clock from when it first saw the record unchanged, never by comparing the holder's
clock with its own), and every write is a replace at the resourceVersion just read, so two
candidates racing for it cannot both win: the API server refuses the second with 409.

A leader stops acting as soon as it has not renewed for ``renew_deadline`` seconds, which is
shorter than ``duration``: it has stepped down before anybody else may take over, so two replicas
never act at once. A leader that stops cleanly gives the Lease up, so the next one starts at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

log = logging.getLogger(__name__)


class LeaseElector:
    def __init__(
        self,
        api: ApiClient,
        namespace: str,
        name: str,
        identity: str,
        duration: float = 15.0,
        renew_deadline: float = 10.0,
        on_error: Callable[[], None] = lambda: None,
    ):
        from kubernetes import client

        if not 0 < renew_deadline < duration:
            raise ValueError(f"renew_deadline {renew_deadline}s must be positive and below the lease's {duration}s")
        self._api = client.CoordinationV1Api(api)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.duration, self.renew_deadline = duration, renew_deadline
        self._renewed_at: float | None = None  # monotonic time of this candidate's last successful write
        self._observed: tuple[Any, float] | None = None  # (the holder's record, when this candidate saw it change)
        self.on_error = on_error  # told of every failed read or write (a rival's 409 is no failure)

    def leading(self) -> bool:
        """True while this candidate renewed the Lease less than renew_deadline seconds ago."""
        return self._renewed_at is not None and time.monotonic() - self._renewed_at < self.renew_deadline

    def try_acquire_or_renew(self) -> bool:
        """One election round: take the Lease if free or expired, renew it if held. True: leading."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        now = datetime.now(UTC)
        try:
            lease = self._api.read_namespaced_lease(self.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                log.warning("lease %s/%s: read answered %s %s", self.namespace, self.name, exc.status, exc.reason)
                self.on_error()
                return self.leading()
            body = client.V1Lease(
                metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace),
                spec=self._spec(now, acquired=now, transitions=0),
            )
            return self._write(lambda: self._api.create_namespaced_lease(self.namespace, body))
        except Exception as exc:  # the API server is unreachable: keep leading only until the deadline
            log.warning("lease %s/%s: %s: %s", self.namespace, self.name, type(exc).__name__, exc)
            self.on_error()
            return self.leading()

        spec = lease.spec
        holder = spec.holder_identity or ""
        record = (holder, spec.renew_time, spec.lease_transitions)
        if self._observed is None or self._observed[0] != record:
            self._observed = (record, time.monotonic())
        expired = time.monotonic() - self._observed[1] >= (spec.lease_duration_seconds or self.duration)
        if holder and holder != self.identity and not expired:
            self._renewed_at = None
            return False
        mine = holder == self.identity
        lease.spec = self._spec(
            now,
            acquired=spec.acquire_time if mine else now,
            transitions=(spec.lease_transitions or 0) + (0 if mine else 1),
        )
        # replace carries the resourceVersion just read: a rival's write in between makes it 409
        return self._write(lambda: self._api.replace_namespaced_lease(self.name, self.namespace, lease))

    def release(self) -> None:
        """Give the Lease up (a clean shutdown), so another candidate need not wait it out."""
        from kubernetes.client.exceptions import ApiException

        if not self.leading():
            return
        self._renewed_at = None
        try:
            lease = self._api.read_namespaced_lease(self.name, self.namespace)
            if lease.spec.holder_identity == self.identity:
                lease.spec.holder_identity = None
                lease.spec.lease_duration_seconds = 1
                self._api.replace_namespaced_lease(self.name, self.namespace, lease)
        except (ApiException, OSError) as exc:
            log.warning("lease %s/%s: could not give it up: %s", self.namespace, self.name, exc)

    def _spec(self, now: datetime, acquired: datetime, transitions: int) -> Any:
        from kubernetes import client

        return client.V1LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, round(self.duration)),
            acquire_time=acquired,
            renew_time=now,
            lease_transitions=transitions,
        )

    def _write(self, call: Any) -> bool:
        from kubernetes.client.exceptions import ApiException

        started = time.monotonic()
        try:
            call()
        except ApiException as exc:
            if exc.status == 409:  # a rival wrote first
                self._renewed_at = None
                return False
            log.warning("lease %s/%s: write answered %s %s", self.namespace, self.name, exc.status, exc.reason)
            self.on_error()
            return self.leading()
        except Exception as exc:
            log.warning("lease %s/%s: %s: %s", self.namespace, self.name, type(exc).__name__, exc)
            self.on_error()
            return self.leading()
        # counted from before the write: the Lease may have been renewed a little later, never earlier
        self._renewed_at = started
        return True
