"""Continuous batching: which sequences compute how many tokens this step.

There is no prefill phase or decode phase. Each sequence has `num_computed_tokens` and tokens
still to compute; a step gives running sequences their share of the token budget first (one
token for a decoding sequence, the next chunk for a long prompt), then admits waiting ones.
Chunked prefill, prefix reuse and preemption all fall out of that one loop.

A request with n > 1 is one sequence (the parent) until its first sample, so its prompt is computed
once; that step draws n tokens from the parent's logits and forks n - 1 children that share the
parent's blocks. From then on each completion is an ordinary sequence; the request finishes when
its last sequence does.
"""
from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

from workers.config import EngineConfig
from workers.engine.block_manager import BlockManager, PartialHit
from workers.engine.scheduler_output import ModelRunnerOutput, ScheduledSequence, SchedulerOutput
from workers.engine.scheduling_policy import make_policy
from workers.engine.sequence import Sequence, SequenceStatus
from workers.engine.spec_decode.planner import DraftPlanner
from workers.outputs import TokenLogprob
from workers.speculative_config import SpeculativeConfig


@dataclass(slots=True)
class SchedulerStats:
    num_running: int
    num_waiting: int
    kv_blocks_used: int
    kv_blocks_total: int
    prefix_cache_queries: int  # cumulative, blocks
    prefix_cache_hits: int  # cumulative, blocks
    prefix_cache_partial_tokens: int = 0  # cumulative, tokens reused from the head of a cached block


