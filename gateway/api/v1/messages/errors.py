"""Errors on the Messages routes in Anthropic's shape: {"type": "error", "error": {"type", "message"}}.

The routes use `AnthropicRoute`, which catches whatever the handler (its dependencies included) raises and
lets the app's own exception handlers (gateway/api/errors.py) decide the status, the message and the headers
(Retry-After, rate-limit headers), as on every other route; only the body is respelled. So a refusal is the
same refusal on /v1/chat/completions and /v1/messages, in each API's own words. Every answer also carries the
request id as `request-id`, where Anthropic's SDKs look for it."""
from __future__ import annotations

import json
import logging

from fastapi import Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from gateway.schemas.anthropic import error_body

log = logging.getLogger("tollgate.errors")

_BODY_HEADERS = {"content-length", "content-type"}


class AnthropicRoute(APIRoute):
    def get_route_handler(self):
        handler = super().get_route_handler()

        async def in_anthropic_shape(request: Request) -> Response:
            try:
                response = await handler(request)
            except Exception as exc:
                response = await anthropic_error(request, exc)
            # Anthropic's name for x-request-id: its SDKs report it (`_request_id`, errors' `request_id`).
            response.headers["request-id"] = request.state.request_id
            return response

        return in_anthropic_shape


async def anthropic_error(request: Request, exc: Exception) -> JSONResponse:
    handler = _handler_for(request, exc)
    if handler is not None:
        try:
            response = await handler(request, exc)
        except Exception:  # a handler that re-raises (a bad SQL statement): a server error, as anywhere
            handler = None
    if handler is None:
        log.error("request failed", exc_info=exc)
        return JSONResponse(error_body(500, "Internal server error."), status_code=500)
    try:
        message = json.loads(response.body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = response.body.decode(errors="replace")[:500]
    headers = {k: v for k, v in response.headers.items() if k.lower() not in _BODY_HEADERS}
    return JSONResponse(error_body(response.status_code, message), status_code=response.status_code,
                        headers=headers)


def _handler_for(request: Request, exc: Exception):
    handlers = request.app.exception_handlers
    return next((handlers[cls] for cls in type(exc).__mro__ if cls in handlers), None)
