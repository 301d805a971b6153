"""The app's exception handlers: every refusal sent as an error in OpenAI's shape (gateway.domain.errors), in
Anthropic's under /v1/messages."""
from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

from gateway.billing.ledger import LedgerFull
from gateway.audit.errors import ChainHeadMissing
from gateway.db.errors import database_unavailable as db_unavailable
from gateway.domain.errors import (APIError, database_unavailable, insufficient_quota, invalid_request, ledger_full,
                                    limits_unavailable, rate_limited)
from gateway.limits.errors import LimitError, LimitsUnavailable, QuotaExceeded, RateLimited
from gateway.schemas.anthropic import error_body as anthropic_error_body

log = logging.getLogger("tollgate.errors")

ANTHROPIC_PATHS = "/v1/messages"  # Anthropic's Messages API: its errors in Anthropic's shape


def from_limit_error(exc: LimitError) -> APIError:
    """The limiter's refusals (gateway.limits.errors) as OpenAI-shaped errors."""
    if isinstance(exc, RateLimited):
        return rate_limited(exc.message, exc.retry_after_s, exc.headers)
    if isinstance(exc, QuotaExceeded):
        return insufficient_quota(exc.message)
    if isinstance(exc, LimitsUnavailable):
        return limits_unavailable(exc.message, exc.retry_after_s)
    return APIError(500, exc.message, type="server_error", code=exc.code)


_LOCATIONS = ("body", "query", "path", "header", "cookie")  # where FastAPI says a param was, not its name


def from_validation_error(errors: list[dict]) -> APIError:
    """FastAPI's request validation errors (admin bodies, query and path params) as a 400 naming the param."""
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    if first.get("type") == "json_invalid":
        cause = (first.get("ctx") or {}).get("error", first["msg"])
        return invalid_request(f"We could not parse the JSON body of your request: {cause}")
    loc = list(first.get("loc", ()))
    param = ".".join(str(p) for p in loc[1 if loc and loc[0] in _LOCATIONS else 0:]) or None
    msg = str(first["msg"]).removeprefix("Value error, ")
    return invalid_request(f"{param}: {msg}" if param else msg, param=param)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api_error(_: Request, exc: APIError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(LimitError)
    async def _limit_error(_: Request, exc: LimitError) -> JSONResponse:
        err = from_limit_error(exc)
        return JSONResponse(err.body(), status_code=err.status, headers=err.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(from_validation_error(exc.errors()).body(), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = "invalid_request_error" if exc.status_code < 500 else "server_error"
        body = APIError(exc.status_code, str(exc.detail), type=kind).body()
        if request.url.path.startswith(ANTHROPIC_PATHS):
            # The router's own 404/405, before any route (whose errors AnthropicRoute respells) is chosen.
            body = anthropic_error_body(exc.status_code, str(exc.detail))
        return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(DBAPIError)
    @app.exception_handler(SQLAlchemyTimeoutError)
    async def _database(_: Request, exc: Exception) -> JSONResponse:
        """Any route: a database that cannot be reached is a 503 to retry, not a 500."""
        if not db_unavailable(exc):
            raise exc  # a bad statement stays a server error
        log.warning("database unavailable: %s", type(exc).__name__)
        err = database_unavailable()
        return JSONResponse(err.body(), status_code=err.status, headers=err.headers)

    @app.exception_handler(ChainHeadMissing)
    async def _audit_unavailable(_: Request, exc: ChainHeadMissing) -> JSONResponse:
        """An admin change that cannot be audited is not applied (one transaction): say why."""
        log.error("admin change refused: %s", exc)
        err = APIError(500, "The change was not applied: the audit log cannot be appended to (its chain head "
                       "is missing; run `tollgate migrate`, then `tollgate audit verify`).", type="server_error",
                       code="audit_log_unavailable")
        return JSONResponse(err.body(), status_code=err.status)

    @app.exception_handler(LedgerFull)
    async def _ledger_full(_: Request, exc: LedgerFull) -> JSONResponse:
        err = ledger_full()
        return JSONResponse(err.body(), status_code=err.status, headers=err.headers)
