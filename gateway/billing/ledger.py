"""The usage ledger writer: routes hand it a record and move on; a background task batches
the inserts. Idempotent by request_id, so a retried batch never bills twice."""
from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import datetime

from gateway.billing.prices import PriceBook, UnknownPrice
from gateway.crud.usage import insert_usage
from gateway.db.database import Database
from gateway.db.types import utcnow

log = logging.getLogger(__name__)


@dataclass(slots=True)
class UsageRecord:
    request_id: str
    tenant_id: str
    key_id: str | None
    endpoint: str  # "/v1/chat/completions"
    model: str  # the priced, public model
    version: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_hit: bool = False  # answered by the semantic cache
    latency_ms: float | None = None
    ttft_ms: float | None = None
    status: str = "ok"  # ok | error | aborted | truncated
    created_at: datetime = field(default_factory=utcnow)


class Ledger:
    def __init__(self, database: Database, prices: PriceBook, currency: str = "USD", *,
                 batch_size: int = 500, linger_s: float = 0.05, retries: int = 3,
                 retry_delay_s: float = 0.5) -> None:
        if batch_size < 1 or retries < 0 or linger_s < 0 or retry_delay_s < 0:
            raise ValueError("batch_size >= 1, retries, linger_s and retry_delay_s >= 0")
        self._database, self._prices, self._currency = database, prices, currency
        self._batch_size, self._linger_s = batch_size, linger_s
        self._retries, self._retry_delay_s = retries, retry_delay_s
        self._queue: deque[UsageRecord] = deque()
        self._write_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._stopping = False
        self._closed = False
        self.failed: list[UsageRecord] = []  # rows the database refused after every retry

    @property
    def pending(self) -> int:
        return len(self._queue)

    def record(self, rec: UsageRecord) -> None:
        """Queue a row and return at once (never blocks the request)."""
        if self._closed:
            log.warning("ledger closed: writing %s synchronously", rec.request_id)
            self._write_now([rec])
            return
        self._queue.append(rec)
        loop = self._loop
        if loop is None:
            return  # not started: flush() or start() picks it up
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None  # called from a worker thread
        if running is loop:
            self._wake.set()
        else:
            loop.call_soon_threadsafe(self._wake.set)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._run(), name="usage-ledger")
        if self._queue:
            self._wake.set()

    async def flush(self) -> None:
        """Return once every record queued before the call is in the database."""
        async with self._write_lock:
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(self._batch_size, len(self._queue)))]
                await self._write(batch)

    async def close(self) -> None:
        """Stop the writer and drain the queue; later records are written synchronously."""
        # Never cancel the writer: a cancelled insert would leave its batch unaccounted for.
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None
        await self.flush()
        self._closed = True

    async def _run(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            if not self._stopping:
                await asyncio.sleep(self._linger_s)  # let a batch gather
            await self.flush()

    async def _write(self, batch: list[UsageRecord]) -> None:
        for attempt in range(self._retries + 1):
            try:
                await asyncio.to_thread(self._insert, batch)
                return
            except Exception:
                log.exception("usage ledger: writing %d rows failed (attempt %d of %d)",
                              len(batch), attempt + 1, self._retries + 1)
                if attempt < self._retries:
                    await asyncio.sleep(self._retry_delay_s * 2 ** attempt)
        # The batch keeps failing: isolate the bad rows so the good ones still land.
        for rec in batch:
            try:
                await asyncio.to_thread(self._insert, [rec])
            except Exception:
                self._give_up(rec)

    def _write_now(self, batch: list[UsageRecord]) -> None:
        for rec in batch:
            try:
                self._insert([rec])
            except Exception:
                self._give_up(rec)

    def _give_up(self, rec: UsageRecord) -> None:
        self.failed.append(rec)
        log.critical("usage ledger: row NOT written, kept in Ledger.failed: %s",
                     json.dumps(asdict(rec), default=str), exc_info=True)

    def _insert(self, batch: list[UsageRecord]) -> None:
        """In a worker thread: cost each row (the PriceBook may reload) and insert them."""
        rows = [self._row(r) for r in batch]
        with self._database.engine.begin() as conn:
            insert_usage(conn, rows=rows)

    def _row(self, rec: UsageRecord) -> dict:
        row = asdict(rec)
        try:
            row["cost"] = self._prices.cost(
                rec.model, prompt_tokens=rec.prompt_tokens, completion_tokens=rec.completion_tokens,
                cached_tokens=rec.cached_tokens, cache_hit=rec.cache_hit, when=rec.created_at)
        except UnknownPrice:
            # Keep the usage (tokens are facts); a NULL cost is visible in bills and the CSV.
            log.error("usage ledger: no price for %r; %s recorded without a cost",
                      rec.model, rec.request_id)
            row["cost"] = None
        row["currency"] = self._currency
        return row
