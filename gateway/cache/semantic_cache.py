"""The semantic cache: an exact tier, then a per-namespace vector search checked by guards.

Glue only: keys come from keys.py, the may-I decisions from policy.py, the verification from
verify.py (guards.py, then alignment.py), memory from memory.py, persistence from repository.py.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Callable

import faiss

from gateway.cache.config import CacheConfig, TenantCachePolicy
from gateway.cache.alignment import Aligner
from gateway.cache.audit import AccuracyAudit
from gateway.cache.guards import GUARDS, Guard
from gateway.cache.judge import PairJudge
from gateway.cache.keys import Uncacheable, context, exact_key, namespace_key, question
from gateway.cache.live_check import LiveCheck
from gateway.cache.memory import EntryStore
from gateway.cache.metrics import CacheMetrics
from gateway.cache.policy import bypass_reason, refusal_reason
from gateway.cache.repository import CacheRepository
from gateway.cache.spelling import Speller
from gateway.cache.truncation import fit
from gateway.cache.types import CachedAnswer, CacheEntry, CacheLookup, CacheRequest, CacheStats
from gateway.cache.verify import Verifier
from gateway.cache.word_vectors import WordVectors, embed_many
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
                 savings: Savings | None = None, guards: dict[str, Guard] = GUARDS,
                 verifier: Verifier | None = None, clock: Callable[[], float] = time.time) -> None:
        self.config = config or CacheConfig()
        self.embedder = embedder
        self.metrics = metrics or CacheMetrics()
        self._repository = repository
        self._savings = savings
        # The guards, then the content-word alignment, on every candidate above the threshold.
        self.verifier = verifier or Verifier(Aligner(WordVectors(embedder), self.config.alignment), guards,
                                             similarity=self._similarity, mend=self.guard_text,
                                             vector_floor=self.config.vector_floor, judge=default_judge(self.config))
        # A sampled fraction of hits is answered again by the model (live_check.py); disagreements
        # tighten the tenant's threshold (audit.py).
        self.audit = AccuracyAudit(self.config.audit)
        self.live_check = LiveCheck(self.audit, embedder, self.metrics)
        self._clock = clock
        faiss.omp_set_num_threads(self.config.faiss_threads)
        self._store = EntryStore(embedder.dim, self.config.index)
        self._lock = threading.Lock()
        self._stats: dict[str, CacheStats] = {}
        self._warm_stop = threading.Event()
        self._speller: Speller | None = None  # built at the first search (or by warm())
        self._warming: threading.Thread | None = None

    # --- public, async: the work runs in a thread so the event loop never waits on torch/FAISS/SQL

    async def lookup(self, request: CacheRequest, policy: TenantCachePolicy) -> CacheLookup:
        return await asyncio.to_thread(self.lookup_sync, request, policy)

    async def store(self, request: CacheRequest, policy: TenantCachePolicy, answer_text: str,
                    prompt_tokens: int, completion_tokens: int, finish_reason: str,
                    token_ends: tuple[int, ...] = ()) -> str | None:
        """The new entry's id, or None when the answer may not be cached. `token_ends` (truncation.py) let it
        serve smaller max_tokens too."""
        return await asyncio.to_thread(self.store_sync, request, policy, answer_text,
                                       prompt_tokens, completion_tokens, finish_reason, token_ends)

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
            with self._lock:
                entry = self._live(self._store.by_exact_key(exact_key(namespace, text, earlier)), now, expired)
                answer = fit(entry.answer, request.max_tokens) if entry is not None else None
                if answer is not None:
                    return self._hit(entry, answer, 1.0, "exact")
            vector = self.embedder.embed_one(self.search_text(text))  # outside the lock: the slow part
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
        lock (it may embed a few words); a candidate evicted meanwhile is skipped."""
        threshold = self.threshold(request.tenant_id, policy)
        with self._lock:
            candidates = []
            for entry, score in self._store.search(namespace, vector, self.config.candidates):
                if score < threshold:
                    break
                answer = fit(entry.answer, request.max_tokens) if self._live(entry, now, expired) else None
                if answer is not None:  # None: expired, or cut shorter than this request allows
                    candidates.append((entry, answer, score))
        # The judge's budget goes first to pairs the rules accept (a veto), best cosine first; what is left of
        # it, to pairs the rules refused for a reason it may overturn, in the same order. Past the budget a
        # pair the rules accept is refused too, never served unread.
        budget, refusals, deferred = self.config.judge.max_pairs, [], []
        for entry, answer, score in candidates:
            failed = self.verifier.rules_refusal(text, entry.question, score)
            if self.verifier.needs_judge(failed):
                if failed is not None:
                    deferred.append((entry, answer, score, failed))
                    continue
                if budget == 0:
                    failed = "judge:budget"
                else:
                    budget -= 1
                    failed = self.verifier.judged(failed, text, entry.question, earlier, entry.context)
            hit = self._settle(request, entry, answer, score, failed, earlier, refusals)
            if hit is not None:
                return hit
        for entry, answer, score, failed in deferred:
            if budget > 0:
                budget -= 1
                failed = self.verifier.judged(failed, text, entry.question, earlier, entry.context)
            hit = self._settle(request, entry, answer, score, failed, earlier, refusals)
            if hit is not None:
                return hit
        return CacheLookup("miss", reason=f"guard:{refusals[0]}" if refusals else None)

    def _settle(self, request: CacheRequest, entry: CacheEntry, answer: CachedAnswer, score: float,
                failed: str | None, earlier: str, refusals: list[str]) -> CacheLookup | None:
        """A hit when the pair passed (and its earlier turns match, and it is still stored); else None, with
        the refusal counted and appended to `refusals`."""
        if failed is None and (earlier or entry.context):
            failed = self.verifier.context_refusal(earlier, entry.context)  # the same conversation, too
        with self._lock:
            if failed is None:
                return self._hit(entry, answer, score, "semantic") if self._store.get(entry.id) is entry else None
            refusals.append(failed)
            self.metrics.rejected.labels(request.tenant_id, request.model, failed).inc()
            stats = self._stats.setdefault(request.tenant_id, CacheStats(request.tenant_id))
            stats.rejected_by_guard[failed] = stats.rejected_by_guard.get(failed, 0) + 1
        return None

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
        self.verifier.prepare(text)  # its words' vectors now, so a later lookup embeds only its own
        entry = CacheEntry(
            id=uuid.uuid4().hex, tenant_id=request.tenant_id, model=request.model, namespace=namespace,
            exact_key=exact_key(namespace, text, earlier), question=text, context=earlier,
            answer=CachedAnswer(answer_text, prompt_tokens, completion_tokens, finish_reason, request.max_tokens,
                                tuple(token_ends) if len(token_ends) == completion_tokens else ()),
            vector=self.embedder.embed_one(self.search_text(text)), created_at=now,
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

    def search_text(self, text: str) -> str:
        """What is embedded for the vector search: the question with its typos mended (spelling.py)."""
        return self._spell().correct(text)

    def guard_text(self, text: str) -> str:
        """What the verifier's guards read: the question with its lower-case typos mended (spelling.py)."""
        return self._spell().correct(text, lowercase_only=True)

    def _spell(self) -> Speller:
        speller = self._speller
        if speller is None:
            with self._lock:
                if self._speller is None:
                    aligner = self.verifier.aligner
                    wordnet = aligner.wordnet if aligner is not None else None
                    vocabulary = getattr(self.embedder, "vocabulary", None)
                    self._speller = Speller(vocabulary() if callable(vocabulary) else (),
                                            known=wordnet.known if wordnet is not None else None)
                speller = self._speller
        return speller

    def warm(self, stop: threading.Event | None = None) -> int:
        """Load what verification reads (WordNet's tables, the vocabulary's word vectors) so that no
        lookup pays for it; the number of word vectors computed. Safe to run while serving."""
        aligner = self.verifier.aligner
        if aligner is None:
            return 0
        if aligner.wordnet is not None:
            aligner.wordnet.load()
        if self.verifier.judge is not None:
            self.verifier.judge.load()  # the first start exports it to ONNX (a few seconds)
        self.search_text("")  # the speller's tables
        return aligner.vectors.warm(stop=stop)

    def start_warming(self) -> threading.Thread:
        """warm() in a daemon thread (the gateway's start-up does not wait for it); close() stops it."""
        self._warming = threading.Thread(target=self._warm_logged, name="cache-warm", daemon=True)
        self._warming.start()
        return self._warming

    def stop_warming(self) -> None:
        self._warm_stop.set()

    def _warm_logged(self) -> None:
        started = time.perf_counter()
        try:
            added = self.warm(self._warm_stop)
        except Exception:
            startup_log.warning("semantic cache: warming the verifier failed; lookups embed words as needed",
                                exc_info=True)
            return
        startup_log.info("semantic cache: verifier warm", extra={
            "word_vectors": added, "seconds": round(time.perf_counter() - started, 1)})

    def _similarity(self, a: str, b: str) -> float:
        x, y = embed_many(self.embedder, [a, b])
        return float(x @ y)

    # --- helpers (called with the lock held)

    def _live(self, entry: CacheEntry | None, now: float, expired: list[str]) -> CacheEntry | None:
        """The entry, or None once its TTL has passed (then dropped; its row id goes to `expired`)."""
        if entry is None or not entry.expired(now):
            return entry
        self._store.remove(entry.id)
        self.metrics.evictions.labels(entry.tenant_id, "ttl").inc()
        expired.append(entry.id)
        return None

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
