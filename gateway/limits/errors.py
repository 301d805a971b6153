"""Why the limiter refused a request, in its own words; gateway/api/errors.py turns these into HTTP answers.

Each carries a `code`, the reason metrics and the API report it under."""
from __future__ import annotations


class LimitError(Exception):
    code = "limit_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RateLimited(LimitError):
    """A requests or tokens window is full: retry once it frees up."""

    code = "rate_limit_exceeded"

    def __init__(self, message: str, retry_after_s: float, headers: dict[str, str] | None = None,
                 unit: str = "requests") -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.headers = headers or {}  # x-ratelimit-* as they stood when refused
        self.unit = unit  # the full window's: "requests" or "tokens"


class QuotaExceeded(LimitError):
    """The month's token budget is spent: no window to wait out."""

    code = "insufficient_quota"


class LimitsUnavailable(LimitError):
    """The shared counters cannot be reached and the gateway is told to refuse rather than guess."""

    code = "limits_unavailable"

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
