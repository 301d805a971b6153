"""Counts in Redis, shared by every gateway process. Each operation is one Lua script,
registered once at start-up, so a check-and-reserve across several limits is atomic.

Every operation is bounded: waiting for a pooled connection, connecting, writing and reading the
answer must all fit in `timeout_s`, time the event loop itself spent running late excepted (see
deadline.py), and never more than `backstop_s`, which also bounds each of those steps in redis-py.
A failure of any kind surfaces as StorageUnavailable, never as a hang; redis-py's own retries are
off, since retrying a hung server only multiplies the wait."""
from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.driver_info import DriverInfo
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeout

from gateway.limits.storage import Outcome, StorageUnavailable
from gateway.limits.storage.deadline import LoopWatch, within
from gateway.limits.strategy import Check

_LUA = Path(__file__).resolve().parent / "lua"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RedisConfig:
    timeout_s: float = 0.25  # one operation: pool wait, connect, write and read
    max_connections: int = 64

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {self.max_connections}")

    @property
    def backstop_s(self) -> float:
        """The most one operation may take, however late the event loop runs (only an overloaded
        process gets near it: while the loop keeps time, a silent server costs `timeout_s`)."""
        return 10 * self.timeout_s


class RedisStorage:
    def __init__(self, url: str, config: RedisConfig = RedisConfig()) -> None:
        self._url, self.config = url, config
        self._client: aioredis.Redis | None = None
        self._watch = LoopWatch(window_s=max(1.0, 2 * config.timeout_s))

    async def start(self) -> None:
        """Fails loudly (a RedisError) when Redis cannot be reached at start-up."""
        c = self.config
        # A blocking pool: a burst of requests waits (briefly) for a connection instead of failing.
        # One DriverInfo for every connection: built per connection, it reads the package metadata,
        # ~5 ms of blocked event loop each, which a reconnect storm after a Redis restart multiplies.
        pool = aioredis.BlockingConnectionPool.from_url(
            self._url, max_connections=c.max_connections, timeout=c.backstop_s, decode_responses=True,
            socket_timeout=c.backstop_s, socket_connect_timeout=c.backstop_s, retry=Retry(NoBackoff(), 0),
            driver_info=DriverInfo())
        self._client = aioredis.Redis(connection_pool=pool)
        await self._client.ping()
        self._reserve = self._client.register_script((_LUA / "reserve.lua").read_text())
        self._adjust = self._client.register_script((_LUA / "adjust.lua").read_text())
        self._seed = self._client.register_script((_LUA / "seed.lua").read_text())
        for script in (self._reserve, self._adjust, self._seed):
            await self._client.script_load(script.script)
        self._watch.start()

    async def stop(self) -> None:
        self._watch.stop()
        if self._client is not None:
            await self._client.aclose(close_connection_pool=True)
            self._client = None

    async def _call(self, op: Callable[[], Coroutine[Any, Any, T]]) -> T:
        # A script lost with a restarted server is loaded again by redis-py (NoScriptError).
        try:
            return await within(self._once_more_if_stale(op), self.config.timeout_s, self.config.backstop_s,
                                self._watch)
        except (TimeoutError, RedisTimeout) as e:
            raise StorageUnavailable(f"redis did not answer in time: {e!r}", timeout=True) from e
        except (RedisError, OSError) as e:
            raise StorageUnavailable(f"redis failed: {e!r}") from e

    @staticmethod
    async def _once_more_if_stale(op: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """After a Redis restart every pooled connection is dead and fails once on its next use (redis-py then
        drops it): one more try on a fresh connection, inside the same deadline. A refused connection, a
        server really down, fails the second try too. (A command the old server ran before dying is counted
        again by the new one: an over-count, never an under-count.)"""
        try:
            return await op()
        except RedisConnectionError:
            return await op()

    async def ping(self) -> None:
        await self._call(self._client.ping)

    async def reserve(self, checks: list[Check]) -> Outcome:
        keys: list[str] = []
        args: list[str | int | float] = [len(checks)]
        for c in checks:
            keys.extend(c.keys)
            args.extend([len(c.keys), c.limit, c.cost, c.min_cost, int(c.ttl_s * 1000), int(c.must_exist)])
            args.extend(repr(w) for w in c.weights)
        raw = [int(x) for x in await self._call(lambda: self._reserve(keys=keys, args=args))]
        status, index = raw[0], raw[1] - 1
        if status == -1:
            return Outcome(-1, index)
        used, granted = raw[2::2], raw[3::2]
        return Outcome(status, -1 if status == 1 else index, used, granted)

    async def adjust(self, deltas: list[tuple[str, int]]) -> None:
        live = [(k, d) for k, d in deltas if d]
        if live:
            await self._call(lambda: self._adjust(keys=[k for k, _ in live], args=[d for _, d in live]))

    async def seed(self, key: str, value: int, ttl_s: float) -> int:
        return int(await self._call(lambda: self._seed(keys=[key], args=[value, int(ttl_s * 1000)])))

    async def overwrite(self, values: dict[str, int], ttl_s: float) -> None:
        async def run() -> None:
            async with self._client.pipeline(transaction=True) as pipe:
                for key, value in values.items():
                    pipe.set(key, value, px=int(ttl_s * 1000))
                await pipe.execute()
        if values:
            await self._call(run)
