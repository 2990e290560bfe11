"""A bound on request bodies, checked before a body is read into memory.

The largest legitimate body is a batch booking with its workload and explanation, well under the
bound; a bigger one is refused with 413 naming the limit, whether it says its length up front
(Content-Length) or streams it (chunked): the stream is counted and cut off at the bound.
"""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 256 * 1024


def _detail(limit: int) -> str:
    return f"request body: larger than the limit of {limit} bytes"


class _TooLarge(HTTPException):
    """Raised from inside the body stream: FastAPI re-raises HTTPExceptions from body parsing (any
    other error there becomes a 400), and the app's handler answers it as 413."""

    def __init__(self, limit: int):
        super().__init__(413, detail=_detail(limit))


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES):
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(send)
            return
        seen = 0
        started = False

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(self.limit)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"detail": _detail(self.limit)}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
