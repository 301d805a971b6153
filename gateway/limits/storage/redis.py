"""Counts in Redis, shared by every gateway process. Each operation is one Lua script,
registered once at start-up, so a check-and-reserve across several limits is atomic."""
from __future__ import annotations

from pathlib import Path

import redis.asyncio as aioredis

from gateway.limits.storage import Outcome
from gateway.limits.strategy import Check

_LUA = Path(__file__).resolve().parent / "lua"


class RedisStorage:
    def __init__(self, url: str, *, max_connections: int = 64, wait_s: float = 5.0) -> None:
        self._url, self._max_connections, self._wait_s = url, max_connections, wait_s
        self._client: aioredis.Redis | None = None

    async def start(self) -> None:
        # A blocking pool: a burst of requests waits for a connection instead of failing.
        pool = aioredis.BlockingConnectionPool.from_url(self._url, max_connections=self._max_connections,
                                                        timeout=self._wait_s, decode_responses=True)
        self._client = aioredis.Redis(connection_pool=pool)
        await self._client.ping()  # fail loudly at start-up, not on the first request
        self._reserve = self._client.register_script((_LUA / "reserve.lua").read_text())
        self._adjust = self._client.register_script((_LUA / "adjust.lua").read_text())
        self._seed = self._client.register_script((_LUA / "seed.lua").read_text())
        for script in (self._reserve, self._adjust, self._seed):
            await self._client.script_load(script.script)

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.aclose(close_connection_pool=True)
            self._client = None

    async def reserve(self, checks: list[Check]) -> Outcome:
        keys: list[str] = []
        args: list[str | int | float] = [len(checks)]
        for c in checks:
            keys.extend(c.keys)
            args.extend([len(c.keys), c.limit, c.cost, c.min_cost, int(c.ttl_s * 1000), int(c.must_exist)])
            args.extend(repr(w) for w in c.weights)
        raw = [int(x) for x in await self._reserve(keys=keys, args=args)]
        status, index = raw[0], raw[1] - 1
        if status == -1:
            return Outcome(-1, index)
        used, granted = raw[2::2], raw[3::2]
        return Outcome(status, -1 if status == 1 else index, used, granted)

    async def adjust(self, deltas: list[tuple[str, int]]) -> None:
        live = [(k, d) for k, d in deltas if d]
        if live:
            await self._adjust(keys=[k for k, _ in live], args=[d for _, d in live])

    async def seed(self, key: str, value: int, ttl_s: float) -> int:
        return int(await self._seed(keys=[key], args=[value, int(ttl_s * 1000)]))
