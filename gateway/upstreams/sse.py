"""Server-sent events off an httpx response, one (event, data) per dispatch. Comment lines (keep-alive pings)
are skipped here, so they never count as events: an idle timeout around `next event` is not reset by them."""
from __future__ import annotations

from collections.abc import AsyncIterator


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    event, data = "", list[str]()
    async for line in lines:
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield event or "message", "\n".join(data)
