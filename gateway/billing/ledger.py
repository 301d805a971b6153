"""The usage ledger writer: routes hand it a record and move on; a background task batches
the inserts. Idempotent by request_id, so a retried batch never bills twice.

When the database cannot be reached, a batch goes to the local spool (gateway/billing/spool.py)
at once, fsync'd; a second task replays the spool into the database when it answers again, and
at start-up (rows an earlier process spooled). Replaying is the same idempotent insert, so a row
that did land before a failure is never billed twice. Rows are costed when they are inserted,
at the price in effect at their created_at, spooled or not. Rows the database refuses outright
(bad data, not a connection problem) are set aside in the spool's rejected file, loudly."""
from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime

from prometheus_client import Counter, Gauge
from sqlalchemy import Connection, text

from gateway.billing.prices import PriceBook, UnknownPrice
from gateway.billing.spool import REJECTED, Spool
from gateway.crud.usage import insert_usage
from gateway.db.database import Database
from gateway.db.errors import database_unavailable
from gateway.db.types import utcnow
from gateway.domain.backoff import Backoff
from gateway.domain.periodic import Periodic
from gateway.observability.outage import OutageLog

log = logging.getLogger(__name__)

# Process-wide, like the router's collectors: one /metrics per process.
# outcome: spooled (database down) | replayed (from the spool) | rejected (the database refused the
# row itself; kept in the rejected file) | lost (neither the database nor the spool could take it)
ROWS = Counter("tollgate_ledger_rows", "Usage rows that did not go straight to the database, by outcome",
               ["outcome"])
SPOOL_BYTES = Gauge("tollgate_ledger_spool_bytes", "Bytes of usage rows waiting in the local spool")


class LedgerFull(Exception):
    """The database is down and the spool is full: a new request's row would have nowhere durable to go."""


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
    # Of completion_tokens, those the tenant's reserved throughput covered: paid by its fee, not in the row's cost.
    reserved_tokens: int = 0
    cache_hit: bool = False  # answered by the semantic cache
    latency_ms: float | None = None
    ttft_ms: float | None = None
    engine_ms: float | None = None  # metered engine time (workers/engine/step_meter.py); 0 for a cache hit
    status: str = "ok"  # ok | error | aborted | truncated
    created_at: datetime = field(default_factory=utcnow)
    kind: str = "interactive"  # | "batch": a Batch API line, costed at the model's batch discount
    prompt_version: str | None = None  # "name:N" when a stored prompt built the request (gateway/prompts)
    metered_by: str | None = None  # upstream versions: "upstream" (its reported usage) | "gateway" (counted here)
    max_tokens_asked: int | None = None  # set when the output cap clamped the request: what it asked for
    max_tokens_cap: int | None = None  # and the cap it ran at


def record_to_json(rec: UsageRecord) -> dict:
    row = asdict(rec)
    row["created_at"] = rec.created_at.isoformat()
    return row


_FIELDS = frozenset(f.name for f in fields(UsageRecord))


def record_from_json(row: dict) -> UsageRecord:
    """A spooled row back as a record; KeyError, TypeError or ValueError when it is not one."""
    kw = {k: v for k, v in row.items() if k in _FIELDS}
    kw["created_at"] = datetime.fromisoformat(kw["created_at"])
    return UsageRecord(**kw)


def _no_answer(error: BaseException) -> bool:
    """The database did not answer: unreachable, or too slow to wait for."""
    return isinstance(error, TimeoutError) or database_unavailable(error)


