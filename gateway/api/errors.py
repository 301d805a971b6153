"""Errors in OpenAI's shape: {"error": {"message", "type", "param", "code"}}."""
from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException


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


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api_error(_: Request, exc: APIError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        loc = [str(p) for p in first.get("loc", ()) if p != "body"]
        param = ".".join(loc) or None
        msg = f"{param}: {first['msg']}" if param else str(first["msg"])
        return JSONResponse(APIError(400, msg, param=param).body(), status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = "invalid_request_error" if exc.status_code < 500 else "server_error"
        body = APIError(exc.status_code, str(exc.detail), type=kind).body()
        return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None))
