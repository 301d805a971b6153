"""Pure ASGI middleware (no BaseHTTPMiddleware: it would buffer streams and hide disconnects)."""
from __future__ import annotations

import json
import logging
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.domain.errors import APIError
from gateway.observability.logging import request_id_var

log = logging.getLogger("tollgate.access")
error_log = logging.getLogger("tollgate.errors")


def new_request_id() -> str:
    return f"req_{uuid.uuid4().hex}"


def body_too_large(limit: int) -> APIError:
    return APIError(413, f"Request body exceeds the limit of {limit} bytes.", code="request_too_large")


def has_nul(scope: Scope) -> bool:
    """No name the API knows holds a NUL byte, and PostgreSQL refuses one in any text it is asked to
    look up: a URL carrying one (decoded in the path, %00 in the query) never reaches a route."""
    return "\x00" in scope["path"] or b"%00" in scope["query_string"]


class RequestContextMiddleware:
    """Gives every request our own id (the billing idempotency key), keeps a client-sent
    x-request-id only as a correlation id, and refuses bodies over `max_body_bytes` and URLs
    with a NUL byte before anything parses them."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, body_limits: dict[str, int] | None = None) -> None:
        """`body_limits`: exact paths with a limit of their own (file uploads)."""
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.body_limits = dict(body_limits or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = new_request_id()
        headers = dict(scope["headers"])
        client_rid = headers.get(b"x-request-id")
        scope.setdefault("state", {})["request_id"] = rid
        token = request_id_var.set(rid)
        started, status = time.perf_counter(), 0

        async def send_with_ids(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                extra = [(b"x-request-id", rid.encode())]
                if client_rid is not None:
                    extra.append((b"x-correlation-id", client_rid[:128]))
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        try:
            limit = self.body_limits.get(scope["path"], self.max_body_bytes)
            declared = headers.get(b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                await _send_error(body_too_large(limit), send_with_ids)
                return
            if has_nul(scope):
                await _send_error(APIError(400, "The URL holds a NUL byte (%00)."), send_with_ids)
                return
            await self.app(scope, self._limited(receive, limit), send_with_ids)
        except Exception:
            # Unhandled: logged here, where the request id is still known, and answered in
            # OpenAI's shape unless the response had already started.
            error_log.exception("unhandled error")
            if status:
                raise
            await _send_error(APIError(500, "The server had an error while processing your request.",
                                       type="server_error"), send_with_ids)
        finally:
            if log.isEnabledFor(logging.INFO):
                log.info("request", extra={"method": scope["method"], "path": scope["path"], "status": status,
                                           "duration_ms": round((time.perf_counter() - started) * 1000, 2)})
            request_id_var.reset(token)

    def _limited(self, receive: Receive, limit: int) -> Receive:
        seen = 0

        async def receive_limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # a chunked body that lied by omission
                    raise body_too_large(limit)
            return message

        return receive_limited


async def _send_error(err: APIError, send: Send) -> None:
    body = json.dumps(err.body()).encode()
    await send({"type": "http.response.start", "status": err.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