class Scheduler:
    def __init__(self, config: EngineConfig, block_manager: BlockManager, *,
                 eos_token_ids: set[int], max_seq_len: int, clock: Callable[[], float] = time.monotonic) -> None:
        if max_seq_len < 1:
            raise ValueError(f"max_seq_len must be >= 1, got {max_seq_len}")
        self.max_num_seqs = config.max_num_seqs
        self.max_num_batched_tokens = config.max_num_batched_tokens
        self.background_priority = config.background_priority
        self.block_manager = block_manager
        self.eos_token_ids = set(eos_token_ids)
        self.max_seq_len = max_seq_len  # a sequence stops ("length") when it holds this many tokens
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []  # oldest admission first
        self._requests: dict[str, list[Sequence]] = {}  # request id -> its unfinished sequences
        # Waiting sequences per cache salt (the gateway's opaque tenant key). Written by the engine thread only;
        # AsyncEngine reads it from the event loop for admission (a dict lookup: no lock needed).
        self.waiting_by_salt: Counter[str | None] = Counter()
        # Who is admitted next, preempted first, and may displace whom (priority, fair share, arrival).
        self.policy = make_policy(config.scheduling_policy, prefill_weight=config.fair_prefill_weight,
                                  decode_weight=config.fair_decode_weight, preempt_margin=config.fair_preempt_margin,
                                  clock=clock)
        # Speculative decoding: which decoding sequences verify drafts this step (None: off).
        self.drafts: DraftPlanner | None = None
        if isinstance(config.speculative, SpeculativeConfig):
            self.drafts = DraftPlanner(config.speculative, block_manager, max_seq_len=max_seq_len)

    def add(self, seq: Sequence) -> None:
        if seq.request_id in self._requests:
            raise ValueError(f"request_id {seq.request_id!r} is already in flight")
        if seq.params.n > self.max_num_seqs:
            raise ValueError(f"n ({seq.params.n}) exceeds max_num_seqs ({self.max_num_seqs})")
        self._requests[seq.request_id] = [seq]
        self.policy.arrive(seq)
        self.waiting.append(seq)
        self.waiting_by_salt[seq.cache_salt] += 1

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._requests

    def request_ids(self) -> list[str]:
        return list(self._requests)

    def has_unfinished(self) -> bool:
        return bool(self._requests)

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        self.running = self.policy.order(self.running)  # reserved work first: a short budget reaches it first
        self._displace(out)
        # While anything else is running or waiting, background sequences sit this step out (blocks kept).
        everyone = (*self.running, *self.waiting)
        only_foreground = any(not self._background(s) for s in everyone)
        self._fill(out, only_foreground)
        if only_foreground and not out.scheduled and any(self._background(s) for s in everyone):
            self._fill(out, False)  # nothing else could run this step (no slots or blocks): never stall
        out.blocks_to_copy = self.block_manager.take_copies()
        return out

    def update(self, out: SchedulerOutput, result: ModelRunnerOutput) -> list[Sequence]:
        """Advance what the runner computed, append sampled tokens (forking the children of an n > 1
        request at its first sample, into out.forked); returns the sequences newly finished."""
        if len(result.sampled) != len(out.scheduled):
            raise RuntimeError(f"runner returned {len(result.sampled)} results for {len(out.scheduled)} sequences")
        logprobs = result.logprobs
        finished = []
        for i, s in enumerate(out.scheduled):
            finished += self._advance(s, result.sampled[i], logprobs[i] if logprobs is not None else None, out)
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

    def abort(self, request_id: str) -> list[Sequence]:
        """End every unfinished sequence of the request and free its blocks; returns them ([] if unknown)."""
        seqs = list(self._requests.get(request_id, ()))
        for seq in seqs:
            seq.finish_reason = "abort"
        self._finish_all(seqs)
        return seqs

    def stats(self) -> SchedulerStats:
        bm = self.block_manager
        return SchedulerStats(len(self.running), len(self.waiting), bm.num_used_blocks, bm.num_blocks,
                              bm.stats.queries, bm.stats.hits, bm.stats.partial_tokens)

    def _fill(self, out: SchedulerOutput, only_foreground: bool) -> None:
        displaced = len(out.preempted)
        budget = self._schedule_running(out, self.max_num_batched_tokens, only_foreground)
        # After a preemption for blocks the pool is short: admitting newcomers would only thrash.
        if len(out.preempted) == displaced:
            self._schedule_waiting(out, budget, only_foreground)

    def _background(self, seq: Sequence) -> bool:
        return self.background_priority is not None and seq.schedule.priority >= self.background_priority

    def _schedule_running(self, out: SchedulerOutput, budget: int, only_foreground: bool = False) -> int:
        if self.drafts is not None:
            self.drafts.begin_step(self.running)
        i = 0
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            if only_foreground and self._background(seq):
                i += 1
                continue
            num_new = min(seq.num_tokens - seq.num_computed_tokens, budget)
            # Drafts are optional: they take only free blocks, never preempt; without them, the usual path.
            s = self.drafts.schedule(seq, budget) if self.drafts is not None else None
            if s is None:
                if not self._allocate_or_preempt(seq, i, num_new, out):
                    break
                s = ScheduledSequence(seq, num_new)
            out.scheduled.append(s)
            budget -= s.num_new_tokens
            i += 1
        return budget

    def _allocate_or_preempt(self, seq: Sequence, i: int, num_new: int, out: SchedulerOutput) -> bool:
        """Free blocks by preempting the policy's victims among running[i:] (seq = running[i] and those not
        yet scheduled this step); False if seq itself went."""
        while not self.block_manager.allocate_slots(seq, num_new):
            victim = self.policy.victim(self.running[i:])
            self.running.remove(victim)
            self._preempt(victim)
            out.preempted.append(victim)
            if victim is seq:
                return False
        return True

    def _schedule_waiting(self, out: SchedulerOutput, budget: int, only_foreground: bool = False) -> None:
        if not self.waiting:
            return
        # A parent yet to fork holds batch slots for its n completions.
        slots = len(self.running) + sum(s.params.n - 1 for s in self.running if s.awaiting_fork)
        while self.waiting and budget > 0:
            candidates = [s for s in self.waiting if not self._background(s)] if only_foreground else self.waiting
            if not candidates:
                break
            seq = self.policy.next_waiting(candidates)
            need = seq.params.n if seq.awaiting_fork else 1
            if slots + need > self.max_num_seqs:
                break
            cached, partial, num_cached = self._cached_prefix(seq)
            num_new = min(seq.num_tokens - num_cached, budget)
            if not self.block_manager.allocate_slots(seq, num_new, cached, partial):
                break
            self.waiting.remove(seq)
            self._count_waiting(seq, -1)
            self._admit(seq, num_cached)
            out.scheduled.append(ScheduledSequence(seq, num_new))
            budget -= num_new
            slots += need

    def _displace(self, out: SchedulerOutput) -> None:
        """With the batch full, preempt running sequences the policy ranks below the best waiting one (a
        lower priority, or a tenant served far more), so it is admitted this step."""
        while self.waiting and self.running:
            slots = len(self.running) + sum(s.params.n - 1 for s in self.running if s.awaiting_fork)
            candidate = self.policy.next_waiting(self.waiting)
            need = candidate.params.n if candidate.awaiting_fork else 1
            full = slots + need > self.max_num_seqs or not self._fits(candidate)
            if not full:
                return
            victim = self.policy.victim(self.running)
            if not self.policy.displaces(candidate, victim):
                return
            self.running.remove(victim)
            self._preempt(victim)
            out.preempted.append(victim)

    def _fits(self, seq: Sequence) -> bool:
        """The pool holds seq's first chunk (after its cached prefix) now."""
        cached, partial, num_cached = self._cached_prefix(seq)
        num_new = min(seq.num_tokens - num_cached, self.max_num_batched_tokens)
        return self.block_manager.can_allocate_slots(seq, num_new, cached, partial=partial)

    def _cached_prefix(self, seq: Sequence) -> tuple[list[int], PartialHit | None, int]:
        """seq's cached full blocks, the head of a cached block after them, and the prompt tokens both hold."""
        cached = self.block_manager.find_cached_prefix(seq)
        partial = self.block_manager.find_partial(seq, cached)
        return cached, partial, len(cached) * self.block_manager.block_size + (partial.num_tokens if partial else 0)

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

    def _advance(self, s: ScheduledSequence, tokens: list[int], logprobs: list[TokenLogprob | None] | None,
                 out: SchedulerOutput) -> list[Sequence]:
        """Returns the sequences (s.seq and any children forked now) that this step finished."""
        seq = s.seq
        prefill = max(0, min(s.num_new_tokens, seq.num_prompt_tokens - seq.num_computed_tokens))
        self.policy.charge(seq, prefill_tokens=prefill, decode_tokens=len(tokens))
        if s.num_draft_tokens:
            return self._advance_drafted(s, tokens, logprobs)
        seq.num_computed_tokens += s.num_new_tokens
        self.block_manager.cache_blocks(seq)
        if len(tokens) != s.num_samples:
            raise RuntimeError(f"runner sampled {len(tokens)} tokens for {seq.request_id!r}, "
                               f"expected {s.num_samples}")
        if not tokens:
            return []
        family = [seq] if len(tokens) == 1 else [seq, *self._fork(seq, len(tokens) - 1, out)]
        finished = []
        for j, (member, token) in enumerate(zip(family, tokens)):
            if self._append(member, token, logprobs[j] if logprobs is not None else None):
                finished.append(member)
        return finished

    def _advance_drafted(self, s: ScheduledSequence, tokens: list[int],
                         logprobs: list[TokenLogprob | None] | None) -> list[Sequence]:
        """A row with drafts: tokens are the drafts the target accepted, then one of its own, all s.seq's.
        Appended until one ends the sequence; then the rejected drafts are rolled back."""
        seq = s.seq
        if not 1 <= len(tokens) <= 1 + s.num_draft_tokens:
            raise RuntimeError(f"runner kept {len(tokens)} tokens for {seq.request_id!r} with "
                               f"{s.num_draft_tokens} drafts")
        kept = 0
        for j, token in enumerate(tokens):
            kept += 1
            if self._append(seq, token, logprobs[j] if logprobs is not None else None):
                break
        if self.drafts is not None:  # a row with drafts: speculative decoding is on
            self.drafts.roll_back(s, kept, len(tokens) - 1)
        self.block_manager.cache_blocks(seq)
        return [seq] if seq.finish_reason is not None else []

    def _fork(self, parent: Sequence, num_children: int, out: SchedulerOutput) -> list[Sequence]:
        """Children 1..num_children of parent's request, sharing its blocks (the prompt's KV, computed once)."""
        children = []
        for index in range(1, num_children + 1):
            child = parent.fork(index)
            self.block_manager.fork(parent, child)
            children.append(child)
        self.running += children  # the newest: preempted first
        for child in children:
            self.policy.arrive(child)
        self._requests[parent.request_id] += children
        out.forked += children
        return children

    def _append(self, seq: Sequence, token: int, logprob: TokenLogprob | None) -> bool:
        seq.token_ids.append(token)
        if logprob is not None:
            seq.cumulative_logprob += logprob.logprob
            if seq.params.logprobs is not None:
                seq.output_logprobs.append(logprob)
        if seq.first_token_time is None:
            seq.first_token_time = time.monotonic()
        seq.finish_reason = self._stop_reason(seq, token)
        return seq.finish_reason is not None

    def _stop_reason(self, seq: Sequence, token: int) -> str | None:
        params = seq.params
        # Within min_tokens no stop token ends the output (the runner masks them; this guards the rest).
        if seq.num_output_tokens > params.min_tokens:
            if token in params.stop_token_ids:
                return "stop"
            if token in self.eos_token_ids and not params.ignore_eos:
                return "stop"
        if seq.num_output_tokens >= params.max_tokens or seq.num_tokens >= self.max_seq_len:
            return "length"
        return None

    def _finish_all(self, seqs: list[Sequence]) -> None:
        if not seqs:
            return
        now = time.monotonic()
        for seq in seqs:
            self.block_manager.free(seq)
            self.policy.leave(seq)
            seq.status = SequenceStatus.FINISHED
            seq.finished_time = now
            live = self._requests[seq.request_id]
            live.remove(seq)
            if not live:
                del self._requests[seq.request_id]
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
