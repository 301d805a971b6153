"""One admitted request: what it reserved, which version serves it, what it produced; `finish` bills it."""
from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime

import anyio

from gateway.api.v1.pipeline.job import Job
from gateway.billing.ledger import UsageRecord
from gateway.billing.prefix_recorder import Observed
from gateway.limits.limiter import Reservation
from gateway.schemas.openai import Usage
from gateway.serving.base import GenerationChunk
from gateway.services import Services

log = logging.getLogger("tollgate.generation")

HEALTHY = {"ok", "aborted", "truncated", "blocked"}  # outcomes that say nothing bad about the version
# "blocked": a guardrail stopped the answer (gateway.guardrails); the version did its work


class Run:
    """`finish` runs exactly once, whatever way the request ends; until then the run holds its reservation
    and one place in the shutdown drain."""

    def __init__(self, services: Services, principal, request_id: str, *, endpoint: str, model: str,
                 reservation: Reservation, started: float, job: Job | None = None,
                 candidates: Sequence[str] = (), pinned: bool = False, kind: str = "interactive",
                 rule: str | None = None) -> None:
        self.svc, self.principal, self.request_id = services, principal, request_id
        self.kind = kind  # "interactive" | "batch": how the ledger row is costed
        self.endpoint, self.model, self.job = endpoint, model, job
        self.candidates, self.pinned = list(candidates), pinned
        self.rule = rule  # the routing rule that chose the versions (x-tollgate-route-rule)
        self.reservation, self.started = reservation, started
        # A batch line may wait long in the engines behind interactive work (it runs only in idle steps).
        self.deadline = started + (services.settings.batch_line_timeout_s if kind == "batch"
                                   else services.settings.request_timeout_s)
        self.version: str | None = None
        self.prompt_tokens = 0
        self.max_tokens = 0
        self.clamped: tuple[int, int] | None = None  # (asked, cap): the output cap clamped max_tokens
        self.plan_max_tokens: int | None = None  # the limit the tenant's cap or default set, not the body
        self.completion_tokens = 0
        self.cached_tokens = 0
        self.reserved_tokens = 0  # of completion_tokens, those the tenant's reservation covered
        self.engine_ms: float | None = None  # the engine's metered time for it; 0 for a cache hit
        self.metered_by: str | None = None  # upstream versions: "upstream" (its usage) or "gateway" (counted here)
        self.produced = False
        self.cache_hit = False
        self.cache_status, self.cache_score = "bypass", None  # x-tollgate-cache[-score]
        self.prompt_version: str | None = None  # "name:N": the stored prompt the request was built from
        self.guardrails = None  # gateway.guardrails.policy.Policy when the key's tenant has rules
        self.ttft_s: float | None = None
        self._finished = False
        self._left = False  # the drain's count given back
        self._status = ""
        services.drain.enter()

    @property
    def served_as(self) -> str:
        """The version that generated the answer, or the model for a cache hit and embeddings."""
        return self.version or self.model

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - time.perf_counter())

    def began(self, version: str, first: GenerationChunk) -> None:
        """The engine took the prompt: from here on the request is billed."""
        self.version, self.produced = version, True
        self.ttft_s = time.perf_counter() - self.started
        self.prompt_tokens, self.cached_tokens = first.prompt_tokens, first.cached_tokens
        self.engine_ms, self.metered_by = first.engine_ms, first.metered_by

    def replayed(self, completion_tokens: int, score: float | None) -> None:
        """The semantic cache answered: billed, at the model's cache prices, with every prompt token counted as
        cached (this request's prompt, not the stored question's)."""
        self.produced, self.cache_hit = True, True
        self.completion_tokens, self.cached_tokens = completion_tokens, self.prompt_tokens
        self.engine_ms = 0.0  # no engine worked on it
        self.cache_status, self.cache_score = "hit", score

    def embedded(self) -> None:
        """An embeddings request was computed: billed for its input tokens."""
        self.produced = True

    def observe(self, chunk: GenerationChunk) -> None:
        """`chunk` was (or is about to be) handed to the client."""
        self.completion_tokens = chunk.completion_tokens
        self.reserved_tokens = min(chunk.reserved_tokens, chunk.completion_tokens)
        self.engine_ms = chunk.engine_ms
        if chunk.metered_by is not None:  # an upstream's counts may settle only on its last chunk
            self.prompt_tokens, self.cached_tokens = chunk.prompt_tokens, chunk.cached_tokens
            self.metered_by = chunk.metered_by

    async def within_budget(self, chunk: GenerationChunk) -> bool:
        """Meter a stream: take more of the month's budget when this chunk needs it."""
        res = self.reservation
        need = chunk.prompt_tokens + chunk.completion_tokens
        if need <= res.budget_granted:
            return True
        ask = max(need - res.budget_granted, min(32, res.tokens - res.budget_granted))
        await self.svc.limiter.extend(res, ask)
        return need <= res.budget_granted

    @property
    def billed_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens if self.produced else 0

    def usage(self) -> Usage:
        return Usage(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
                     total_tokens=self.prompt_tokens + self.completion_tokens,
                     prompt_tokens_details={"cached_tokens": self.cached_tokens})

    def finish(self, status: str) -> None:
        """Bill it (one ledger row, if anything was produced), settle its reservation, and report it to metrics
        and the router. Never awaits, so it is safe in any cleanup path; the row is queued, not yet durable."""
        rec = self._conclude(status)
        if rec is not None:
            self.svc.ledger.record(rec)
        self._leave()

    async def finish_durably(self, status: str) -> None:
        """`finish`, returning once the ledger row is durable (committed, or fsync'd in the spool). Await it
        before an answer's last bytes go out: a gateway killed after them then cannot lose the row."""
        rec = self._conclude(status)
        try:
            if rec is not None:
                with anyio.CancelScope(shield=True):
                    await self.svc.ledger.record_durably(rec)
        finally:
            self._leave()

    def _conclude(self, status: str) -> UsageRecord | None:
        """Settle, meter and report, once; the ledger row to write (None when nothing was produced)."""
        if self._finished:
            return None
        self._finished = True
        if self.kind == "batch" and status == "aborted":
            # A batch line cut off by this gateway's own shutdown runs again when the batch resumes, under the
            # same request id: billing the cut-off part would make the ledger skip the full run's row.
            self.produced = False
        svc, latency_s = self.svc, time.perf_counter() - self.started
        self._status, rec = status, None
        try:
            # Settling only returns unused tokens to the limits: the client need not wait for it.
            svc.drain.spawn(svc.limiter.settle(self.reservation, self.billed_tokens))
            model = svc.model_of(self.version) if self.version else self.model
            if self.produced:
                rec = UsageRecord(
                    request_id=self.request_id, tenant_id=self.principal.tenant_id,
                    key_id=self.principal.key_id, endpoint=self.endpoint, model=model,
                    version=self.version, prompt_tokens=self.prompt_tokens,
                    completion_tokens=self.completion_tokens, cached_tokens=self.cached_tokens,
                    reserved_tokens=self.reserved_tokens, cache_hit=self.cache_hit,
                    latency_ms=round(latency_s * 1000, 3),
                    engine_ms=None if self.engine_ms is None else round(self.engine_ms, 3),
                    ttft_ms=None if self.ttft_s is None else round(self.ttft_s * 1000, 3),
                    status=status, created_at=datetime.now(UTC), kind=self.kind,
                    prompt_version=self.prompt_version, metered_by=self.metered_by,
                    max_tokens_asked=self.clamped[0] if self.clamped else None,
                    max_tokens_cap=self.clamped[1] if self.clamped else None)
                cost = svc.prices.cost(model, prompt_tokens=self.prompt_tokens,
                                       completion_tokens=self.completion_tokens - self.reserved_tokens,
                                       cached_tokens=self.cached_tokens,
                                       cache_hit=self.cache_hit, kind=self.kind)
                svc.metrics.record_usage(self.principal.tenant_id, model, prompt=self.prompt_tokens,
                                         completion=self.completion_tokens, cached=self.cached_tokens,
                                         cost=float(cost))
                self._observe_input(rec)
            svc.metrics.requests.labels(self.principal.tenant_id, model, self.endpoint, status).inc()
            # A batch line's times are mostly its wait for idle steps: they would say nothing about a version's
            # speed, and must not trip a canary's rollback or fill the interactive latency histograms.
            interactive = self.kind != "batch"
            if interactive:
                svc.metrics.latency.labels(model, self.endpoint).observe(latency_s)
            if self.ttft_s is not None and interactive:
                svc.metrics.ttft.labels(model).observe(self.ttft_s)
            if self.version is not None and (interactive or status not in HEALTHY):
                svc.router.observe(self.version, ok=status in HEALTHY, ttft_s=self.ttft_s if interactive else None,
                                   latency_s=latency_s)
        except BaseException:
            self._leave()
            raise
        return rec

    def _observe_input(self, rec: UsageRecord) -> None:
        """Hand what the tenant sent to the waste report's hashing (queued: hashed and written off this path)."""
        prefixes = getattr(self.svc, "prefixes", None)  # a Services without the component hashes nothing
        if prefixes is None or self.job is None:  # embeddings carry no prompt to repeat
            return
        prefixes.observe(Observed(tenant_id=rec.tenant_id, at=rec.created_at, prompt_tokens=self.prompt_tokens,
                                  version=self.version or next(iter(self.candidates), None),
                                  prompt=self.job.prompt, messages=self.job.messages))

    def _leave(self) -> None:
        if self._left:
            return
        self._left = True
        self.svc.drain.leave()
        log.info("request finished", extra={"status": self._status, "version": self.version,
                                            "endpoint": self.endpoint, "cache": self.cache_status,
                                            "prompt_tokens": self.prompt_tokens,
                                            "completion_tokens": self.completion_tokens})
