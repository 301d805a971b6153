"""Errors in OpenAI's shape: {"error": {"message", "type", "param", "code"}}; gateway/api/errors.py installs the
handlers that send them (in Anthropic's shape under /v1/messages)."""
from __future__ import annotations

import math
from typing import Any


class APIError(Exception):
    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type, code, param
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
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


DATABASE_RETRY_AFTER_S = 5


def database_unavailable(message: str = "The database is unreachable; retry shortly.", *,
                         retry_after: float = DATABASE_RETRY_AFTER_S) -> APIError:
    return APIError(503, message, type="server_error", code="database_unavailable",
                    headers={"Retry-After": str(max(1, math.ceil(retry_after)))})


def ledger_full() -> APIError:
    return APIError(503, "Usage cannot be recorded right now (the database is unreachable and the local "
                    "spool is full); retry shortly.", type="server_error", code="ledger_unavailable",
                    headers={"Retry-After": str(DATABASE_RETRY_AFTER_S)})
