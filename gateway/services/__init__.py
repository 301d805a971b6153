"""The gateway's components, built once per process and torn down in reverse order.

Routes and console pages reach them through `ServicesDep` (gateway.services.deps); the operations both
call live beside this module (keys, tenants, cache, routes)."""
from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from gateway.alerts import Alerts, AlertsConfig
from gateway.batch.uploads import UploadSlots
from gateway.billing.ledger import Ledger
from gateway.billing.prefix_recorder import PrefixConfig, PrefixRecorder
from gateway.billing.prices import PriceBook, batch_discounts
from gateway.billing.spool import Spool, SpoolConfig
from gateway.catalogue import Catalogue, load_catalogue
from gateway.crud.usage import month_tokens
from gateway.db.database import Database
from gateway.domain.period import Month
from gateway.economics.recorder import RecorderConfig, ReplicaRecorder, ReplicaSource
from gateway.events.bus import EventBus, LocalEventBus
from gateway.events.events import RouteChanged
from gateway.events.factory import build_event_bus
from gateway.events.handlers import ReplicaHandlers
from gateway.guardrails.store import GuardrailStore
from gateway.limits.failover import FailoverConfig
from gateway.limits.limiter import Limiter
from gateway.limits.storage import Storage
from gateway.limits.storage.breaker import BreakerConfig
from gateway.limits.storage.memory import MemoryConfig, MemoryStorage
from gateway.limits.storage.redis import RedisConfig, RedisStorage
from gateway.observability.metrics import Metrics
from gateway.prompts import PromptService
from gateway.routing.factory import build_router, classifier_config
from gateway.routing.router import Router
from gateway.security.admin_key import ensure_admin_key
from gateway.security.auth_throttle import AuthThrottle
from gateway.security.authenticator import KeyAuthenticator
from gateway.security.cache_salt import CacheSalter
from gateway.security.metrics_token import ensure_metrics_token
from gateway.security.secret_box import SecretBox
from gateway.security.session_revocations import SessionRevocations
from gateway.serving.base import ModelBackend, VersionInfo
from gateway.serving.composite import with_upstreams
from gateway.serving.factory import build_backend
from gateway.settings import Settings
from gateway.upstreams.backend import UpstreamBackend
from gateway.upstreams.live import LiveUpstreams

if TYPE_CHECKING:  # loaded at start-up only when used (torch, onnxruntime)
    from gateway.cache import SemanticCache
    from gateway.embedding.embedder import Embedder
    from gateway.embedding.recent import RecentEmbeddings
    from gateway.routing.classifier import ClassifierConfig, TaskClassifier

log = logging.getLogger("tollgate.services")


