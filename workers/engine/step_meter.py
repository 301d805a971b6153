"""Metered worker time: each engine step's wall time shared among the requests computed in it.

A step's time (the runner's execute: draft proposals, forward pass, sampling) is split among its
scheduled rows by weighted tokens: a prefill token weighs 1, a decode token (one query over its
whole context, or a draft verified the same way) weighs `decode_weight`. A request's share, summed
over its n completions and every step it was in, is its `engine_ms`: what MaaS economics bills the
hardware for. Nothing is lost or made up: the shares of one step add up to its time, so the
requests' engine_ms add up to `metered_ms`, the engine's busy time. Scheduling, detokenizing and
idle waits are not metered (they are the idle part of a replica's cost).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from workers.engine.scheduler_output import ScheduledSequence, SchedulerOutput


@dataclass(frozen=True, slots=True)
class RowWork:
    """What one scheduled row computed in a step."""

    request_id: str
    prefill_tokens: int
    decode_tokens: int


def row_work(s: ScheduledSequence) -> RowWork:
    """A decode row computes one known token (plus any drafts), each query over its full context,
    exactly as ModelRunner.prepare_rows classifies it; every other row is a prefill chunk."""
    decode = s.num_new_tokens == 1 or (s.samples and s.num_new_tokens == 1 + s.num_draft_tokens)
    n = s.num_new_tokens
    return RowWork(s.seq.request_id, 0 if decode else n, n if decode else 0)


def split_step(elapsed_ms: float, rows: list[RowWork], decode_weight: float) -> dict[str, float]:
    """Each request's share of a step that took `elapsed_ms`, by weighted tokens. The shares add up
    to elapsed_ms (the last request takes what rounding left); requests with zero weight (every row
    decode at decode_weight 0) share the step equally."""
    weights: dict[str, float] = {}
    for r in rows:
        weights[r.request_id] = weights.get(r.request_id, 0.0) + r.prefill_tokens + decode_weight * r.decode_tokens
    if not weights:
        return {}
    total = sum(weights.values())
    if total <= 0:
        weights, total = dict.fromkeys(weights, 1.0), float(len(weights))
    shares, given = {}, 0.0
    *head, last = weights
    for rid in head:
        shares[rid] = elapsed_ms * weights[rid] / total
        given += shares[rid]
    shares[last] = elapsed_ms - given
    return shares


class StepMeter:
    """Per-request engine milliseconds, accumulated step by step (the engine's thread only)."""

    def __init__(self, decode_weight: float, clock: Callable[[], float] = time.perf_counter) -> None:
        if decode_weight < 0:
            raise ValueError(f"decode_weight must be >= 0, got {decode_weight}")
        self.decode_weight = decode_weight
        self._clock = clock
        self._ms: dict[str, float] = {}
        self.metered_ms = 0.0  # every step's time since the engine started: the sum of all shares

    @contextmanager
    def step(self, out: SchedulerOutput) -> Iterator[None]:
        """Time the body (the runner's execute) and charge it to the requests scheduled in `out`.
        A step that raises is not charged: the engine fails every request anyway."""
        start = self._clock()
        yield
        self.charge(out, (self._clock() - start) * 1000.0)

    def charge(self, out: SchedulerOutput, elapsed_ms: float) -> None:
        for rid, ms in split_step(elapsed_ms, [row_work(s) for s in out.scheduled], self.decode_weight).items():
            self._ms[rid] = self._ms.get(rid, 0.0) + ms
        self.metered_ms += elapsed_ms

    def total(self, request_id: str) -> float:
        """The request's engine milliseconds so far (0 before its first step)."""
        return self._ms.get(request_id, 0.0)

    def release(self, request_id: str) -> float:
        """Forget a finished or aborted request; returns its total."""
        return self._ms.pop(request_id, 0.0)
