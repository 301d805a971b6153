"""Prometheus metrics for one engine, named like vLLM's under `tollgate:`.

The metric families exist once per registry and are labelled by model_name, so several engines
(say an fp32 and a bf16 version) share them in one process without duplicated timeseries.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

from workers.engine.scheduler import SchedulerStats
from workers.engine.scheduler_output import SchedulerOutput
from workers.engine.sequence import Sequence

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_TOKEN_LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_LABELS = ("model_name",)


@dataclass(slots=True)
class _Families:
    time_to_first_token: Histogram
    time_per_output_token: Histogram
    request_queue_time: Histogram
    e2e_request_latency: Histogram
    num_requests_running: Gauge
    num_requests_waiting: Gauge
    kv_blocks_used: Gauge
    kv_blocks_total: Gauge
    prefix_cache_queries: Counter
    prefix_cache_hits: Counter
    prefix_cache_partial_tokens: Counter
    num_preemptions: Counter
    prompt_tokens: Counter
    generation_tokens: Counter
    spec_decode_num_drafts: Counter
    spec_decode_num_draft_tokens: Counter
    spec_decode_num_accepted_tokens: Counter
    spec_decode_num_accepted_tokens_per_pos: Counter  # labelled by position too


_PER_POSITION = ("spec_decode_num_accepted_tokens_per_pos",)


def _create(registry: CollectorRegistry) -> _Families:
    def hist(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
        return Histogram(f"tollgate:{name}", doc, _LABELS, buckets=buckets, registry=registry)

    def gauge(name: str, doc: str) -> Gauge:
        return Gauge(f"tollgate:{name}", doc, _LABELS, registry=registry)

    def counter(name: str, doc: str) -> Counter:
        return Counter(f"tollgate:{name}", doc, _LABELS, registry=registry)

    return _Families(
        hist("time_to_first_token_seconds", "Arrival to first generated token.", _LATENCY_BUCKETS),
        hist("time_per_output_token_seconds", "Mean gap between output tokens after the first.",
             _TOKEN_LATENCY_BUCKETS),
        hist("request_queue_time_seconds", "Arrival to first scheduling.", _LATENCY_BUCKETS),
        hist("e2e_request_latency_seconds", "Arrival to finish.", _LATENCY_BUCKETS),
        gauge("num_requests_running", "Sequences holding KV blocks and being computed."),
        gauge("num_requests_waiting", "Sequences queued (new or preempted)."),
        gauge("kv_blocks_used", "KV blocks referenced by live sequences."),
        gauge("kv_blocks_total", "KV blocks in the pool."),
        counter("prefix_cache_queries", "Full prompt blocks looked up in the prefix cache."),
        counter("prefix_cache_hits", "Full prompt blocks found in the prefix cache."),
        counter("prefix_cache_partial_tokens", "Prompt tokens reused from the head of a cached block."),
        counter("num_preemptions", "Sequences preempted for lack of KV blocks."),
        counter("prompt_tokens", "Prompt tokens of requests that produced a first token."),
        counter("generation_tokens", "Generated tokens."),
        counter("spec_decode_num_drafts", "Speculative verifications: one per sequence and step with drafts."),
        counter("spec_decode_num_draft_tokens", "Draft tokens proposed and verified."),
        counter("spec_decode_num_accepted_tokens", "Draft tokens the target accepted."),
        Counter("tollgate:spec_decode_num_accepted_tokens_per_pos",
                "Draft tokens accepted, by position in the draft (0: the first).", (*_LABELS, "position"),
                registry=registry),
    )


# One set of families per registry (a registry refuses a second metric of the same name).
_families_by_registry: weakref.WeakKeyDictionary[CollectorRegistry, _Families] = weakref.WeakKeyDictionary()
_families_lock = threading.Lock()


def _families(registry: CollectorRegistry) -> _Families:
    with _families_lock:
        if registry not in _families_by_registry:
            _families_by_registry[registry] = _create(registry)
        return _families_by_registry[registry]


class EngineMetrics:
    def __init__(self, model_name: str, registry: CollectorRegistry = REGISTRY) -> None:
        if not model_name:
            raise ValueError("model_name must be non-empty")
        self.model_name = model_name
        f = _families(registry)
        self._m = {name: getattr(f, name).labels(model_name=model_name) for name in _Families.__slots__
                   if name not in _PER_POSITION}
        self._accepted_per_pos = f.spec_decode_num_accepted_tokens_per_pos
        self._last_queries = 0
        self._last_hits = 0
        self._last_partial = 0

    def record_step(self, out: SchedulerOutput, finished: list[Sequence], stats: SchedulerStats) -> None:
        """`finished`: the last sequence of each request that finished this step."""
        m = self._m
        m["num_requests_running"].set(stats.num_running)
        m["num_requests_waiting"].set(stats.num_waiting)
        m["kv_blocks_used"].set(stats.kv_blocks_used)
        m["kv_blocks_total"].set(stats.kv_blocks_total)
        m["prefix_cache_queries"].inc(stats.prefix_cache_queries - self._last_queries)
        m["prefix_cache_hits"].inc(stats.prefix_cache_hits - self._last_hits)
        m["prefix_cache_partial_tokens"].inc(stats.prefix_cache_partial_tokens - self._last_partial)
        self._last_queries, self._last_hits = stats.prefix_cache_queries, stats.prefix_cache_hits
        self._last_partial = stats.prefix_cache_partial_tokens
        if out.preempted:
            m["num_preemptions"].inc(len(out.preempted))
        for s in out.scheduled:
            if s.samples:
                self._record_token(s.seq, s.num_samples + s.num_accepted_drafts)
            if s.num_draft_tokens:
                self._record_drafts(s.num_draft_tokens, s.num_accepted_drafts)
        for seq in finished:
            self._record_finished(seq)

    def _record_token(self, seq: Sequence, num_tokens: int) -> None:
        self._m["generation_tokens"].inc(num_tokens)  # n at a parent's first sample: every completion's first
        if seq.num_output_tokens == 1 and seq.index == 0:  # once per request, however many completions
            self._m["prompt_tokens"].inc(seq.num_prompt_tokens)
            if seq.first_token_time is not None:  # set with its first token, which this is
                self._m["time_to_first_token"].observe(seq.first_token_time - seq.arrival_time)
            if seq.first_scheduled_time is not None:  # set when it was first scheduled, before that
                self._m["request_queue_time"].observe(seq.first_scheduled_time - seq.arrival_time)

    def _record_drafts(self, num_drafts: int, num_accepted: int) -> None:
        m = self._m
        m["spec_decode_num_drafts"].inc()
        m["spec_decode_num_draft_tokens"].inc(num_drafts)
        m["spec_decode_num_accepted_tokens"].inc(num_accepted)
        for position in range(num_accepted):  # accepted drafts are always a leading run
            self._accepted_per_pos.labels(model_name=self.model_name, position=str(position)).inc()

    def _record_finished(self, seq: Sequence) -> None:
        if seq.finished_time is None:
            return
        self._m["e2e_request_latency"].observe(seq.finished_time - seq.arrival_time)
        if seq.first_token_time is not None and seq.num_output_tokens > 1:
            gap = (seq.finished_time - seq.first_token_time) / (seq.num_output_tokens - 1)
            self._m["time_per_output_token"].observe(gap)
