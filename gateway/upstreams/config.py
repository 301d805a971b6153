"""One upstream as the backend uses it: the catalogue's spec, with the live overrides (PUT /admin/upstreams)
and its key resolved."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from gateway.catalogue import UpstreamSpec


@dataclass(frozen=True, slots=True)
class UpstreamConfig:
    name: str
    protocol: str  # "openai" | "anthropic": a key of gateway.upstreams.protocols.PROTOCOLS
    base_url: str
    api_key: str | None = None
    timeout_s: float = 60.0
    connect_timeout_s: float = 5.0
    first_token_timeout_s: float = 60.0
    idle_timeout_s: float = 60.0
    max_concurrency: int | None = None
    connect_retries: int = 1

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"upstream {self.name}: base_url must start with http:// or https://")
        for field in ("timeout_s", "connect_timeout_s", "first_token_timeout_s", "idle_timeout_s"):
            if getattr(self, field) <= 0:
                raise ValueError(f"upstream {self.name}: {field} must be > 0")

    def __repr__(self) -> str:  # never the key, whatever prints this
        return f"UpstreamConfig(name={self.name!r}, protocol={self.protocol!r}, base_url={self.base_url!r})"

    @classmethod
    def from_spec(cls, name: str, spec: UpstreamSpec, environ: Mapping[str, str]) -> UpstreamConfig:
        """The catalogue's upstream; its key read from `environ[api_key_env]` (the caller passes the environment)."""
        key = environ.get(spec.api_key_env) if spec.api_key_env else None
        return cls(name=name, protocol=spec.protocol, base_url=spec.base_url, api_key=key or None,
                   timeout_s=spec.timeout_s, connect_timeout_s=spec.connect_timeout_s,
                   first_token_timeout_s=spec.first_token_timeout_s or spec.timeout_s,
                   idle_timeout_s=spec.idle_timeout_s or spec.timeout_s, max_concurrency=spec.max_concurrency,
                   connect_retries=spec.connect_retries)

    def overridden(self, *, base_url: str | None = None, api_key: str | None = None,
                   timeout_s: float | None = None) -> UpstreamConfig:
        """With an operator's live changes; a new timeout_s also bounds the first-token and idle timeouts."""
        out = self
        if base_url is not None:
            out = replace(out, base_url=base_url.rstrip("/"))
        if api_key is not None:
            out = replace(out, api_key=api_key or None)
        if timeout_s is not None:
            out = replace(out, timeout_s=timeout_s, first_token_timeout_s=min(out.first_token_timeout_s, timeout_s),
                          idle_timeout_s=min(out.idle_timeout_s, timeout_s))
        return out
