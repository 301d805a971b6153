"""The semantic cache: an exact tier, then a per-namespace vector search checked by the verifier.

Glue only: keys come from keys.py, the may-I decisions from policy.py, the verification from verify.py
(guards.py, then the pair judge), memory from memory.py, persistence from gateway/crud/semantic_cache.py.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable

import faiss

from gateway.cache.audit import AccuracyAudit
from gateway.cache.config import CacheConfig, TenantCachePolicy
from gateway.cache.judge import PairJudge
from gateway.cache.keys import Uncacheable, context, exact_key, namespace_key, question
from gateway.cache.live_check import LiveCheck
from gateway.cache.memory import EntryStore
from gateway.cache.metrics import CacheMetrics
from gateway.cache.policy import bypass_reason, refusal_reason
from gateway.cache.truncation import fit
from gateway.cache.types import (
    CachedAnswer,
    CacheEntry,
    CacheLookup,
    CacheRequest,
    CacheStats,
)
from gateway.cache.verify import Verifier
from gateway.crud.semantic_cache import CacheRepository
from gateway.embedding.embedder import Embedder

log = logging.getLogger(__name__)
# Start-up milestones go where the operator sees them (tollgate.* loggers are the gateway's JSON log).
startup_log = logging.getLogger("tollgate.cache")

# (model, prompt_tokens, completion_tokens) -> money a hit saved versus generating.
Savings = Callable[[str, int, int], float]


def default_judge(config: CacheConfig) -> PairJudge | None:
    """The shipped pair judge (loaded at its first use, or by warm()); None when the config turns it off."""
    if not config.judge.enabled:
        return None
    from gateway.embedding.cross_encoder import shared

    return PairJudge(shared, config.judge)


class SemanticCache:
    def __init__(self, embedder: Embedder, config: CacheConfig | None = None, *,
                 repository: CacheRepository | None = None, metrics: CacheMetrics | None = None,
                 savings: Savings | None = None, verifier: Verifier | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.config = config or CacheConfig()
        self.embedder = embedder
        self.metrics = metrics or CacheMetrics()
        self._repository = repository
        self._savings = savings
        # The guards, then the pair judge, on every candidate above the threshold.
        self.verifier = verifier or Verifier(default_judge(self.config), unjudged_cosine=self.config.unjudged_cosine)
        # A sampled fraction of hits is answered again by the model (live_check.py); disagreements
        # tighten the tenant's threshold (audit.py).
        self.audit = AccuracyAudit(self.config.audit)
        self.live_check = LiveCheck(self.audit, embedder, self.metrics)
        self._clock = clock
        faiss.omp_set_num_threads(self.config.faiss_threads)
        self._store = EntryStore(embedder.dim, self.config.index)
        self._lock = threading.Lock()
        self._stats: dict[str, CacheStats] = {}
        # exact key -> (tenant, answer, expires_at): answers sent but not yet stored (hold())
        self._held: dict[str, tuple[str, CachedAnswer, float | None]] = {}
        self._warming: threading.Thread | None = None

    # --- public, async: the work runs in a thread so the event loop never waits on torch/FAISS/SQL

    async def lookup(self, request: CacheRequest, policy: TenantCachePolicy) -> CacheLookup:
        return await asyncio.to_thread(self.lookup_sync, request, policy)

    async def store(self, request: CacheRequest, policy: TenantCachePolicy, answer_text: str,
                    prompt_tokens: int, completion_tokens: int, finish_reason: str,
                    token_ends: tuple[int, ...] = ()) -> str | None:
        """The new entry's id, or None when the answer may not be cached. `token_ends` (truncation.py) let it
        serve smaller max_tokens too. Ends what hold() began for this request, stored or not."""
        try:
            return await asyncio.to_thread(self.store_sync, request, policy, answer_text,
                                           prompt_tokens, completion_tokens, finish_reason, token_ends)
        finally:
            self.release(request)

    def hold(self, request: CacheRequest, policy: TenantCachePolicy, answer_text: str, prompt_tokens: int,
             completion_tokens: int, finish_reason: str) -> bool:
        """Serve exact repeats of `request` this answer from now on, while store() embeds and persists it
        (read-your-writes: the client that got the answer may ask again at once). Call it before the
        answer's end reaches the client; store() ends the hold. False when the answer may not be cached."""
        if bypass_reason(request, policy) or refusal_reason(finish_reason, answer_text, prompt_tokens,
                                                            completion_tokens, request.max_tokens):
            return False
        try:
            key = exact_key(namespace_key(request), question(request), context(request))
        except Uncacheable:
            return False
        answer = CachedAnswer(answer_text, prompt_tokens, completion_tokens, finish_reason, request.max_tokens)
        expires = self._clock() + policy.ttl_s if policy.ttl_s else None
        with self._lock:
            self._held[key] = (request.tenant_id, answer, expires)
        return True

    def release(self, request: CacheRequest) -> None:
        """End hold() for `request` (its entry is stored, or will not be)."""
        try:
            key = exact_key(namespace_key(request), question(request), context(request))
        except Uncacheable:
            return
        with self._lock:
            self._held.pop(key, None)

    async def invalidate(self, tenant_id: str, entry_id: str | None = None) -> int:
        """Drop one entry of the tenant, or all of them; the number removed."""
        return await asyncio.to_thread(self.invalidate_sync, tenant_id, entry_id)

    async def load(self) -> int:
        """Re-index the persisted entries (at start-up); the number loaded."""
        return await asyncio.to_thread(self.load_sync)

    async def forget(self, tenant_id: str) -> int:
        """Drop the tenant's entries from this process only: another replica invalidated them and
        deleted their rows (gateway.events). The number dropped."""
        return await asyncio.to_thread(self.forget_sync, tenant_id)

    async def forget_deleted(self) -> int:
        """Drop the entries whose rows are gone: invalidations on another replica that this one
        missed (gateway.events resync). The number dropped."""
        return await asyncio.to_thread(self.forget_deleted_sync)

    def stats(self, tenant_id: str) -> CacheStats:
        with self._lock:
            counters = self._stats.get(tenant_id) or CacheStats(tenant_id)
            return CacheStats(tenant_id, entries=self._store.tenant_size(tenant_id),
                              namespaces=self._store.tenant_namespaces(tenant_id),
                              hits=counters.hits, misses=counters.misses, bypasses=counters.bypasses,
                              rejected_by_guard=dict(counters.rejected_by_guard))

    # --- synchronous bodies

    def lookup_sync(self, request: CacheRequest, policy: TenantCachePolicy) -> CacheLookup:
        started = time.perf_counter()
        result = self._lookup(request, policy)
        self.metrics.lookup(request.tenant_id, request.model, result.status, result.tier,
                            time.perf_counter() - started)
        self._count(request.tenant_id, result)
        if result.status == "hit" and result.entry is not None:
            money = self._savings(request.model, result.entry.prompt_tokens,
                                  result.entry.completion_tokens) if self._savings else 0.0
            self.metrics.saved(request.tenant_id, request.model, prompt_tokens=result.entry.prompt_tokens,
                               completion_tokens=result.entry.completion_tokens, money=money)
        return result

    def _lookup(self, request: CacheRequest, policy: TenantCachePolicy) -> CacheLookup:
        reason = bypass_reason(request, policy)
        if reason:
            return CacheLookup("bypass", reason=reason)
        try:
            text = question(request)
            earlier = context(request)
            namespace = namespace_key(request)
        except Uncacheable as e:
            return CacheLookup("bypass", reason=str(e))
        now = self._clock()
        expired: list[str] = []
        try:
            key = exact_key(namespace, text, earlier)
            with self._lock:
                entry = self._live(self._store.by_exact_key(key), now, expired)
                answer = fit(entry.answer, request.max_tokens) if entry is not None else None
                if answer is not None:
                    return self._hit(entry, answer, 1.0, "exact")
                held = self._held.get(key)
                answer = fit(held[1], request.max_tokens) if held and (held[2] is None or now < held[2]) else None
                if answer is not None:
                    return CacheLookup("hit", entry=answer, score=1.0, tier="exact")
            vector = self.embedder.embed_one(text)  # outside the lock: the slow part
            return self._semantic(request, text, earlier, namespace, vector, policy, now, expired)
        finally:
            if expired and self._repository is not None:
                try:
                    self._repository.delete(entry_ids=expired)
                except Exception:
                    # Expired rows only: memory already dropped them, and the next load skips them by TTL.
                    # A database outage must not turn this lookup (maybe a hit) into a bypass.
                    log.warning("semantic cache: could not delete %d expired rows", len(expired), exc_info=True)

    def threshold(self, tenant_id: str, policy: TenantCachePolicy) -> float:
        """The tenant's threshold, raised by what the live check found."""
        return min(1.0, policy.threshold + self.audit.tightening(tenant_id))

    def _semantic(self, request: CacheRequest, text: str, earlier: str, namespace: str, vector,
                  policy: TenantCachePolicy, now: float, expired: list[str]) -> CacheLookup:
        """The best neighbour above the threshold that the verifier accepts. The verifier runs outside the
        lock (the judge takes milliseconds); a candidate evicted meanwhile is skipped."""
        threshold = self.threshold(request.tenant_id, policy)
        with self._lock:
            candidates = []
            for entry, score in self._store.search(namespace, vector, self.config.candidates):
                if score < threshold:
                    break
                answer = fit(entry.answer, request.max_tokens) if self._live(entry, now, expired) else None
                if answer is not None:  # None: expired, or cut shorter than this request allows
                    candidates.append((entry, answer, score))
        # The guards read every candidate, best cosine first; the judge only the first `max_pairs` they pass.
        budget, refusals = self.config.judge.max_pairs, []
        for entry, answer, score in candidates:
            failed = self.verifier.guard_refusal(text, entry.question, earlier, entry.context)
            if failed is None:
                if budget == 0:
                    failed = "judge:budget"
                else:
                    budget -= 1 if self.verifier.judge is not None else 0
                    failed = self.verifier.judged(text, entry.question, score, earlier, entry.context)
            with self._lock:
                if failed is None and self._store.get(entry.id) is entry:  # not evicted meanwhile
                    return self._hit(entry, answer, score, "semantic")
                if failed is not None:
                    self._refused(request, failed, refusals)
        return CacheLookup("miss", reason=f"guard:{refusals[0]}" if refusals else None)

    def _refused(self, request: CacheRequest, failed: str, refusals: list[str]) -> None:
        """Count a refusal (called with the lock held)."""
        refusals.append(failed)
        self.metrics.rejected.labels(request.tenant_id, request.model, failed).inc()
        stats = self._stats.setdefault(request.tenant_id, CacheStats(request.tenant_id))
        stats.rejected_by_guard[failed] = stats.rejected_by_guard.get(failed, 0) + 1

    def store_sync(self, request: CacheRequest, policy: TenantCachePolicy, answer_text: str,
                   prompt_tokens: int, completion_tokens: int, finish_reason: str,
                   token_ends: tuple[int, ...] = ()) -> str | None:
        reason = bypass_reason(request, policy) or refusal_reason(
            finish_reason, answer_text, prompt_tokens, completion_tokens, request.max_tokens)
        try:
            text = question(request)
            earlier = context(request)
            namespace = namespace_key(request)
        except Uncacheable as e:
            reason = reason or str(e)
        if reason:
            self.metrics.stores.labels(request.tenant_id, request.model, "refused").inc()
            log.debug("semantic cache: not storing for tenant %s: %s", request.tenant_id, reason)
            return None
        now = self._clock()
        entry = CacheEntry(
            id=uuid.uuid4().hex, tenant_id=request.tenant_id, model=request.model, namespace=namespace,
            exact_key=exact_key(namespace, text, earlier), question=text, context=earlier,
            answer=CachedAnswer(answer_text, prompt_tokens, completion_tokens, finish_reason, request.max_tokens,
                                tuple(token_ends) if len(token_ends) == completion_tokens else ()),
            vector=self.embedder.embed_one(text), created_at=now,
            expires_at=now + policy.ttl_s if policy.ttl_s else None,
        )
        with self._lock:
            self._store.add(entry)
            evicted = self._store.evict_over(request.tenant_id, policy.max_entries)
        if evicted:
            self.metrics.evictions.labels(request.tenant_id, "lru").inc(len(evicted))
        if self._repository is not None:
            self._repository.save(entry, evicted=evicted)
        entry.vector = None
        self.metrics.stores.labels(request.tenant_id, request.model, "stored").inc()
        return entry.id

    def invalidate_sync(self, tenant_id: str, entry_id: str | None = None) -> int:
        with self._lock:
            if entry_id is None:
                self._drop_held(tenant_id)
                removed = self._store.remove_tenant(tenant_id)
            else:
                entry = self._store.get(entry_id)
                # Another tenant's id is "not found", never removed.
                removed = [entry_id] if entry is not None and entry.tenant_id == tenant_id else []
                if removed:
                    self._store.remove(entry_id)
        if self._repository is not None:
            if entry_id is None:
                self._repository.delete_tenant(tenant_id=tenant_id)
            else:
                self._repository.delete(entry_ids=removed)
        if removed:
            self.metrics.evictions.labels(tenant_id, "invalidated").inc(len(removed))
        return len(removed)

    def forget_sync(self, tenant_id: str) -> int:
        with self._lock:
            self._drop_held(tenant_id)
            removed = self._store.remove_tenant(tenant_id)
        if removed:
            self.metrics.evictions.labels(tenant_id, "invalidated").inc(len(removed))
        return len(removed)

    def forget_deleted_sync(self) -> int:
        if self._repository is None:
            return 0
        with self._lock:
            held = self._store.ids()
        persisted = self._repository.ids()
        # An entry whose row is still being written goes too: a miss later, never a wrong answer.
        with self._lock:
            gone = [self._store.remove(i) for i in held if i not in persisted]
        gone = [e for e in gone if e is not None]
        for entry in gone:
            self.metrics.evictions.labels(entry.tenant_id, "invalidated").inc()
        return len(gone)

    def load_sync(self) -> int:
        if self._repository is None:
            return 0
        entries = list(self._repository.load(dim=self.embedder.dim, now=self._clock()))
        with self._lock:
            self._store.add_many(entries)
        for entry in entries:
            entry.vector = None
        log.info("semantic cache: re-indexed %d persisted entries", len(entries))
        return len(entries)

    def warm(self) -> None:
        """Load what verification reads (WordNet, pint's units, the judge) so that no lookup pays for it."""
        self.verifier.load()

    def start_warming(self) -> threading.Thread:
        """warm() in a daemon thread: start-up goes on (the pool loads meanwhile); readiness waits for `warming`."""
        self._warming = threading.Thread(target=self._warm_logged, name="cache-warm", daemon=True)
        self._warming.start()
        return self._warming

    @property
    def warming(self) -> bool:
        """warm() still running in its thread (a failed one has ended: the first lookups load what it missed)."""
        return self._warming is not None and self._warming.is_alive()

    def _warm_logged(self) -> None:
        started = time.perf_counter()
        try:
            self.warm()
        except Exception:
            startup_log.warning("semantic cache: loading the verifier failed; the first lookups load it",
                                exc_info=True)
            return
        startup_log.info("semantic cache: verifier warm", extra={"seconds": round(time.perf_counter() - started, 1)})

    # --- helpers (called with the lock held)

    def _live(self, entry: CacheEntry | None, now: float, expired: list[str]) -> CacheEntry | None:
        """The entry, or None once its TTL has passed (then dropped; its row id goes to `expired`)."""
        if entry is None or not entry.expired(now):
            return entry
        self._store.remove(entry.id)
        self.metrics.evictions.labels(entry.tenant_id, "ttl").inc()
        expired.append(entry.id)
        return None

    def _drop_held(self, tenant_id: str) -> None:
        for key in [k for k, held in self._held.items() if held[0] == tenant_id]:
            del self._held[key]

    def _hit(self, entry: CacheEntry, answer: CachedAnswer, score: float, tier: str) -> CacheLookup:
        self._store.touch(entry)
        entry.hits += 1
        return CacheLookup("hit", entry=answer, score=score, tier=tier, entry_id=entry.id)

    def _count(self, tenant_id: str, result: CacheLookup) -> None:
        with self._lock:
            stats = self._stats.setdefault(tenant_id, CacheStats(tenant_id))
            if result.status == "hit":
                stats.hits += 1
            elif result.status == "miss":
                stats.misses += 1
            else:
                stats.bypasses += 1