class Ledger:
    def __init__(self, database: Database, prices: PriceBook, currency: str = "USD", *,
                 spool: Spool | None = None, batch_size: int = 500, linger_s: float = 0.05,
                 retries: int = 3, retry_delay_s: float = 0.5, replay_interval_s: float = 2.0,
                 write_timeout_s: float = 10.0,
                 after_insert: Callable[[Connection, list[dict]], object] | None = None) -> None:
        """Without a `spool`, a row the database cannot take after every retry is only logged.
        An insert slower than `write_timeout_s` counts as a database that cannot be reached (one
        that hangs rather than refuses): its batch is spooled; should the insert land after all,
        the replay skips its rows. `after_insert(connection, rows)` runs in each insert's transaction,
        after the rows (live or replayed from the spool): the budget alerts (gateway.alerts.budget)."""
        if (batch_size < 1 or retries < 0 or linger_s < 0 or retry_delay_s < 0 or replay_interval_s <= 0
                or write_timeout_s <= 0):
            raise ValueError("batch_size >= 1, retries, linger_s and retry_delay_s >= 0, "
                             "replay_interval_s and write_timeout_s > 0")
        self._write_timeout_s = write_timeout_s
        self._after_insert = after_insert
        self._spooling_listeners: list[Callable[..., None]] = []
        self._database, self._prices, self._currency = database, prices, currency
        self._spool = spool
        self._batch_size, self._linger_s = batch_size, linger_s
        self._retries, self._retry_delay_s = retries, retry_delay_s
        self._backoff = Backoff(retry_delay_s)  # a failed batch insert: 1x, 2x, 4x... retry_delay_s
        self._queue: deque[UsageRecord] = deque()
        # Rows whose request is waiting to hear they are durable (record_durably): id(row) -> future.
        self._waiters: dict[int, asyncio.Future] = {}
        self._write_lock = asyncio.Lock()
        self._replay_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._stopping = False
        self._closed = False
        self._database_down = False  # the last insert (or probe) could not reach the database
        self._replayer = Periodic("usage-spool-replay", self._replay_due, replay_interval_s,
                                  outage=OutageLog(log, "usage ledger: replaying the spool"))
        self.spooled = self.replayed = self.rejected = self.lost = 0  # rows, since start

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def spool(self) -> Spool | None:
        return self._spool

    def has_room(self) -> bool:
        """Whether new billable work may start. False only while the database is down and the
        spool is full (or cannot be written): that work's row would have nowhere durable to go."""
        return self._spool is None or not self._database_down or not self._spool.full

    def ensure_room(self) -> None:
        """LedgerFull unless `has_room()`: call before admitting a request that will be billed."""
        if not self.has_room():
            raise LedgerFull("the database is unreachable and the usage spool is full")

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

    async def record_durably(self, rec: UsageRecord) -> None:
        """Queue a row and return once it is committed to the database or fsync'd in the spool: the answer's
        last bytes wait for this, so a gateway that dies after them cannot lose a row its client was told
        about. Rows finishing together share one write (group commit). When neither the database nor the spool
        can take the row it stays queued for the writer's next try, and this returns anyway: an answer is
        never held hostage to an outage the spool's own limits already refuse new work for."""
        loop = self._loop
        if loop is None or self._closed or self._stopping:
            self.record(rec)
            return
        done = loop.create_future()
        self._waiters[id(rec)] = done
        self.record(rec)
        await asyncio.shield(done)

    def _settle_waiters(self, batch: list[UsageRecord]) -> None:
        for rec in batch:
            done = self._waiters.pop(id(rec), None)
            if done is not None and not done.done():
                done.set_result(None)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._spool is not None:
            await asyncio.to_thread(self._spool.open)
            SPOOL_BYTES.set(self._spool.bytes)
            # Replays at once: rows spooled before a restart or crash are billed now.
            self._replayer.start()
        self._task = asyncio.create_task(self._run(), name="usage-ledger")
        if self._queue:
            self._wake.set()

    async def flush(self) -> None:
        """Return once every record queued before the call is in the database or the spool
        (or back in the queue, when neither can take it: the writer tries again)."""
        async with self._write_lock:
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(self._batch_size, len(self._queue)))]
                try:
                    left = await self._write(batch)
                finally:
                    self._settle_waiters(batch)  # durable, or (left) back in the queue: the writer retries them
                if left:
                    self._queue.extendleft(reversed(left))
                    return

    async def close(self) -> None:
        """Stop the writer and the replayer and drain the queue; later records are written synchronously."""
        # Never cancel them: a cancelled insert would leave its batch unaccounted for.
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task
        self._task = None
        await self._replayer.stop()
        await self.flush()
        while self._queue:
            rec = self._queue.popleft()
            self._give_up(rec)
            self._settle_waiters([rec])
        if self._spool is not None:
            await asyncio.to_thread(self._spool.close)
        self._closed = True

    async def _run(self) -> None:
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            if not self._stopping and not self._waiters:
                await asyncio.sleep(self._linger_s)  # let a batch gather (nobody is waiting on it)
            await self.flush()
            if self._queue and not self._stopping:
                await asyncio.sleep(max(self._retry_delay_s, 0.1))  # nowhere to write them now
                self._wake.set()

    async def _write(self, batch: list[UsageRecord]) -> list[UsageRecord]:
        """Insert `batch`, or spool it when the database is unreachable. Returns the rows that
        could go nowhere (the database down and the spool failing): the caller keeps them."""
        for attempt in range(self._retries + 1):
            try:
                await self._insert_within(batch)
                self._answered()
                return []
            except Exception as e:
                if self._spool is not None and _no_answer(e):
                    self._unreachable(e)
                    return await self._to_spool(batch)  # durable now; no waiting on retries
                log.exception("usage ledger: writing %d rows failed (attempt %d of %d)",
                              len(batch), attempt + 1, self._retries + 1)
                if attempt < self._retries:
                    await asyncio.sleep(self._backoff.delay_s(attempt))
        # The batch keeps failing: isolate the bad rows so the good ones still land.
        left: list[UsageRecord] = []
        for rec in batch:
            try:
                await self._insert_within([rec])
            except Exception as e:
                if self._spool is not None and _no_answer(e):
                    left += await self._to_spool([rec])
                else:
                    await asyncio.to_thread(self._reject, rec, e)
        return left

    async def _insert_within(self, batch: list[UsageRecord]) -> None:
        async with asyncio.timeout(self._write_timeout_s):
            await asyncio.to_thread(self._insert, batch)

    async def _to_spool(self, batch: list[UsageRecord]) -> list[UsageRecord]:
        try:
            await asyncio.to_thread(self._spool.append, [record_to_json(r) for r in batch])
        except OSError:
            log.exception("usage ledger: the spool cannot take %d rows either; keeping them in memory",
                          len(batch))
            return batch
        self.spooled += len(batch)
        ROWS.labels("spooled").inc(len(batch))
        SPOOL_BYTES.set(self._spool.bytes)
        return []

    def _write_now(self, batch: list[UsageRecord]) -> None:
        try:
            self._insert(batch)
            return
        except Exception as e:
            if self._spool is None or not database_unavailable(e):
                for rec in batch:
                    self._write_one_now(rec)
                return
        try:
            self._spool.append([record_to_json(r) for r in batch])
            self.spooled += len(batch)
            ROWS.labels("spooled").inc(len(batch))
        except OSError:
            for rec in batch:
                self._give_up(rec)

    def _write_one_now(self, rec: UsageRecord) -> None:
        try:
            self._insert([rec])
        except Exception as e:
            self._reject(rec, e)

    def _reject(self, rec: UsageRecord, error: BaseException) -> None:
        """The database refused this row itself (not a connection problem): set it aside, loudly."""
        self.rejected += 1
        ROWS.labels("rejected").inc()
        row = record_to_json(rec)
        kept = "NOT kept anywhere"
        if self._spool is not None:
            try:
                self._spool.reject([{"reason": f"{type(error).__name__}: {error}"[:1000], "row": row}])
                kept = f"kept in {self._spool.config.directory / REJECTED}"
            except OSError:
                log.exception("usage ledger: cannot write the rejected-rows file")
        log.critical("usage ledger: the database refused a row (%s: %s); %s: %s", type(error).__name__,
                     str(error)[:300], kept, json.dumps(row), exc_info=error)

    def _give_up(self, rec: UsageRecord) -> None:
        """Neither the database nor the spool can take the row: the log is its last record."""
        self.lost += 1
        ROWS.labels("lost").inc()
        log.critical("usage ledger: row NOT written (database and spool both failed): %s",
                     json.dumps(record_to_json(rec)))

    # --- the database's state, as the last insert saw it

    def listen_spooling(self, listener: Callable[..., None]) -> None:
        """Call `listener(spool_dir=..., reason=...)` each time the ledger starts spooling (once per outage,
        from the event loop or a worker thread). A failing listener is logged; spooling goes on."""
        self._spooling_listeners.append(listener)

    def _unreachable(self, error: BaseException) -> None:
        if not self._database_down:
            where = self._spool.config.directory if self._spool is not None else "nowhere"
            log.warning("usage ledger: database unreachable (%s); spooling rows to %s", type(error).__name__, where)
            for listener in self._spooling_listeners:
                try:
                    listener(spool_dir=str(where), reason=type(error).__name__)
                except Exception:
                    log.exception("usage ledger: a spooling listener failed")
        self._database_down = True

    def _answered(self) -> None:
        """The database took a write: if it was down, the spool can be replayed now."""
        if not self._database_down:
            return
        self._database_down = False
        log.info("usage ledger: database answers again; replaying the spool")
        self._replayer.wake()

    # --- replaying the spool

    async def replay(self) -> int:
        """Bill what the spool holds, segment by segment: its rows into the database, then the file
        deleted. Stops at the first sign the database is still down, leaving the rest for the
        next pass. Returns the rows handed to the database (some may have been there already)."""
        if self._spool is None:
            return 0
        async with self._replay_lock:
            await asyncio.to_thread(self._spool.seal)  # the active segment becomes replayable
            done = 0
            for path in await asyncio.to_thread(self._spool.segments):
                if self._stopping:
                    break
                n = await asyncio.to_thread(self._replay_segment, path)
                if n is None:
                    break
                done += n
            SPOOL_BYTES.set(self._spool.bytes)
        if done:
            log.info("usage ledger: replayed %d spooled rows", done)
        return done

    def _replay_segment(self, path) -> int | None:
        """In a worker thread: one segment into the database; None when it had to stop."""
        with self._spool.take(path) as segment:
            if segment is None:
                return 0  # a writer still holds it, or another replayer took it
            records, bad = [], [{"reason": "unreadable line", "line": line} for line in segment.bad_lines]
            for row in segment.rows:
                try:
                    records.append(record_from_json(row))
                except (KeyError, TypeError, ValueError) as e:
                    bad.append({"reason": f"not a usage row: {e}", "row": row})
            for i in range(0, len(records), self._batch_size):
                if self._stopping or not self._replay_batch(records[i:i + self._batch_size]):
                    return None  # the file stays: the next replay starts it over (idempotent)
            if bad:
                log.critical("usage ledger: %d unusable spooled line(s) set aside in %s", len(bad),
                             self._spool.config.directory / REJECTED)
                self._spool.reject(bad)
            self._spool.remove(segment)
        self.replayed += len(records)
        ROWS.labels("replayed").inc(len(records))
        return len(records)

    def _replay_batch(self, batch: list[UsageRecord]) -> bool:
        """True once every row is committed or set aside; False when the database is unreachable."""
        try:
            self._insert(batch)
            self._answered()
            return True
        except Exception as e:
            if database_unavailable(e):
                self._unreachable(e)
                return False
            log.warning("usage ledger: a replayed batch was refused (%s); inserting row by row", e)
        for rec in batch:
            try:
                self._insert([rec])
            except Exception as e:
                if database_unavailable(e):
                    self._unreachable(e)
                    return False
                self._reject(rec, e)
        return True

    async def _replay_due(self) -> None:
        if self._spool.pending and await asyncio.to_thread(self._reachable):
            await self.replay()

    def _reachable(self) -> bool:
        """Cheap check before reading a segment while the database is believed down."""
        if not self._database_down:
            return True
        try:
            with self._database.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except Exception as e:
            if not database_unavailable(e):
                raise
            return False
        self._answered()
        return True

    def _insert(self, batch: list[UsageRecord]) -> None:
        """In a worker thread: cost each row (the PriceBook may reload) and insert them."""
        rows = [self._row(r) for r in batch]
        with self._database.engine.begin() as conn:
            insert_usage(conn, rows=rows)
            if self._after_insert is not None:
                self._after_insert(conn, rows)

    def _row(self, rec: UsageRecord) -> dict:
        row = asdict(rec)
        try:
            row["cost"] = self._prices.cost(
                rec.model, prompt_tokens=rec.prompt_tokens,
                completion_tokens=rec.completion_tokens - rec.reserved_tokens,  # the reservation's fee pays those
                cached_tokens=rec.cached_tokens, cache_hit=rec.cache_hit, when=rec.created_at, kind=rec.kind)
        except UnknownPrice:
            # Keep the usage (tokens are facts); a NULL cost is visible in bills and the CSV.
            log.error("usage ledger: no price for %r; %s recorded without a cost",
                      rec.model, rec.request_id)
            row["cost"] = None
        row["currency"] = self._currency
        return row
