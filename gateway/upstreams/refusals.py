"""An upstream's refusals before any token: recorded once (its circuit breaker, last error and the log, with the
key scrubbed) and turned into what the pipeline acts on."""
from __future__ import annotations

import logging
from collections.abc import Callable

import httpx

from gateway.serving.base import UpstreamRefused
from gateway.upstreams.protocols.base import UpstreamProtocol
from gateway.upstreams.secrets import scrub
from gateway.upstreams.upstream import Upstream

log = logging.getLogger("tollgate.upstreams")


def refused_by(up: Upstream, message: str, status: int, *, fault: bool = True,
               retry_after_s: float | None = 1.0) -> UpstreamRefused:
    """The upstream refused before any answer: recorded (breaker, last error, log; the key scrubbed) and raised
    by the caller. `fault` False: the refusal says nothing bad of the upstream's health (a 429, a 400)."""
    message = scrub(message, up.config.api_key)
    up.last_error = message[:300]
    (up.breaker.failed if fault else up.breaker.released)()
    log.warning("upstream refused the request", extra={"upstream": up.config.name, "why": message[:300]})
    return UpstreamRefused(f"upstream {up.config.name}: {message}", status=status, retry_after_s=retry_after_s)


def retry_after(value: str | None) -> float:
    """Seconds from a Retry-After header (at least 1; an HTTP date or nonsense: 1)."""
    try:
        return max(1.0, float(value)) if value else 1.0
    except ValueError:
        return 1.0


def refusal_of(response: httpx.Response, raw: bytes, protocol: UpstreamProtocol,
               refused: Callable[..., UpstreamRefused], api_key: str | None) -> Exception:
    """An upstream's error answer (before any token) as what the pipeline acts on: a ValueError (the client's 400)
    or an UpstreamRefused (a fallback, else that status with Retry-After); `refused` records it (refused_by)."""
    status = response.status_code
    message = scrub(protocol.error(status, raw), api_key)
    wait = retry_after(response.headers.get("retry-after"))
    if status in (400, 413, 422):
        refused(f"HTTP {status}", 400, fault=False)  # the client's request: the upstream is fine
        return ValueError(f"The model's upstream refused the request: {message}"[:1000])
    if status == 429:
        return refused(f"rate limited (HTTP 429): {message}", 429, fault=False, retry_after_s=wait)
    if status in (401, 403):
        # The body may quote the key it refused: not a word of it goes further.
        return refused(f"refused the gateway's credentials (HTTP {status})", 502)
    if status == 404:
        return refused("does not serve this model (HTTP 404)", 502)
    return refused(f"HTTP {status}: {message}", 503 if status == 503 else 502, retry_after_s=wait)
