"""List, then watch, every VmTemplate in the cluster, and never miss a change.

The stream is: a ``Listed`` snapshot (every object, and the resourceVersion the list was read at),
then ``Changed`` events from a watch started at that resourceVersion. The watch asks for bookmarks,
so an idle stream's resourceVersion still moves with the cluster's and a reconnect resumes from
a version etcd has not compacted away. When the API server answers 410 Gone (the version is too
old: after a long disconnect or a restart of the API server) the stream lists again; a consumer
treats each ``Listed`` as the whole truth (what is absent from it was deleted), so a change that
happened while nobody watched is never lost, only seen as a difference. A restarted controller
starts with a list for the same reason: the list, not a remembered version, is what it resumes
from.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from greenops.policies.webhook import VMTEMPLATE_GROUP as GROUP
from greenops.policies.webhook import VMTEMPLATE_VERSION as VERSION

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

PLURAL = "vmtemplates"
PAGE = 500  # objects per list page: a large cluster is listed in bounded responses
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Listed:
    objects: list[dict[str, Any]]
    resource_version: str


@dataclass(frozen=True)
class Changed:
    type: str  # ADDED | MODIFIED | DELETED
    object: dict[str, Any]


class VmTemplateWatch:
    """``for item in VmTemplateWatch(api).stream(stop)``: see the module's docstring.
    ``timeout_seconds`` bounds one watch request (the server ends it; the stream reconnects from the
    last version seen), ``backoff`` the pause after a failed request."""

    def __init__(
        self,
        api: ApiClient,
        timeout_seconds: int = 60,
        backoff: float = 1.0,
        on_error: Callable[[], None] = lambda: None,
    ):
        from kubernetes import client

        self._custom = client.CustomObjectsApi(api)
        self.timeout_seconds = timeout_seconds
        self.backoff = backoff
        self.on_error = on_error  # told of every failed request (a 410's relist is no failure)
        self.resource_version: str | None = None  # the newest version seen, bookmarks included

    def list(self) -> Listed:
        objects: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = self._custom.list_cluster_custom_object(
                GROUP, VERSION, PLURAL, limit=PAGE, **({"_continue": token} if token else {})
            )
            objects.extend(page.get("items") or [])
            token = page["metadata"].get("continue")
            if not token:
                return Listed(objects, page["metadata"]["resourceVersion"])

    def stream(self, stop: threading.Event) -> Iterator[Listed | Changed]:
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        while not stop.is_set():
            try:
                if self.resource_version is None:
                    listed = self.list()
                    self.resource_version = listed.resource_version
                    yield listed
                w = watch.Watch()
                for event in w.stream(
                    self._custom.list_cluster_custom_object,
                    GROUP,
                    VERSION,
                    PLURAL,
                    resource_version=self.resource_version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=self.timeout_seconds,
                    # the read timeout outlives the server's own end of the request: a silent
                    # connection (an API server that died without closing it) is given up on
                    _request_timeout=(10, self.timeout_seconds + 15),
                ):
                    if w.resource_version:
                        self.resource_version = w.resource_version
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        yield Changed(event["type"], event["raw_object"])
                    if stop.is_set():
                        w.stop()
                        break
            except ApiException as exc:
                if exc.status == 410:  # the version was compacted away: list again
                    log.info("watch: resourceVersion %s is gone, listing again", self.resource_version)
                    self.resource_version = None
                    continue
                log.warning("watch: the API server answered %s %s; retrying", exc.status, exc.reason)
                self.on_error()
                stop.wait(self.backoff)
            except Exception as exc:  # connection refused or reset, read timeout: retry from the same version
                log.warning("watch: %s: %s; retrying from %s", type(exc).__name__, exc, self.resource_version)
                self.on_error()
                stop.wait(self.backoff)


def key_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"
