"""Errors in OpenAI's shape: {"error": {"message", "type", "param", "code"}} (Anthropic's under /v1/messages)."""
from __future__ import annotations

import logging
import math

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as SQLAlchemyTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

from gateway.billing.ledger import LedgerFull
from gateway.audit.errors import ChainHeadMissing
from gateway.db.errors import database_unavailable as db_unavailable
from gateway.limits.errors import LimitError, LimitsUnavailable, QuotaExceeded, RateLimited
from gateway.schemas.anthropic import error_body as anthropic_error_body

log = logging.getLogger("tollgate.errors")

ANTHROPIC_PATHS = "/v1/messages"  # Anthropic's Messages API: its errors in Anthropic's shape


class APIError(Exception):
    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type, code, param
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def invalid_request(message: str, *, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def invalid_api_key(message: str = "Incorrect API key provided.") -> APIError:
    return APIError(401, message, type="invalid_request_error", code="invalid_api_key")


def permission_denied(message: str) -> APIError:
    return APIError(403, message, type="permission_error", code="permission_denied")


def model_not_found(model: str) -> APIError:
    return APIError(404, f"The model `{model}` does not exist or you do not have access to it.",
                    code="model_not_found", param="model")


def not_found(message: str) -> APIError:
    return APIError(404, message, code="not_found")


def rate_limited(message: str, retry_after: float, headers: dict[str, str] | None = None) -> APIError:
    h = {"Retry-After": str(max(1, int(retry_after + 0.999))), **(headers or {})}
    return APIError(429, message, type="rate_limit_error", code="rate_limit_exceeded", headers=h)


def insufficient_quota(message: str) -> APIError:
    return APIError(429, message, type="insufficient_quota", code="insufficient_quota")


def no_capacity(message: str = "No capacity to serve this model right now.") -> APIError:
    return APIError(503, message, type="server_error", code="no_capacity", headers={"Retry-After": "1"})


def limits_unavailable(message: str, retry_after: float) -> APIError:
    return APIError(503, message, type="server_error", code="limits_unavailable",
                    headers={"Retry-After": str(max(1, int(retry_after + 0.999)))})


def from_limit_error(exc: LimitError) -> APIError:
    """The limiter's refusals (gateway.limits.errors) as OpenAI-shaped errors."""
    if isinstance(exc, RateLimited):
        return rate_limited(exc.message, exc.retry_after_s, exc.headers)
    if isinstance(exc, QuotaExceeded):
        return insufficient_quota(exc.message)
    if isinstance(exc, LimitsUnavailable):
        return limits_unavailable(exc.message, exc.retry_after_s)
    return APIError(500, exc.message, type="server_error", code=exc.code)


DATABASE_RETRY_AFTER_S = 5


def database_unavailable(message: str = "The database is unreachable; retry shortly.", *,
                         retry_after: float = DATABASE_RETRY_AFTER_S) -> APIError:
    return APIError(503, message, type="server_error", code="database_unavailable",
                    headers={"Retry-After": str(max(1, math.ceil(retry_after)))})


def ledger_full() -> APIError:
    return APIError(503, "Usage cannot be recorded right now (the database is unreachable and the local "
                    "spool is full); retry shortly.", type="server_error", code="ledger_unavailable",
                    headers={"Retry-After": str(DATABASE_RETRY_AFTER_S)})


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
