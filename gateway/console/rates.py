"""Tokens per second from a counter: its slope between two looks."""
from __future__ import annotations


class TokenRate:
    """Generated tokens per second per version between two looks at the page (the counter's slope)."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[float, float]] = {}

    def rate(self, version: str, tokens: float, now: float) -> float | None:
        before = self._last.get(version)
        self._last[version] = (now, tokens)
        if before is None or now <= before[0]:
            return None
        return max(0.0, (tokens - before[1]) / (now - before[0]))
