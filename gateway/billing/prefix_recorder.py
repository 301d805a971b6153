"""The gateway's own hashing of tenants' prompts, for the waste report (gateway/billing/waste.py).

A finished request hands `observe` what it sent (its messages or prompt, its prompt tokens, the version that
counted them) and `observe` returns at once: nothing is hashed, counted or written on the request's path. A
background task flushes every `flush_s`: in a worker thread it hashes each request's prefixes
(gateway.billing.prefixes), counts a system prompt's tokens once per process with the version's own counting, and
writes each tenant-month's requests in one transaction (gateway.crud.prompt_prefixes).

Bounded: at most `max_pending` requests wait for a flush (beyond that they are dropped, and counted), and at most
`cap` prefixes are kept per tenant and month, the most seen. What the figures miss, so the repeated share is a
lower bound: dropped requests, and the repeats of a prefix after it was evicted by the cap (it starts again)."""
from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from prometheus_client import Counter

from gateway.billing.prefixes import Prefix, prefixes_of
from gateway.crud.prompt_prefixes import SeenPrefix, Sighting, record_sightings
from gateway.db.database import Database
from gateway.domain.period import Month
from gateway.observability.outage import OutageLog

log = logging.getLogger(__name__)

# Process-wide, like the ledger's. outcome: recorded | dropped (the buffer was full) | failed (the database refused
# the flush twice)
REQUESTS = Counter("tollgate_waste_requests", "Requests the waste report's prompt hashing saw, by outcome",
                   ["outcome"])

# (version, system messages) -> tokens; raises when the version cannot count them
TokenCounter = Callable[[str, list[dict]], int]


@dataclass(slots=True)
class PrefixConfig:
    cap: int = 1000  # prefixes kept per tenant and month (the most seen); 0 turns the hashing off
    flush_s: float = 1.0
    max_pending: int = 10_000  # requests waiting for a flush, at most
    memo_size: int = 4096  # system prompts whose token count this process remembers

    def __post_init__(self) -> None:
        if self.cap < 0 or self.flush_s <= 0 or self.max_pending < 1 or self.memo_size < 1:
            raise ValueError("cap >= 0, flush_s > 0, max_pending >= 1 and memo_size >= 1")

    @property
    def enabled(self) -> bool:
        return self.cap > 0


@dataclass(frozen=True, slots=True)
class Observed:
    """A billed request's input, as it finished."""
    tenant_id: str
    at: datetime
    prompt_tokens: int
    version: str | None  # the version that counted the prompt; None: no engine's (a system prompt is estimated)
    prompt: str | None
    messages: list[dict] | None
    attempts: int = 0  # flushes that failed to write it


class PrefixRecorder:
    def __init__(self, database: Database, config: PrefixConfig | None = None, *,
                 count: TokenCounter | None = None) -> None:
        self._database, self.config, self._count = database, config or PrefixConfig(), count
        self._pending: deque[Observed] = deque()
        self._memo: OrderedDict[str, int] = OrderedDict()  # system digest -> tokens (only the flush thread)
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None
        self._failing = OutageLog(log, "waste report: writing prompt prefixes")
        self.recorded = self.dropped = 0  # requests, since start

    @property
    def pending(self) -> int:
        return len(self._pending)

    def observe(self, seen: Observed) -> None:
        """Queue a finished request's input (never blocks; a full buffer drops it)."""
        if not self.config.enabled or seen.prompt_tokens <= 0:
            return
        if len(self._pending) >= self.config.max_pending:
            self.dropped += 1
            REQUESTS.labels("dropped").inc()
            return
        self._pending.append(seen)

    async def start(self) -> None:
        if self._task is None and self.config.enabled:
            self._task = asyncio.create_task(self._run(), name="waste-prefixes")

    async def close(self) -> None:
        """Stop the task and write what is left."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self.flush()

    async def flush(self) -> int:
        """Write every waiting request (off the event loop); how many were written."""
        async with self._lock:
            batch, self._pending = list(self._pending), deque()
            if not batch:
                return 0
            failed = await asyncio.to_thread(self._write, batch)
            written = len(batch) - len(failed)
            self.recorded += written
            REQUESTS.labels("recorded").inc(written)
            # Tried once more at the next flush, ahead of newer requests (the order decides what was seen first).
            room = self.config.max_pending - len(self._pending)
            again = [replace(s, attempts=s.attempts + 1) for s in failed if s.attempts == 0][:max(room, 0)]
            self._pending.extendleft(reversed(again))
            if len(failed) > len(again):
                REQUESTS.labels("failed").inc(len(failed) - len(again))
            return written

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.config.flush_s)
            try:
                await self.flush()
            except Exception:  # a supervisor loop: never let one bad flush end the hashing
                log.exception("waste report: a prompt-prefix flush failed")

    def _write(self, batch: list[Observed]) -> list[Observed]:
        """One transaction per tenant-month, in arrival order; the requests of those that failed."""
        groups: dict[tuple[str, str], list[Observed]] = defaultdict(list)
        for seen in batch:
            groups[(seen.tenant_id, str(Month.containing(seen.at)))].append(seen)
        failed: list[Observed] = []
        for (tenant_id, month), group in groups.items():
            try:
                previews: dict[str, str] = {}  # digest -> preview, worked out once per flush
                sightings = [Sighting(s.at, self._prefixes(s, previews)) for s in group]
                with self._database.engine.begin() as conn:
                    record_sightings(conn, tenant_id=tenant_id, month=month, sightings=sightings,
                                     cap=self.config.cap)
                self._failing.succeeded()
            except Exception as e:  # logged by the OutageLog
                # A supervisor loop: the group is tried once more at the next flush; the report is a lower bound.
                self._failing.failed(e)
                failed.extend(group)
        return failed

    def _prefixes(self, seen: Observed, previews: dict[str, str]) -> list[SeenPrefix]:
        out = []
        for p in prefixes_of(prompt=seen.prompt, messages=seen.messages):
            tokens = seen.prompt_tokens if p.kind == "prompt" else self._system_tokens(seen, p)
            shown = previews.get(p.digest)
            if shown is None:
                shown = previews[p.digest] = p.preview
            out.append(SeenPrefix(p.kind, p.digest, tokens, shown))
        return out

    def _system_tokens(self, seen: Observed, prefix: Prefix) -> int:
        """Counted once per process by the version's own counting, never above the request's prompt; estimated
        from its share of the prompt's characters when no version can count it."""
        tokens = self._memo.get(prefix.digest)
        if tokens is None:
            tokens = self._counted(seen.version, list(prefix.messages))
            if tokens is None:
                return _estimate(seen, prefix)
            self._memo[prefix.digest] = tokens
            if len(self._memo) > self.config.memo_size:
                self._memo.popitem(last=False)
        else:
            self._memo.move_to_end(prefix.digest)
        return min(tokens, seen.prompt_tokens)

    def _counted(self, version: str | None, messages: list[dict]) -> int | None:
        if self._count is None or version is None:
            return None
        try:
            return self._count(version, messages)
        except Exception:  # an upstream without a counter, a version since unloaded: estimated instead
            log.debug("waste report: %s could not count a system prompt", version, exc_info=True)
            return None


def _estimate(seen: Observed, prefix: Prefix) -> int:
    whole = sum(len(str(m.get("content", ""))) for m in seen.messages or ())
    part = sum(len(str(m.get("content", ""))) for m in prefix.messages)
    return round(seen.prompt_tokens * part / whole) if whole else 0

