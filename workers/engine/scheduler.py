"""Continuous batching: which sequences compute how many tokens this step.

There is no prefill phase or decode phase. Each sequence has `num_computed_tokens` and tokens
still to compute; a step gives running sequences their share of the token budget first (one
token for a decoding sequence, the next chunk for a long prompt), then admits waiting ones.
Chunked prefill, prefix reuse and preemption all fall out of that one loop.
"""
from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass

from workers.config import EngineConfig
from workers.engine.block_manager import BlockManager
from workers.engine.scheduler_output import ScheduledSequence, SchedulerOutput
from workers.engine.sequence import Sequence, SequenceStatus


@dataclass(slots=True)
class SchedulerStats:
    num_running: int
    num_waiting: int
    kv_blocks_used: int
    kv_blocks_total: int
    prefix_cache_queries: int  # cumulative, blocks
    prefix_cache_hits: int  # cumulative, blocks


class Scheduler:
    def __init__(self, config: EngineConfig, block_manager: BlockManager, *,
                 eos_token_ids: set[int], max_seq_len: int) -> None:
        if max_seq_len < 1:
            raise ValueError(f"max_seq_len must be >= 1, got {max_seq_len}")
        self.max_num_seqs = config.max_num_seqs
        self.max_num_batched_tokens = config.max_num_batched_tokens
        self.block_manager = block_manager
        self.eos_token_ids = set(eos_token_ids)
        self.max_seq_len = max_seq_len  # a sequence stops ("length") when it holds this many tokens
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []  # oldest admission first
        self._seqs: dict[str, Sequence] = {}
        # Waiting sequences per cache salt (the gateway's opaque tenant key). Written by the engine thread only;
        # AsyncEngine reads it from the event loop for admission (a dict lookup: no lock needed).
        self.waiting_by_salt: Counter[str | None] = Counter()

    def add(self, seq: Sequence) -> None:
        if seq.request_id in self._seqs:
            raise ValueError(f"request_id {seq.request_id!r} is already in flight")
        self._seqs[seq.request_id] = seq
        self.waiting.append(seq)
        self.waiting_by_salt[seq.cache_salt] += 1

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._seqs

    def request_ids(self) -> list[str]:
        return list(self._seqs)

    def has_unfinished(self) -> bool:
        return bool(self._seqs)

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        budget = self._schedule_running(out, self.max_num_batched_tokens)
        # After a preemption the pool is short: admitting newcomers would only thrash.
        if not out.preempted:
            self._schedule_waiting(out, budget)
        return out

    def update(self, out: SchedulerOutput, sampled: list[int | None]) -> list[Sequence]:
        """Advance what the runner computed, append sampled tokens; returns newly finished."""
        if len(sampled) != len(out.scheduled):
            raise RuntimeError(f"runner returned {len(sampled)} results for {len(out.scheduled)} sequences")
        finished = []
        for s, token in zip(out.scheduled, sampled):
            if self._advance(s, token):
                finished.append(s.seq)
        self._finish_all(finished)
        return finished

    def finish(self, seqs: list[Sequence], reason: str) -> list[Sequence]:
        """End sequences for a reason found outside the scheduler (stop strings); returns those
        that were still running. An already finished one only takes the new reason."""
        newly = [s for s in seqs if not s.is_finished]
        for seq in seqs:
            seq.finish_reason = reason
        self._finish_all(newly)
        return newly

    def abort(self, request_id: str) -> Sequence | None:
        seq = self._seqs.get(request_id)
        if seq is None:
            return None
        seq.finish_reason = "abort"
        self._finish_all([seq])
        return seq

    def stats(self) -> SchedulerStats:
        bm = self.block_manager
        return SchedulerStats(len(self.running), len(self.waiting), bm.num_used_blocks, bm.num_blocks,
                              bm.stats.queries, bm.stats.hits)

    def _schedule_running(self, out: SchedulerOutput, budget: int) -> int:
        i = 0
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            num_new = min(seq.num_tokens - seq.num_computed_tokens, budget)
            if not self._allocate_or_preempt(seq, num_new, out):
                break
            out.scheduled.append(ScheduledSequence(seq, num_new))
            budget -= num_new
            i += 1
        return budget

    def _allocate_or_preempt(self, seq: Sequence, num_new: int, out: SchedulerOutput) -> bool:
        """Free blocks by preempting the newest running sequences; False if seq itself went."""
        while not self.block_manager.allocate_slots(seq, num_new):
            victim = self.running.pop()
            self._preempt(victim)
            out.preempted.append(victim)
            if victim is seq:
                return False
        return True

    def _schedule_waiting(self, out: SchedulerOutput, budget: int) -> None:
        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
            seq = self.waiting[0]
            cached = self.block_manager.find_cached_prefix(seq)
            num_cached = len(cached) * self.block_manager.block_size
            num_new = min(seq.num_tokens - num_cached, budget)
            if not self.block_manager.allocate_slots(seq, num_new, cached):
                break
            self.waiting.popleft()
            self._count_waiting(seq, -1)
            self._admit(seq, num_cached)
            out.scheduled.append(ScheduledSequence(seq, num_new))
            budget -= num_new

    def _admit(self, seq: Sequence, num_cached: int) -> None:
        seq.num_computed_tokens = num_cached
        seq.status = SequenceStatus.RUNNING
        if seq.first_scheduled_time is None:
            seq.first_scheduled_time = time.monotonic()
            seq.num_cached_tokens = num_cached
        self.running.append(seq)

    def _preempt(self, seq: Sequence) -> None:
        # Recompute later from scratch (its full blocks likely stay cached); generated tokens stay.
        self.block_manager.free(seq)
        seq.num_computed_tokens = 0
        seq.status = SequenceStatus.WAITING
        self.waiting.appendleft(seq)
        self.waiting_by_salt[seq.cache_salt] += 1

    def _advance(self, s: ScheduledSequence, token: int | None) -> bool:
        seq = s.seq
        seq.num_computed_tokens += s.num_new_tokens
        self.block_manager.cache_blocks(seq)
        if not s.samples:
            return False
        if token is None:
            raise RuntimeError(f"runner sampled nothing for {seq.request_id!r} at the end of its tokens")
        seq.token_ids.append(token)
        if seq.first_token_time is None:
            seq.first_token_time = time.monotonic()
        seq.finish_reason = self._stop_reason(seq, token)
        return seq.finish_reason is not None

    def _stop_reason(self, seq: Sequence, token: int) -> str | None:
        if token in seq.params.stop_token_ids:
            return "stop"
        if token in self.eos_token_ids and not seq.params.ignore_eos:
            return "stop"
        if seq.num_output_tokens >= seq.params.max_tokens or seq.num_tokens >= self.max_seq_len:
            return "length"
        return None

    def _finish_all(self, seqs: list[Sequence]) -> None:
        if not seqs:
            return
        now = time.monotonic()
        for seq in seqs:
            self.block_manager.free(seq)
            seq.status = SequenceStatus.FINISHED
            seq.finished_time = now
            del self._seqs[seq.request_id]
        gone = {id(s) for s in seqs}
        self.running = [s for s in self.running if id(s) not in gone]
        if any(id(s) in gone for s in self.waiting):
            for s in self.waiting:
                if id(s) in gone:
                    self._count_waiting(s, -1)
            self.waiting = deque(s for s in self.waiting if id(s) not in gone)

    def _count_waiting(self, seq: Sequence, delta: int) -> None:
        left = self.waiting_by_salt[seq.cache_salt] + delta
        if left:
            self.waiting_by_salt[seq.cache_salt] = left
        else:
            del self.waiting_by_salt[seq.cache_salt]  # bounded by the salts actually waiting
