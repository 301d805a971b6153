"""WHERE counts live: in this process (memory) or shared by every gateway process (Redis)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from gateway.limits.strategy import Check


@dataclass(slots=True)
class Outcome:
    status: int  # 1 reserved, 0 refused, -1 a must_exist counter is missing
    index: int  # the refusing (or missing) check, 0-based; -1 when reserved
    used: list[int] = field(default_factory=list)  # per check: count after reserving (or seen, if refused)
    granted: list[int] = field(default_factory=list)


class Storage(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def reserve(self, checks: list[Check]) -> Outcome: ...

    async def adjust(self, deltas: list[tuple[str, int]]) -> None: ...

    async def seed(self, key: str, value: int, ttl_s: float) -> int: ...