class Drain:
    """Counts generations in flight so shutdown can stop admitting and let them finish."""

    def __init__(self) -> None:
        self.accepting = True
        self.inflight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run bookkeeping (settling a reservation) off the response path; shutdown waits for it."""
        self.enter()
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self.leave()
        if not task.cancelled() and task.exception() is not None:
            log.error("background bookkeeping failed", exc_info=task.exception())

    def enter(self) -> None:
        self.inflight += 1
        self._idle.clear()

    def leave(self) -> None:
        self.inflight -= 1
        if self.inflight == 0:
            self._idle.set()

    async def close(self, timeout_s: float) -> bool:
        """Stop admitting; True when everything in flight finished within `timeout_s`."""
        self.accepting = False
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
            return True
        except TimeoutError:
            return False


@dataclass(slots=True)
class Services:
    settings: Settings
    catalogue: Catalogue
    database: Database
    prices: PriceBook
    ledger: Ledger
    authenticator: KeyAuthenticator
    admin_key: str
    limiter: Limiter
    backend: ModelBackend
    router: Router
    metrics: Metrics
    salter: CacheSalter
    embedder: Embedder | RecentEmbeddings | None = None  # for /v1/embeddings, the cache and the classifier
    cache: SemanticCache | None = None  # when settings.cache_enabled
    classifier: TaskClassifier | None = None  # when the catalogue names one
    metrics_token: str = ""  # Bearer credential for /metrics (the admin key works too); "" admits no token
    events: EventBus = field(default_factory=LocalEventBus)  # changes to and from the other replicas
    auth_throttle: AuthThrottle = field(default_factory=AuthThrottle)  # bad keys per client address
    # Console sessions signed out here or, through the event bus, on any other replica.
    session_revocations: SessionRevocations = field(default_factory=SessionRevocations)
    drain: Drain = field(default_factory=Drain)
    recorder: ReplicaRecorder | None = None  # replica-minutes for economics, when the backend can count replicas
    prompts: PromptService | None = None  # stored prompts a chat request may name (gateway/prompts)
    alerts: Alerts | None = None  # signed webhooks (gateway.alerts): the outbox hooks and the delivery worker
    guardrails: GuardrailStore | None = None  # tenants' guardrail rules (gateway.guardrails); None: none apply
    upstreams: LiveUpstreams | None = None  # external upstreams (gateway/upstreams) when the catalogue names any
    uploads: UploadSlots | None = None  # POST /v1/files in progress per tenant (gateway.batch.uploads)
    secret_box: SecretBox | None = None  # seals secrets at rest (gateway.security.secret_box); set by build()
    prefixes: PrefixRecorder | None = None  # the waste report's prompt hashing (gateway.billing.prefix_recorder)
    started_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.prompts is None:  # stored prompts need nothing but the database
            self.prompts = PromptService(self.database)
        if self.uploads is None:
            self.uploads = UploadSlots(self.settings.files_max_concurrent_uploads)

    @classmethod
    def build(cls, settings: Settings, *, backend: ModelBackend | None = None,
              embedder: Embedder | None = None) -> Services:
        catalogue = load_catalogue(settings.catalogue)
        database = Database(settings.resolved_database_url)
        prices = PriceBook(database, batch_discounts=batch_discounts(catalogue))
        storage: Storage = _limits_storage(settings)
        admin_key = ensure_admin_key(settings)[0]
        backend = backend if backend is not None else build_backend(settings, catalogue)
        # Keys come from the environment variables the catalogue names (api_key_env), read here once.
        external = UpstreamBackend(catalogue, environ=os.environ) if catalogue.upstreams else None
        backend = with_upstreams(backend, external)
        box = SecretBox.for_gateway(settings.secret_key, admin_key)  # upstream keys and webhook secrets at rest
        upstreams = None if external is None else LiveUpstreams(database, external, box)
        alerts = Alerts(database, alerts_config(settings), box=box, deliver=settings.alerts_worker_enabled,
                        health=backend.health, pool=str(getattr(backend, "replica_pool", "")))
        ledger = Ledger(database, prices, settings.currency, spool=Spool(SpoolConfig(
            settings.resolved_spool_dir, max_bytes=settings.spool_max_bytes,
            segment_bytes=settings.spool_segment_bytes)), replay_interval_s=settings.spool_replay_interval_s,
            after_insert=alerts.after_usage)
        ledger.listen_spooling(alerts.on_ledger_spooling)
        return cls(
            settings=settings, catalogue=catalogue, database=database, prices=prices,
            ledger=ledger, alerts=alerts,
            authenticator=KeyAuthenticator(database, grace_s=settings.auth_grace_s),
            admin_key=admin_key,
            limiter=Limiter(storage, month_usage=_month_usage(database), strategy=settings.limit_strategy,
                            window_s=settings.limit_window_s, failover=_limits_failover(settings)),
            backend=backend,
            router=build_router(settings, catalogue, database, on_save=alerts.on_route_saved),
            metrics=Metrics(per_tenant=settings.metrics_per_tenant),
            metrics_token=ensure_metrics_token(settings)[0],
            salter=CacheSalter(settings.cache_salt_secret or admin_key, enabled=settings.prefix_cache_isolation),
            embedder=embedder,
            events=build_event_bus(settings),
            guardrails=GuardrailStore(database),
            upstreams=upstreams,
            secret_box=box,
            prefixes=PrefixRecorder(database, PrefixConfig(cap=settings.waste_prefix_cap,
                                                           flush_s=settings.waste_flush_s),
                                    count=_system_counter(backend)),
        )

    async def start(self) -> None:
        """Fails loudly: an unpriced model or an unreachable Redis stops start-up."""
        await asyncio.to_thread(self.prices.reload)
        missing = self.prices.missing_prices(self.catalogue)
        if missing:
            self.database.dispose()
            raise RuntimeError(f"refusing to serve models without a price: {', '.join(missing)} "
                               "(run `tollgate migrate` to seed catalogue prices, or set them via the admin API)")
        await self.limiter.start()
        await self.ledger.start()
        if self.prefixes is not None:
            await self.prefixes.start()
        # The embedder, the cache and its verifier's warm-up load while the pool starts (its replicas load and warm
        # up in processes of their own): behind the pool, the warm-up took most of a core for the first ~20 s of
        # traffic, and a 2-core pool's decode steps ran at half speed meanwhile (docs/serving.md, stop 48).
        cache = asyncio.create_task(self._start_cache())
        try:
            await self.backend.start()
        except BaseException:
            cache.cancel()
            await asyncio.gather(cache, return_exceptions=True)
            await self._unwind()
            raise
        try:
            if self.upstreams is not None:
                await self.upstreams.load_all()  # operators' live changes over the catalogue's upstreams
            if self.alerts is not None:
                await self.alerts.seal_secrets()  # webhook secrets still in plaintext from before 0017
            await cache
        except BaseException:
            try:
                await self.backend.stop()
            finally:
                await self._unwind()
            raise
        await self._start_events()
        await self._start_recorder()
        if self.alerts is not None:
            await self.alerts.start()
        log.info("gateway started", extra={"versions": [v.name for v in self.backend.versions()],
                                           "semantic_cache": self.cache is not None})

    async def _start_events(self) -> None:
        """Tell the other replicas of this one's route changes (automatic rollbacks too) and apply
        theirs here. Never fails start-up: without Redis the bus keeps trying (gateway.events)."""
        self.router.listen(lambda alias: self.events.publish(RouteChanged(alias)))
        await self.events.start(ReplicaHandlers(self.router, self.authenticator, self.cache, self.upstreams,
                                                sessions=self.session_revocations))

    async def _start_recorder(self) -> None:
        """Replica-minutes per version (gateway.economics.recorder); never fails start-up: a failed sample is
        logged and the next one tries again."""
        interval = self.settings.economics_sample_s
        if interval and isinstance(self.backend, ReplicaSource):
            self.recorder = ReplicaRecorder(self.database, self.backend, RecorderConfig(interval_s=interval))
            await self.recorder.start()

    async def _unwind(self) -> None:
        if self.prefixes is not None:
            await self.prefixes.close()
        await self.ledger.close()
        await self.limiter.stop()

    async def _start_cache(self) -> None:
        """Load the one embedder (/v1/embeddings, the cache and the routing rules' task classifier share it),
        train the classifier, then load the cache's entries."""
        settings = self.settings
        wants_embeddings = settings.embeddings_enabled and bool(self.catalogue.embeddings)
        classifier = classifier_config(settings, self.catalogue)
        if self.embedder is None and (wants_embeddings or settings.cache_enabled or classifier is not None):
            from gateway.embedding.embedder import Embedder, EmbedderConfig

            config = EmbedderConfig(dtype=settings.embedder_dtype, runtime=settings.embedder_runtime)
            self.embedder = await asyncio.to_thread(Embedder, config)
        if classifier is not None:
            from gateway.embedding.recent import RecentEmbeddings

            # The classifier embeds a request's last user message just before the cache embeds the same text.
            self.embedder = RecentEmbeddings(self.embedder)
            self.classifier = await asyncio.to_thread(_train_classifier, self.embedder, classifier)
        if settings.cache_enabled:
            from gateway.cache import CacheConfig, CacheMetrics, SemanticCache, TenantCachePolicy
            from gateway.cache.audit import AuditConfig
            from gateway.cache.judge import JudgeConfig
            from gateway.crud.semantic_cache import CacheRepository

            self.cache = SemanticCache(
                cast("Embedder", self.embedder),  # built above; RecentEmbeddings forwards to the Embedder it wraps
                CacheConfig(default_policy=TenantCachePolicy(max_entries=settings.cache_max_entries_per_tenant),
                            audit=AuditConfig(fraction=settings.cache_audit_fraction),
                            judge=JudgeConfig(enabled=settings.cache_judge)),
                repository=CacheRepository(self.database.engine),
                metrics=CacheMetrics(self.metrics.registry, per_tenant=settings.metrics_per_tenant),
                savings=cache_savings(self.prices))
            await self.cache.load()
            if settings.cache_warm_verifier:
                self.cache.start_warming()

    async def stop(self) -> None:
        """Stop admitting, let in-flight generations finish (bounded), then flush the ledger."""
        if not await self.drain.close(self.settings.drain_timeout_s):
            log.warning("drain timed out; stopping with generations in flight",
                        extra={"inflight": self.drain.inflight})
        try:
            if self.alerts is not None:
                await self.alerts.monitor.stop()  # before the backend: a stopping pool is not an outage
            if self.recorder is not None:
                await self.recorder.stop()
            if self.cache is not None:
                await self.cache.live_check.close()  # best-effort checks: cancelled, before the backend goes
            await self.backend.stop()
        finally:
            await self.events.stop()
            await self.ledger.close()  # its last rows may cross a budget: their events wait in the outbox
            if self.prefixes is not None:
                await self.prefixes.close()  # what the last requests sent, hashed and written
            if self.alerts is not None:
                await self.alerts.stop()
            await self.limiter.stop()
            self.database.dispose()

    def loaded_versions(self) -> dict[str, VersionInfo]:
        return {v.name: v for v in self.backend.versions()}

    def model_of(self, version: str) -> str:
        """The priced model behind a version name ("smollm2-135m-instruct@fp32" -> its model)."""
        return version.partition("@")[0]


def _train_classifier(embedder: RecentEmbeddings, config: ClassifierConfig) -> TaskClassifier:
    """The routing rules' task classifier: one embedding per labelled example, once at start-up."""
    from gateway.routing.classifier import TaskClassifier, load_examples

    return TaskClassifier.train(embedder, load_examples(config.file), config.threshold)


def _system_counter(backend: ModelBackend) -> Callable[[str, list[dict[str, Any]]], int]:
    """A system prompt's tokens as the version counts a prompt of only those messages (its chat template's
    opening of the answer included, a few tokens over the prefix itself)."""
    def count(version: str, messages: list[dict[str, Any]]) -> int:
        return backend.count_prompt_tokens(version, messages=messages)
    return count


def cache_savings(prices: PriceBook) -> Callable[[str, int, int], float]:
    """A hit's saving: what generating would have cost minus what the hit is billed (cache prices)."""
    def saved(model: str, prompt_tokens: int, completion_tokens: int) -> float:
        full = prices.cost(model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
        hit = prices.cost(model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                          cached_tokens=prompt_tokens, cache_hit=True)
        return float(full - hit)
    return saved


def alerts_config(settings: Settings) -> AlertsConfig:
    return AlertsConfig(poll_s=settings.alerts_poll_s, lease_s=settings.alerts_lease_s,
                        timeout_s=settings.alerts_timeout_s, max_attempts=settings.alerts_max_attempts,
                        backoff_s=settings.alerts_backoff_s, backoff_max_s=settings.alerts_backoff_max_s,
                        check_s=settings.alerts_check_s, slo_window_s=settings.alerts_slo_window_s,
                        slo_min_requests=settings.alerts_slo_min_requests,
                        allow_private=settings.webhooks_allow_private,
                        retention_s=settings.alerts_retention_days * 86400)


def _limits_storage(settings: Settings) -> Storage:
    """Redis (every call bounded) when configured, else counts in this process."""
    if not settings.redis_url:
        return MemoryStorage(config=MemoryConfig(max_keys=settings.limits_local_max_keys))
    return RedisStorage(settings.redis_url, RedisConfig(timeout_s=settings.redis_timeout_s))


def _limits_failover(settings: Settings) -> FailoverConfig:
    """What the limiter does while Redis fails (gateway.limits.failover)."""
    return FailoverConfig(
        on_shared_down=settings.limits_on_redis_down, replicas=settings.gateway_replicas,
        breaker=BreakerConfig(failures=settings.limits_breaker_failures,
                              cooldown_s=settings.limits_breaker_cooldown_s),
        local=MemoryConfig(max_keys=settings.limits_local_max_keys))


def _month_usage(database: Database) -> Callable[[str, datetime], Awaitable[int]]:
    async def usage(tenant_id: str, month_start: datetime) -> int:
        def query() -> int:
            with database.session() as session:
                return month_tokens(session, tenant_id=tenant_id, month=Month.containing(month_start))
        return await asyncio.to_thread(query)
    return usage

