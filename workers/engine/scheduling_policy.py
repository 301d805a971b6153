"""Who is admitted next, who is preempted first, and who may displace whom: the scheduler's ordering, as a
small policy object chosen once by EngineConfig.scheduling_policy (a registry, not a switch in the loop).

fcfs      arrival order; preempt the newest (the engine's historical behaviour)
priority  lower `priority` first (vLLM's --scheduling-policy priority), then arrival; a waiting request
          displaces a running one of strictly lower priority when the batch is full
fair      priority, then per-tenant fair share (VTC, fair_share.py), then arrival; a waiting request also
          displaces a running one of its priority whose tenant has been served `preempt_margin` weighted
          tokens more than its own, so one tenant's flood cannot hold the batch while another waits

Every policy is wrapped in `Reserved` (reservations.py): the work of a tenant whose reserved-throughput bucket
holds tokens goes ahead of all other work (admitted first, run first within a step, never displaced by
best-effort work, and it displaces best-effort work from a full batch); short of blocks, best-effort work is
preempted first; everything else is ordered by the policy it wraps. Without reservations it changes nothing.

A sequence's order is its key: smaller runs earlier, larger is preempted first. Within one tenant and one
priority every policy is FCFS, so a single-tenant engine schedules exactly as before.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol

from workers.engine.fair_share import FairShare
from workers.engine.reservations import Reservations
from workers.engine.sequence import Sequence


class SchedulingPolicy(Protocol):
    def arrive(self, seq: Sequence) -> None: ...
    def leave(self, seq: Sequence) -> None: ...
    def charge(self, seq: Sequence, *, prefill_tokens: int, decode_tokens: int) -> None: ...
    def next_waiting(self, waiting: Iterable[Sequence]) -> Sequence: ...
    def victim(self, running: list[Sequence]) -> Sequence: ...
    def displaces(self, candidate: Sequence, victim: Sequence) -> bool: ...
    def order(self, running: list[Sequence]) -> list[Sequence]: ...


class Fcfs:
    """Arrival order. Stateless."""

    def arrive(self, seq: Sequence) -> None:
        pass

    def leave(self, seq: Sequence) -> None:
        pass

    def charge(self, seq: Sequence, *, prefill_tokens: int, decode_tokens: int) -> None:
        pass

    def next_waiting(self, waiting: Iterable[Sequence]) -> Sequence:
        return next(iter(waiting))

    def victim(self, running: list[Sequence]) -> Sequence:
        return running[-1]  # the newest admission

    def displaces(self, candidate: Sequence, victim: Sequence) -> bool:
        return False

    def order(self, running: list[Sequence]) -> list[Sequence]:
        """Running sequences in the order a step gives them its token budget."""
        return running


class Priority(Fcfs):
    def key(self, seq: Sequence) -> tuple[float, ...]:
        return seq.schedule.priority, seq.arrival_time

    def next_waiting(self, waiting: Iterable[Sequence]) -> Sequence:
        return min(waiting, key=self.key)

    def victim(self, running: list[Sequence]) -> Sequence:
        return max(running, key=self.key)

    def displaces(self, candidate: Sequence, victim: Sequence) -> bool:
        return candidate.schedule.priority < victim.schedule.priority


class Fair(Priority):
    def __init__(self, share: FairShare, preempt_margin: float) -> None:
        self.share, self.preempt_margin = share, preempt_margin

    def arrive(self, seq: Sequence) -> None:
        self.share.arrive(seq.schedule.tenant)

    def leave(self, seq: Sequence) -> None:
        self.share.leave(seq.schedule.tenant)

    def charge(self, seq: Sequence, *, prefill_tokens: int, decode_tokens: int) -> None:
        self.share.charge(seq.schedule.tenant, seq.schedule.weight, prefill_tokens=prefill_tokens,
                          decode_tokens=decode_tokens)

    def key(self, seq: Sequence) -> tuple[float, ...]:
        return seq.schedule.priority, self.share.served(seq.schedule.tenant), seq.arrival_time

    def displaces(self, candidate: Sequence, victim: Sequence) -> bool:
        if candidate.schedule.priority != victim.schedule.priority:
            return candidate.schedule.priority < victim.schedule.priority
        ours, theirs = candidate.schedule.tenant, victim.schedule.tenant
        return ours != theirs and self.share.served(theirs) - self.share.served(ours) > self.preempt_margin


class Reserved:
    """Entitled reserved work ahead of `inner`'s order; `inner` orders each side. Tokens a reservation covers
    are counted on the sequence (num_reserved_tokens) and not charged to `inner`'s fair share: they were paid
    for. What a reservation does not cover is best-effort work, charged to `inner` as any other."""

    def __init__(self, inner: SchedulingPolicy, reservations: Reservations) -> None:
        self.inner, self.reservations = inner, reservations

    def ahead(self, seq: Sequence) -> bool:
        return self.reservations.entitled(seq.schedule.tenant, seq.schedule.reserved_tokens_per_s)

    def arrive(self, seq: Sequence) -> None:
        self.reservations.arrive(seq.schedule.tenant, seq.schedule.reserved_tokens_per_s)
        self.inner.arrive(seq)

    def leave(self, seq: Sequence) -> None:
        self.reservations.leave(seq.schedule.tenant, seq.schedule.reserved_tokens_per_s)
        self.inner.leave(seq)

    def charge(self, seq: Sequence, *, prefill_tokens: int, decode_tokens: int) -> None:
        rate = seq.schedule.reserved_tokens_per_s
        if rate > 0 and self.reservations.entitled(seq.schedule.tenant, rate):
            covered = self.reservations.take(seq.schedule.tenant, rate, decode_tokens)
            seq.num_reserved_tokens += covered
            prefill_tokens, decode_tokens = 0, decode_tokens - covered
        self.inner.charge(seq, prefill_tokens=prefill_tokens, decode_tokens=decode_tokens)

    def next_waiting(self, waiting: Iterable[Sequence]) -> Sequence:
        waiting = list(waiting)
        return self.inner.next_waiting([s for s in waiting if self.ahead(s)] or waiting)

    def victim(self, running: list[Sequence]) -> Sequence:
        # Short of blocks, best-effort work goes first, then reserved work past its rate, entitled work last.
        unreserved = [s for s in running if s.schedule.reserved_tokens_per_s <= 0]
        return self.inner.victim(unreserved or [s for s in running if not self.ahead(s)] or running)

    def displaces(self, candidate: Sequence, victim: Sequence) -> bool:
        # Past its rate a reserved tenant's work is best-effort: the inner policy may displace it (fair share).
        ours, theirs = self.ahead(candidate), self.ahead(victim)
        return ours if ours != theirs else self.inner.displaces(candidate, victim)

    def order(self, running: list[Sequence]) -> list[Sequence]:
        first = [s for s in running if self.ahead(s)]
        if not first:
            return self.inner.order(running)
        return self.inner.order(first) + self.inner.order([s for s in running if not self.ahead(s)])


def make_policy(name: str, *, prefill_weight: float = 1.0, decode_weight: float = 2.0,
                preempt_margin: float = 64.0, clock: Callable[[], float] = time.monotonic) -> SchedulingPolicy:
    makers: dict[str, Callable[[], SchedulingPolicy]] = {
        "fcfs": Fcfs,
        "priority": Priority,
        "fair": lambda: Fair(FairShare(prefill_weight=prefill_weight, decode_weight=decode_weight), preempt_margin),
    }
    if name not in makers:
        raise ValueError(f"scheduling_policy must be one of {sorted(makers)}, got {name!r}")
    return Reserved(makers[name](), Reservations(clock=clock))
