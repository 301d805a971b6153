"""The event bus over Redis: pub/sub for speed, a version counter and a short log for whatever
pub/sub lost (a dropped connection, a restart, a Redis outage).

Every event gets a version (INCR, in `lua/publish.lua`, atomically with its log entry and its
PUBLISH). A replica remembers the last version it applied; on every reconnect and every `tick_s`
it reads the counter and, if behind, replays the missed events from the log, or resyncs from the
database when the log no longer has them (or Redis lost its data: a new epoch).

The bus has its own client, separate from the rate limiter's; every call is bounded by
`timeout_s`, there are no hidden retries, and a Redis outage only means backing off and trying
again: an event published meanwhile waits in a bounded outbox."""
from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from gateway.events.bus import Applier, BusStats, EventBusConfig
from gateway.events.events import BadEvent, Event, Resync, decode, encode

log = logging.getLogger("tollgate.events")

_LUA = Path(__file__).resolve().parent / "lua"
REDIS_DOWN = (RedisError, OSError, TimeoutError)


@dataclass(frozen=True, slots=True)
class Message:
    version: int
    epoch: str
    body: dict  # the encoded event: origin, kind, data

    @classmethod
    def parse(cls, raw: str) -> Message:
        """ValueError when `raw` is not a message of this bus."""
        try:
            m = json.loads(raw)
            return cls(int(m["v"]), str(m["epoch"]), dict(m["body"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a bus message: {raw!r:.200}") from e


class RedisEventBus:
    def __init__(self, url: str, config: EventBusConfig | None = None, *, origin: str | None = None) -> None:
        self.config = config or EventBusConfig()
        self.origin = origin or uuid.uuid4().hex  # this replica, in each event it publishes
        self.stats = BusStats()
        self.connected = False  # subscribed and caught up
        self._url = url
        p = self.config.prefix
        self._channel, self._keys = p, [f"{p}:version", f"{p}:epoch", f"{p}:log"]
        self._client: aioredis.Redis | None = None
        self._outbox: deque[Event] = deque()
        self._outbox_lock = threading.Lock()  # publish() is called from worker threads too
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task] = []
        self._epoch: str | None = None
        self._applied: int | None = None  # the last version applied (or skipped as our own)
        self._dirty = False  # an applier failed: resync at the next tick
        self._resync_failing = False

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self, applier: Applier) -> None:
        t = self.config.timeout_s
        pool = aioredis.ConnectionPool.from_url(
            self._url, max_connections=8, socket_timeout=t, socket_connect_timeout=t,
            retry=Retry(NoBackoff(), 0), decode_responses=True, client_name=f"tollgate-events-{self.origin[:8]}")
        self._client = aioredis.Redis(connection_pool=pool)
        self._publish_script = self._client.register_script((_LUA / "publish.lua").read_text())
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        first_attempt = asyncio.Event()
        self._tasks = [asyncio.create_task(self._receive_loop(applier, first_attempt), name="event-bus-receive"),
                       asyncio.create_task(self._send_loop(), name="event-bus-send")]
        if self._outbox:
            self._wake.set()
        try:
            # Subscribed before start-up finishes when Redis is there; never held up when it is not.
            async with asyncio.timeout(4 * t + 0.5):
                await first_attempt.wait()
        except TimeoutError:
            pass

    async def stop(self, *, flush_s: float = 1.0) -> None:
        """Stop receiving; give the outbox `flush_s` to reach Redis; close the connections."""
        if not self._tasks:
            return
        receive, send = self._tasks
        receive.cancel()
        deadline = time.monotonic() + flush_s
        while self._outbox and not send.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        if self._outbox:
            log.warning("event bus stopped with %d events the other replicas were not told of "
                        "(they catch up when they next resync)", len(self._outbox))
        send.cancel()
        # Bounded: a task cancelled inside the Redis client's connect can swallow the cancellation and
        # retry against a server that is gone (seen once in a test run: stop() hung). Cancel it again,
        # and go on after a second wait whatever it does.
        _, pending = await asyncio.wait(self._tasks, timeout=max(self.config.timeout_s, 0.5))
        for task in pending:
            task.cancel()
        if pending:
            _, pending = await asyncio.wait(pending, timeout=max(self.config.timeout_s, 0.5))
            if pending:
                log.warning("event bus: %d task(s) did not stop; left behind", len(pending))
        for task in self._tasks:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: a loop that died is already logged where it died
        self._tasks = []
        try:
            async with asyncio.timeout(self.config.timeout_s):
                await self._client.aclose(close_connection_pool=True)
        except REDIS_DOWN:
            pass  # closing a dead connection: nothing to save
        self.connected = False

    # -- publishing ----------------------------------------------------------------------

    def publish(self, event: Event) -> None:
        try:
            with self._outbox_lock:
                if len(self._outbox) >= self.config.outbox_size:
                    log.warning("event bus outbox full (Redis unreachable?): %d events collapse into "
                                "one resync", len(self._outbox))
                    self._outbox.clear()
                    event = Resync()
                self._outbox.append(event)
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._wake.set)
        except Exception:
            # Never the caller's problem: the event waits in the outbox for the next wake-up.
            log.exception("event bus: publish failed", extra={"event": repr(event)})

    async def _send_loop(self) -> None:
        retries = 0  # failed sends in a row
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._outbox:
                event = self._outbox[0]
                try:
                    await self._send(event)
                except REDIS_DOWN as e:
                    self.stats.failures += 1
                    if not retries:
                        log.warning("event bus: cannot publish (%s: %s); retrying with backoff",
                                    type(e).__name__, e)
                    await asyncio.sleep(self.config.backoff.delay_s(retries))
                    retries += 1
                    continue
                except Exception:
                    # Not Redis (an event that cannot be encoded): retrying would not help.
                    self.stats.failures += 1
                    log.exception("event bus: cannot publish %r; dropped", event)
                    self._drop_head(event)
                    continue
                if retries:
                    log.info("event bus: publishing again")
                retries = 0
                self.stats.published += 1
                self._drop_head(event)

    def _drop_head(self, event: Event) -> None:
        with self._outbox_lock:
            if self._outbox and self._outbox[0] is event:  # unless an overflow replaced it
                self._outbox.popleft()

    async def _send(self, event: Event) -> None:
        args = [self._channel, encode(event, self.origin), uuid.uuid4().hex, self.config.log_size]
        await self._call(self._publish_script(keys=self._keys, args=args))

    # -- receiving -----------------------------------------------------------------------

    async def _receive_loop(self, applier: Applier, first_attempt: asyncio.Event) -> None:
        retries = 0  # failed connections in a row
        was_connected, down_since = False, None
        while True:
            pubsub = self._client.pubsub()
            try:
                await self._subscribe(pubsub)
                await self._check(applier)
                self.connected = True
                first_attempt.set()
                retries = 0
                if was_connected:
                    self.stats.reconnects += 1
                if down_since is not None:
                    log.info("event bus: connected to Redis again after %.1f s", time.monotonic() - down_since)
                    down_since = None
                was_connected = True
                await self._listen(pubsub, applier)
            except REDIS_DOWN as e:
                self.stats.failures += 1
                if down_since is None:
                    down_since = time.monotonic()
                    log.warning("event bus: lost Redis (%s: %s); reconnecting with backoff",
                                type(e).__name__, e)
            except Exception:
                # Not Redis: still never the end of receiving. Reconnect, and resync to be sure.
                self.stats.failures += 1
                self._dirty = True
                log.exception("event bus: receiving failed; reconnecting")
            finally:
                self.connected = False
                await self._close(pubsub)
            first_attempt.set()
            await asyncio.sleep(self.config.backoff.delay_s(retries))
            retries += 1

    async def _subscribe(self, pubsub) -> None:
        """Subscribed for sure: the counter is read only after, so no event falls in between."""
        await self._call(pubsub.subscribe(self._channel))
        deadline = time.monotonic() + self.config.timeout_s
        while (left := deadline - time.monotonic()) > 0:
            message = await self._call(pubsub.get_message(timeout=left), extra_s=left)
            if message is not None and message["type"] == "subscribe":
                return
        raise TimeoutError("no subscribe confirmation from Redis")

    async def _listen(self, pubsub, applier: Applier) -> None:
        """Messages as they come; every tick, the counter check and a ping on the subscription
        (a connection that went silent is replaced). Returns only by raising."""
        tick, t = self.config.tick_s, self.config.timeout_s
        heard = next_tick = time.monotonic()
        while True:
            wait = max(0.0, next_tick - time.monotonic())
            message = await self._call(pubsub.get_message(timeout=wait), extra_s=wait)
            now = time.monotonic()
            if message is not None:
                heard = now
                if message["type"] == "message":
                    await self._on_message(message["data"], applier)
            if now >= next_tick:
                if now - heard > 3 * tick + t:
                    raise ConnectionError(f"the subscription has been silent for {now - heard:.1f} s")
                await self._check(applier)
                await self._call(pubsub.ping())
                next_tick = time.monotonic() + tick

    async def _on_message(self, raw: str, applier: Applier) -> None:
        try:
            m = Message.parse(raw)
        except ValueError as e:
            log.warning("event bus: %s", e)
            return
        if self._epoch is None and self._applied == 0 and m.version == 1:
            self._epoch = m.epoch  # the first event of a new Redis
        if self._applied is not None and m.epoch == self._epoch:
            if m.version <= self._applied:
                return  # applied already (replayed at a tick)
            if m.version == self._applied + 1:
                self.stats.delivered += await self._apply(m, applier)
                return
        await self._check(applier)  # a gap, another epoch, or nothing known yet

    async def _check(self, applier: Applier) -> None:
        """Compare the counter with the last version applied; replay or resync when behind. The
        first check resyncs: the replica's state was read at build time, maybe minutes ago (a model
        loading), and what changed since then is not known."""
        version, epoch = await self._call(self._client.mget(self._keys[:2]))
        version = int(version or 0)
        if self._epoch is None and self._applied == 0 and epoch is not None:
            self._epoch = epoch  # the first events of a new Redis: nothing before them to miss
        if self._dirty or self._applied is None or epoch != self._epoch or version < self._applied:
            await self._resync(applier, epoch, version)
        elif version > self._applied:
            await self._replay(applier, epoch, version)

    async def _replay(self, applier: Applier, epoch: str, version: int) -> None:
        raw = await self._call(self._client.zrangebyscore(self._keys[2], self._applied + 1, version))
        try:
            missed = [Message.parse(r) for r in raw]
        except ValueError:
            missed = []
        expected = list(range(self._applied + 1, version + 1))
        if [m.version for m in missed] != expected or any(m.epoch != epoch for m in missed):
            log.warning("event bus: versions %d..%d are no longer in the log; resyncing",
                        self._applied + 1, version)
            await self._resync(applier, epoch, version)
            return
        for m in missed:
            self.stats.replayed += await self._apply(m, applier)

    async def _apply(self, m: Message, applier: Applier) -> bool:
        """Apply one message and count it applied, even on failure: a failed applier leaves the
        replica dirty, and the next check resyncs it. False for our own (applied already)."""
        theirs = True
        try:
            event, origin = decode(m.body)
            theirs = origin != self.origin
            if theirs:
                async with asyncio.timeout(self.config.apply_timeout_s):
                    await (applier.resync() if isinstance(event, Resync) else applier.apply(event))
        except BadEvent as e:
            log.warning("event bus: %s; resyncing", e)
            self._dirty = True
        except Exception:
            self.stats.failures += 1
            self._dirty = True
            log.exception("event bus: applying version %d failed; resyncing", m.version)
        self._applied = m.version
        return theirs

    async def _resync(self, applier: Applier, epoch: str | None, version: int) -> None:
        """`version` was read before the rebuild, so nothing published after it is lost."""
        try:
            async with asyncio.timeout(self.config.apply_timeout_s):
                await applier.resync()
            self._dirty = False
            self.stats.resyncs += 1
            log.info("event bus: resynced from the database at version %d", version)
        except Exception:
            self.stats.failures += 1
            if self._resync_failing:  # the database is still down: one traceback per outage
                log.debug("event bus: resync failed again", exc_info=True)
            else:
                log.exception("event bus: resync failed; trying again at every tick")
            self._dirty = self._resync_failing = True
        else:
            self._resync_failing = False
        self._epoch, self._applied = epoch, version

    # -- helpers -------------------------------------------------------------------------

    async def _call(self, awaitable, *, extra_s: float = 0.0):
        async with asyncio.timeout(self.config.timeout_s + extra_s):
            return await awaitable

    async def _close(self, pubsub) -> None:
        try:
            async with asyncio.timeout(self.config.timeout_s):
                await pubsub.aclose()
        except REDIS_DOWN as e:
            log.debug("event bus: closing the subscription: %s", e)  # it is dead already
