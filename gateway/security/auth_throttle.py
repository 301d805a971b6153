"""Failed credential attempts, counted per client address and per key prefix: failures are slowed, valid
credentials never.

A credential is always checked; only what happens to a *failing* one depends on the counts. Past
`max_failures` in a window, a failure is answered 429 with Retry-After instead of 401, and the key lookups
of an attempt from a throttled address or prefix share a small lane (`lookup_slot`), so a flood of made-up
keys costs at most `suspect_lookups` database queries at a time, whatever its rate. A key that validates
passes even from a throttled address: one anonymous caller behind the same NAT or ingress as every tenant
cannot lock them out.

The address is the one the server sees (uvicorn's, which honours X-Forwarded-For only from the trusted
proxies of TOLLGATE_FORWARDED_ALLOW_IPS), never a header read here. Succeeding does not reset a count:
a caller holding one valid key cannot launder its failures with it. Bounded: past `max_clients` entries of
a kind the oldest is forgotten; addresses and prefixes are kept apart, so churning prefixes cannot evict
an address's count."""
from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

from gateway.security.authenticator import InvalidKey

T = TypeVar("T")

PREFIX_CHARS = 12  # as much of a key as the console shows (gateway.domain.api_keys.VISIBLE_CHARS)


@dataclass(slots=True)
class AuthThrottleConfig:
    max_failures: int = 20  # failed attempts allowed per window, per address and per key prefix
    window_s: float = 60.0
    max_clients: int = 10_000  # entries kept per kind (addresses, prefixes)
    suspect_lookups: int = 4  # concurrent key lookups for attempts from a throttled address or prefix
    suspect_wait_s: float = 5.0  # how long such an attempt waits for the lane before a 429

    def __post_init__(self) -> None:
        if self.max_failures < 1 or self.window_s <= 0 or self.max_clients < 1:
            raise ValueError("max_failures and max_clients must be >= 1, window_s > 0")
        if self.suspect_lookups < 1 or self.suspect_wait_s <= 0:
            raise ValueError("suspect_lookups must be >= 1, suspect_wait_s > 0")


@dataclass(frozen=True, slots=True)
class Attempt:
    """Who presents a credential: the client address the server trusts, and the credential's first characters."""
    address: str
    prefix: str

    @classmethod
    def of(cls, address: str, credential: str) -> Attempt:
        return cls(address, credential[:PREFIX_CHARS])


class Throttled(Exception):
    """A failing attempt past the limit, or a throttled one that found the lookup lane busy: answer 429."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__("too many failed credential attempts")
        self.retry_after_s = retry_after_s


class _Failures:
    """Failures per name in fixed windows; most recently failed last, so the oldest is forgotten first."""

    def __init__(self, config: AuthThrottleConfig, clock: Callable[[], float]) -> None:
        self._config, self._clock = config, clock
        self._counts: OrderedDict[str, tuple[int, float]] = OrderedDict()  # name -> (count, window start)

    def retry_after(self, name: str) -> float | None:
        entry = self._counts.get(name)
        if entry is None:
            return None
        count, start = entry
        left = start + self._config.window_s - self._clock()
        if left <= 0:
            del self._counts[name]
            return None
        return left if count >= self._config.max_failures else None

    def failed(self, name: str) -> None:
        now = self._clock()
        count, start = self._counts.pop(name, (0, now))
        if now - start >= self._config.window_s:
            count, start = 0, now
        self._counts[name] = (count + 1, start)
        while len(self._counts) > self._config.max_clients:
            self._counts.popitem(last=False)


class AuthThrottle:
    def __init__(self, config: AuthThrottleConfig | None = None, *, clock: Callable[[], float] = time.monotonic):
        self.config = config or AuthThrottleConfig()
        self._addresses = _Failures(self.config, clock)
        self._prefixes = _Failures(self.config, clock)
        self._lane: asyncio.Semaphore | None = None  # made on first use, inside the server's event loop

    def retry_after(self, attempt: Attempt) -> float | None:
        """Seconds until this address and prefix are out of the throttle; None when they are not in it."""
        waits = [w for w in (self._addresses.retry_after(attempt.address), self._prefixes.retry_after(attempt.prefix))
                 if w is not None]
        return max(waits) if waits else None

    def failed(self, attempt: Attempt) -> None:
        self._addresses.failed(attempt.address)
        self._prefixes.failed(attempt.prefix)

    async def check(self, attempt: Attempt,
                    verify: Callable[[AbstractAsyncContextManager], Awaitable[T]]) -> T:
        """`verify(lookup_slot)`'s result: it checks the credential (InvalidKey when it fails), running any
        database lookup inside the slot. A failure is counted, and re-raised as Throttled past the limit."""
        try:
            return await verify(self.lookup_slot(attempt))
        except InvalidKey:
            over = self.retry_after(attempt) is not None  # `max_failures` failures already: this one is past it
            self.failed(attempt)
            if not over:
                raise
            raise Throttled(self.retry_after(attempt) or self.config.window_s) from None

    @asynccontextmanager
    async def lookup_slot(self, attempt: Attempt) -> AsyncIterator[None]:
        """Around a key's database lookup: free for an attempt in good standing; from a throttled address or
        prefix, one of `suspect_lookups` shared slots, or Throttled after `suspect_wait_s`."""
        wait = self.retry_after(attempt)
        if wait is None:
            yield
            return
        if self._lane is None:
            self._lane = asyncio.Semaphore(self.config.suspect_lookups)
        try:
            async with asyncio.timeout(self.config.suspect_wait_s):
                await self._lane.acquire()
        except TimeoutError:
            raise Throttled(wait) from None
        try:
            yield
        finally:
            self._lane.release()


def retry_after_header(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))
