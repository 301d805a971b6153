"""One upstream's live state: its config (the catalogue's, with live overrides), circuit breaker and load."""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from gateway.upstreams.breaker import BreakerConfig, CircuitBreaker
from gateway.upstreams.config import UpstreamConfig


class Upstream:
    """One upstream's live state: its config (catalogue plus overrides), circuit breaker and load."""

    def __init__(self, config: UpstreamConfig, breaker: BreakerConfig) -> None:
        self.config, self.breaker_config = config, breaker
        self.breaker = CircuitBreaker(breaker)
        self.in_flight = 0
        self.last_error: str | None = None

    def status(self) -> dict:
        """What GET /admin/upstreams shows: never the key (only whether one is set)."""
        c = self.config
        return {"name": c.name, "protocol": c.protocol, "base_url": shown_url(c.base_url), "timeout_s": c.timeout_s,
                "has_api_key": bool(c.api_key), "healthy": self.breaker.state == "closed",
                "circuit": self.breaker.state, "in_flight": self.in_flight, "last_error": self.last_error}


def shown_url(url: str) -> str:
    """The URL without credentials a base_url may carry (https://user:secret@host/v1)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host))
