"""One pooled HTTP/1.1 keep-alive client per upstream. Connection failures (nothing was sent) are retried by the
transport, `connect_retries` times; nothing else is ever retried here (a sent request may have been served)."""
from __future__ import annotations

import httpx

from gateway.upstreams.config import UpstreamConfig


def build_client(config: UpstreamConfig) -> httpx.AsyncClient:
    limit = config.max_concurrency or 100
    transport = httpx.AsyncHTTPTransport(retries=config.connect_retries, http1=True, http2=False,
                                         limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit,
                                                             keepalive_expiry=30.0))
    # read=timeout_s is a backstop: the backend enforces first-token and idle timeouts per event itself.
    timeout = httpx.Timeout(config.timeout_s, connect=config.connect_timeout_s, pool=config.connect_timeout_s)
    return httpx.AsyncClient(base_url=config.base_url, transport=transport, timeout=timeout,
                             follow_redirects=False, trust_env=False)


class ClientPool:
    """name -> its client; `replace` swaps one (a live change). The old one keeps its streams in flight and is
    closed with the pool."""

    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._retired: list[httpx.AsyncClient] = []

    def get(self, config: UpstreamConfig) -> httpx.AsyncClient:
        client = self._clients.get(config.name)
        if client is None or client.is_closed:
            client = self._clients[config.name] = build_client(config)
        return client

    async def replace(self, config: UpstreamConfig) -> None:
        old = self._clients.pop(config.name, None)
        self._clients[config.name] = build_client(config)
        if old is not None:
            self._retired.append(old)

    async def close(self) -> None:
        clients, self._clients, retired, self._retired = self._clients, {}, self._retired, []
        for client in [*clients.values(), *retired]:
            await client.aclose()
