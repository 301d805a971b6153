"""The batch runner: a background task in every gateway process that claims runnable batches (a lease in the
database, renewed while it works, so two replicas never run one batch), validates their input, runs their
lines a few at a time through the tenant-facing pipeline (`Execute`), and writes their output files.

A line is recorded in the database as soon as it is done, before the next is taken; a resumed batch (after a
restart, or a lease taken over from a replica that died) runs only the lines not recorded. Each line's ledger
row is keyed by an id derived from (batch, line), so a line run again after a crash between its ledger row and
its record is still billed once."""
from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta

from gateway.batch import output
from gateway.batch.bounds import LIMIT_CODE, OutputBudget, budget
from gateway.batch.ids import line_request_id, new_file_id
from gateway.batch.input import InvalidInput, Line, LineError, Request, check_jsonl, request_lines
from gateway.batch.output import LineResult
from gateway.batch.store import BatchStore
from gateway.db.models.batch import Batch
from gateway.db.models.batch_file import BatchFile
from gateway.db.types import utcnow
from gateway.domain import batch_state as state
from gateway.domain.batch_usage import LineUsage
from gateway.domain.periodic import Periodic
from gateway.domain.validation import Count, NonNegativeSeconds, Seconds, config
from gateway.observability.outage import OutageLog

log = logging.getLogger("tollgate.batch")
SWEEP_ROUNDS, SWEEP_BATCH = 10, 200  # expired files deleted per sweep: at most 2,000, 200 to a transaction


class Paused(Exception):
    """The line cannot run now (a rate limit, a full queue, no capacity): try it again after `retry_after_s`.
    With a `fallback` (a timeout, a failed generation: nothing was billed) the line is tried at most
    RunnerConfig.max_attempts times, then `fallback` is its answer; without one it waits as long as it takes."""

    def __init__(self, retry_after_s: float, why: str = "", *, fallback: LineResult | None = None) -> None:
        super().__init__(why or f"retry after {retry_after_s}s")
        self.retry_after_s, self.fallback = retry_after_s, fallback


# (key id the batch runs as, endpoint, the line's body, the line's request id) -> the endpoint's answer.
# Raises Paused to have the line tried again later; any other error fails the line with a 500.
Execute = Callable[[str, str, dict, str], Awaitable[LineResult]]


@config(slots=True)
class RunnerConfig:
    concurrency: Count = 4  # lines in flight in this process, all batches together
    max_batches: Count = 4  # batches this process works on at once
    poll_s: Seconds = 1.0  # how often to renew leases, look for batches, and for a cancel or expiry of those running
    lease_s: Seconds = 30.0  # a claim lasts this long unless renewed (every poll); then another replica may take it
    stop_timeout_s: NonNegativeSeconds = 30.0  # on shutdown, how long lines in flight may finish
    max_requests: Count = 50_000  # requests one batch may hold
    max_pause_s: Seconds = 60.0  # longest wait a refusal's Retry-After can impose before the line is tried again
    max_attempts: Count = 3  # tries of a line that timed out or failed in the engine before its error is its answer
    output_expires_s: Count = 30 * 24 * 3600  # a batch's output and error files expire this long after written
    sweep_s: Seconds = 60.0  # how often this runner deletes expired files (idempotent: every replica may)
    max_output_bytes: Count = 200_000_000  # a batch's output and error files together (gateway.batch.bounds)
    max_line_output_bytes: Count = 20 * 2**20  # one line's output
    files_quota: int | None = None  # the gateway's per-tenant file quota (a tenant's own wins); None: no quota

    def __post_init__(self) -> None:
        if self.lease_s <= 2 * self.poll_s:
            raise ValueError("lease_s must exceed two polls (poll_s), or a live lease could lapse between renewals")


@dataclass(slots=True)
class _Work:
    """One claimed batch's lines in this process."""
    batch: Batch
    pending: deque[Line]  # parsed as each runs, not before
    paused_until: float = 0.0  # time.monotonic(): no new line before it
    halted: bool = False  # cancelled, expired, lease lost or the runner stopping: no new lines
    attempts: dict[int, int] = field(default_factory=dict)  # line index -> failed tries (of those with a fallback)
    lost: bool = False  # another runner holds the lease now
    budget: OutputBudget | None = None  # what its files may still hold; None: unbounded
    workers: list[asyncio.Task] = field(default_factory=list)


