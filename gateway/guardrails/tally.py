"""What fired for one request: rule names, modes and counts, never the matched text. It is what the
x-tollgate-guardrails header says and what the log records, in every mode."""
from __future__ import annotations

import logging
from collections.abc import Callable

from gateway.guardrails.rules import Rule

log = logging.getLogger("tollgate.guardrails")

Count = Callable[[str, str, str, int], None]  # (tenant_id, stage, mode, matches)


class Tally:
    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._modes: dict[str, str] = {}

    def add(self, rule: Rule, count: int = 1) -> None:
        if count > 0:
            self._counts[rule.name] = self._counts.get(rule.name, 0) + count
            self._modes[rule.name] = rule.mode

    def merge(self, other: Tally) -> None:
        for name, mode, n in other.items():
            self._counts[name] = self._counts.get(name, 0) + n
            self._modes[name] = mode

    def __bool__(self) -> bool:
        return bool(self._counts)

    def items(self) -> list[tuple[str, str, int]]:
        return [(name, self._modes[name], n) for name, n in self._counts.items()]

    def header(self) -> str:
        """`name:mode:count`, comma-separated (rule names are restricted to header-safe characters)."""
        return ",".join(f"{name}:{mode}:{n}" for name, mode, n in self.items())

    def report(self, stage: str, tenant_id: str, count: Count | None = None) -> None:
        """One log line per rule that fired: its name, mode and count only (log_only means exactly this);
        `count(tenant_id, stage, mode, n)` feeds a metric."""
        for name, mode, n in self.items():
            log.info("guardrail fired", extra={"rule": name, "mode": mode, "stage": stage, "count": n,
                                               "tenant": tenant_id})
            if count is not None:
                count(tenant_id, stage, mode, n)
