"""WHERE counts live: in this process (memory) or shared by every gateway process (Redis)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from gateway.limits.strategy import Check


@dataclass(slots=True)
class Outcome:
    status: int  # 1 reserved, 0 refused, -1 a must_exist counter is missing
    index: int  # the refusing (or missing) check, 0-based; -1 when reserved
    # per check: count after reserving (or seen, if refused), rounded up: a sliding window's weighted count of
    # 1.998 leaves no room for one more request, and x-ratelimit-remaining must not promise one
    used: list[int] = field(default_factory=list)
    granted: list[int] = field(default_factory=list)


class StorageUnavailable(Exception):
    """The store did not answer (refused, reset, or past its deadline): the counts are unknown."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


class Storage(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def reserve(self, checks: list[Check]) -> Outcome: ...

    async def adjust(self, deltas: list[tuple[str, int]]) -> None: ...

    async def seed(self, key: str, value: int, ttl_s: float) -> int:
        """Set `key` to `value` unless it exists; returns its value after the call."""
        ...

    async def overwrite(self, values: dict[str, int], ttl_s: float) -> None:
        """Set every key to its value whatever it held (reconciling counters from the ledger)."""
        ...