class BatchRunner:
    def __init__(self, store: BatchStore, execute: Execute, config: RunnerConfig | None = None, *,
                 owner: str | None = None) -> None:
        self.store, self.execute, self.config = store, execute, config or RunnerConfig()
        self.owner = owner or f"runner-{uuid.uuid4().hex[:16]}"
        self._slots = asyncio.Semaphore(self.config.concurrency)
        self._tasks: dict[str, asyncio.Task] = {}  # batch id -> its task
        self._work: dict[str, _Work] = {}
        self._stopping = False
        self._ticks = Periodic("batch-runner", self._tick, self.config.poll_s)
        self._next_sweep = time.monotonic() + self.config.sweep_s  # a sweep_s after start, then every sweep_s
        # While the database is down, one line when each kind of work starts failing and one when it recovers.
        self._claiming = OutageLog(log, "batch runner: claiming batches")
        self._renewing = OutageLog(log, "batch runner: renewing leases")
        self._sweeping = OutageLog(log, "batch runner: sweeping expired files")
        self._watching = OutageLog(log, "batch runner: reading batch statuses")

    # --- lifecycle

    async def start(self) -> None:
        self._ticks.start()

    def poke(self) -> None:
        """Look for work now (a batch was just created or cancelled here)."""
        self._ticks.wake()

    async def stop(self) -> None:
        """Take no new lines; let those in flight finish (bounded), then hand every batch back."""
        self._stopping = True
        self._ticks.wake()
        for work in self._work.values():
            work.halted = True
        tasks = list(self._tasks.values())
        if tasks:  # the loop keeps their leases meanwhile
            _, late = await asyncio.wait(tasks, timeout=self.config.stop_timeout_s)
            for task in late:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await self._ticks.stop()

    async def _tick(self) -> None:
        """Every poll (or poke): keep the leases held, sweep when due, and claim what there is room for."""
        await self._renew()
        await self._sweep()
        try:
            room = self.config.max_batches - len(self._tasks)
            if room > 0 and not self._stopping:
                for batch_id in await self.store.claim(self.owner, self.config.lease_s, room, list(self._tasks)):
                    self._tasks[batch_id] = asyncio.create_task(self._own(batch_id), name=f"batch-{batch_id}")
                self._claiming.succeeded()
        except Exception as e:
            self._claiming.failed(e)

    async def _renew(self) -> None:
        """Keep every batch this runner holds, whatever step it is at; one it lost stops here."""
        for batch_id in list(self._tasks):
            try:
                renewed = await self.store.renew(batch_id, self.owner, self.config.lease_s)
                self._renewing.succeeded()
                if renewed:
                    continue
            except Exception as e:
                self._renewing.failed(e)
                continue
            work = self._work.get(batch_id)
            if work is not None:
                work.lost = work.halted = True
            log.warning("batch %s: lease lost to another runner; stopping here", batch_id)

    async def _sweep(self) -> None:
        """Delete expired files' rows, at most every sweep_s: they are hidden from their tenants already, so a
        late or failed sweep costs only space. Deletes are by id and still-expired, so replicas may overlap."""
        if time.monotonic() < self._next_sweep:
            return
        self._next_sweep = time.monotonic() + self.config.sweep_s
        try:
            # A few rounds at most: this loop also renews the leases, which must not lapse behind a long sweep.
            for _ in range(SWEEP_ROUNDS):
                n = await self.store.sweep_files(SWEEP_BATCH)
                if n:
                    log.info("batch runner: deleted %d expired files", n)
                if n < SWEEP_BATCH:
                    break
            self._sweeping.succeeded()
        except Exception as e:
            self._sweeping.failed(e)

    async def _own(self, batch_id: str) -> None:
        try:
            await self._advance(batch_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("batch runner: batch %s failed here; it is handed back to be taken up again", batch_id)
        finally:
            self._tasks.pop(batch_id, None)
            self._work.pop(batch_id, None)
            try:
                await asyncio.shield(self.store.release(batch_id, self.owner))
            except Exception:
                log.exception("batch runner: releasing %s failed (its lease lapses by itself)", batch_id)
            self._ticks.wake()

    async def _advance(self, batch_id: str) -> None:
        """Step the batch through its states as far as this runner can take it."""
        batch = await self.store.held(batch_id, self.owner)
        while batch is not None and batch.status in state.RUNNABLE and not self._stopping:
            step = {state.VALIDATING: self._validate, state.IN_PROGRESS: self._run,
                    state.CANCELLING: self._to_finalizing, state.FINALIZING: self._finalize}[batch.status]
            if not await step(batch):
                return
            batch = await self.store.held(batch_id, self.owner)

    # --- the steps: each returns False when the batch is not this runner's to go on with

    async def _validate(self, batch: Batch) -> bool:
        if _expired(batch):
            return await self._to_finalizing(batch)
        try:
            content = await self._input(batch)
            total = await asyncio.to_thread(check_jsonl, content, max_lines=self.config.max_requests,
                                            endpoint=batch.endpoint)
        except InvalidInput as e:
            return await self.store.move(batch.id, self.owner, state.FAILED,
                                         errors=_errors_json(e.errors))
        return await self.store.move(batch.id, self.owner, state.IN_PROGRESS, total=total)

    async def _pending(self, batch: Batch, done: set[int]) -> deque[Line]:
        """The validated input's lines not done yet, unparsed."""
        content = await self._input(batch)
        return await asyncio.to_thread(lambda: deque(request_lines(content, skip=done)))

    async def _input(self, batch: Batch) -> bytes:
        content = await self.store.input_content(batch)
        if content is None:
            expired = await self.store.input_expired_at(batch)
            if expired is not None:
                raise InvalidInput([LineError("file_expired", f"The input file {batch.input_file_id} expired at "
                                              f"{expired.isoformat()}.", param="input_file_id")])
            raise InvalidInput([LineError("file_not_found", f"The input file {batch.input_file_id} was deleted or "
                                          "has expired.", param="input_file_id")])
        return content

    async def _run(self, batch: Batch) -> bool:
        try:
            pending = await self._pending(batch, await self.store.done_lines(batch.id))
        except InvalidInput as e:  # the input file was deleted while the batch ran
            return await self.store.move(batch.id, self.owner, state.FAILED, errors=_errors_json(e.errors))
        work = _Work(batch, pending, budget=await self._budget(batch))
        self._work[batch.id] = work
        watch = Periodic(f"batch-{batch.id}-watch", lambda: self._watch(work), self.config.poll_s, wait_first=True,
                         outage=self._watching)
        watch.start()
        try:
            work.workers = [asyncio.create_task(self._lines(work)) for _ in range(self.config.concurrency)]
            await asyncio.gather(*work.workers)
        finally:
            for task in work.workers:
                task.cancel()
            await asyncio.gather(*work.workers, return_exceptions=True)
            await watch.stop()
        if self._stopping or work.lost:
            return False
        await self._over_budget(work)
        return await self._to_finalizing(batch)

    async def _budget(self, batch: Batch) -> OutputBudget:
        room = None
        if self.config.files_quota is not None:
            room = await self.store.quota_room(batch, self.config.files_quota)
        return budget(max_output_bytes=self.config.max_output_bytes, max_line_bytes=self.config.max_line_output_bytes,
                      used=await self.store.output_bytes(batch.id), quota_room=room)

    async def _over_budget(self, work: _Work) -> None:
        """Once the files are full, every line left fails unrun; the batch's errors say which limit it met."""
        b = work.budget
        if b is None or not (b.exhausted or b.refused):
            return
        batch = work.batch
        while b.exhausted and work.pending:
            r = work.pending.popleft().request()
            await self.store.record_line(batch.id, r.index, False,
                                         output.not_run(batch.id, r.index, r.custom_id, LIMIT_CODE, b.batch_message()))
        message = b.batch_message() if b.exhausted else b.line_message()
        await self.store.note_errors(batch.id, _errors_json([LineError(LIMIT_CODE, message)]))

    async def _watch(self, work: _Work) -> None:
        """Every poll: halt the batch when it is cancelled or its window runs out (the loop keeps its lease)."""
        if not work.halted and (_expired(work.batch) or await self.store.status(work.batch.id) == state.CANCELLING):
            work.halted = True

    async def _lines(self, work: _Work) -> None:
        """One of the batch's workers: take a line, run it, record it, until none are left or it halts."""
        while work.pending and not work.halted:
            wait = work.paused_until - time.monotonic()
            if wait > 0:
                await asyncio.sleep(min(wait, self.config.poll_s))
                continue
            async with self._slots:
                if not work.pending or work.halted or work.paused_until > time.monotonic():
                    continue
                pending = work.pending.popleft()
                try:
                    request = pending.request()  # kept parsed on the Line while it waits for a retry
                    result = await self._one(work.batch, request)
                except Paused as p:
                    result = self._gave_up(work, request, p)
                    if result is None:
                        work.pending.appendleft(pending)
                        work.paused_until = time.monotonic() + min(max(p.retry_after_s, 0.05), self.config.max_pause_s)
                        log.info("batch %s paused %.1fs: %s", work.batch.id, p.retry_after_s, p)
                        continue
                except BaseException:
                    work.pending.appendleft(pending)  # cut off (shutdown): it runs again on resume
                    raise
            request_id = line_request_id(work.batch.id, request.index)
            line = output.answered(work.batch.id, request.index, request.custom_id, request_id, result)
            ok, refused = result.ok, work.budget and work.budget.admit(len(line))
            if refused:  # ran and billed, but not written: its place in the error file says why
                line, ok = output.not_run(work.batch.id, request.index, request.custom_id, LIMIT_CODE, refused), False
                work.halted = work.halted or work.budget.exhausted
            await asyncio.shield(self.store.record_line(work.batch.id, request.index, ok, line,
                                                        request_id=request_id, answered=LineUsage.of_body(result.body)))

    def _gave_up(self, work: _Work, request: Request, paused: Paused) -> LineResult | None:
        """The line's answer once a pause with a fallback has come max_attempts times; None: try again."""
        if paused.fallback is None:
            return None
        tries = work.attempts[request.index] = work.attempts.get(request.index, 0) + 1
        return paused.fallback if tries >= self.config.max_attempts else None

    async def _one(self, batch: Batch, request: Request) -> LineResult:
        try:
            return await self.execute(batch.key_id, batch.endpoint, request.body,
                                      line_request_id(batch.id, request.index))
        except (Paused, asyncio.CancelledError):
            raise
        except Exception:
            log.exception("batch %s line %d failed", batch.id, request.line)
            return LineResult(500, {"error": {"message": "The server had an error while processing this request.",
                                              "type": "server_error", "param": None, "code": None}})

    async def _to_finalizing(self, batch: Batch) -> bool:
        return await self.store.move(batch.id, self.owner, state.FINALIZING)

    async def _finalize(self, batch: Batch) -> bool:
        """Lines the window left unrun become batch_expired errors (a cancelled batch's are left out, as
        OpenAI's); then the output and error files and the final state, together."""
        cancelled = batch.cancelling_at is not None
        done = await self.store.done_lines(batch.id)
        unrun = []
        if not cancelled and len(done) < batch.total:
            try:
                unrun = [line.request() for line in await self._pending(batch, done)]
            except InvalidInput:
                unrun = []
            for r in unrun:
                await self.store.record_line(batch.id, r.index, False, output.not_run(
                    batch.id, r.index, r.custom_id, "batch_expired",
                    "This request could not be executed before the completion window expired."))
        # Expired: lines left unrun, or the window ran out before it ever started.
        to = state.outcome(cancelled, expired=bool(unrun) or batch.in_progress_at is None)
        ttl = self.config.output_expires_s
        out = _file(batch, await self.store.file_of_lines(batch.id, ok=True), "output", ttl)
        errors = _file(batch, await self.store.file_of_lines(batch.id, ok=False), "error", ttl)
        return await self.store.finalize(batch, self.owner, to, out, errors)


def _file(batch: Batch, content: bytearray, what: str, expires_s: int) -> BatchFile | None:
    """An output or error file: written by the system, never refused at this point; its lines were bounded
    as they ran (gateway.batch.bounds) by the gateway's limit and the tenant's quota room, which it counts in."""
    if not content:
        return None
    now = utcnow()
    return BatchFile(id=new_file_id(), tenant_id=batch.tenant_id, filename=f"{batch.id}_{what}.jsonl",
                     purpose="batch_output", bytes=len(content), content=content, created_at=now,
                     expires_at=now + timedelta(seconds=expires_s))


def _expired(batch: Batch) -> bool:
    return utcnow() >= batch.expires_at


def _errors_json(errors: list[LineError]) -> bytes:
    return json.dumps([e.as_dict() for e in errors]).encode()
