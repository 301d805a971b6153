"""Who is admitted next, who is preempted first, and who may displace whom: the scheduler's ordering, as a
small policy object chosen once by EngineConfig.scheduling_policy (a registry, not a switch in the loop).

fcfs      arrival order; preempt the newest (the engine's historical behaviour)
priority  lower `priority` first (vLLM's --scheduling-policy priority), then arrival; a waiting request
          displaces a running one of strictly lower priority when the batch is full
fair      priority, then per-tenant fair share (VTC, fair_share.py), then arrival; a waiting request also
          displaces a running one of its priority whose tenant has been served `preempt_margin` weighted
          tokens more than its own, so one tenant's flood cannot hold the batch while another waits

A sequence's order is its key: smaller runs earlier, larger is preempted first. Within one tenant and one
priority every policy is FCFS, so a single-tenant engine schedules exactly as before.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from workers.engine.fair_share import FairShare
from workers.engine.sequence import Sequence


class SchedulingPolicy(Protocol):
    def arrive(self, seq: Sequence) -> None: ...
    def leave(self, seq: Sequence) -> None: ...
    def charge(self, seq: Sequence, *, prefill_tokens: int, decode_tokens: int) -> None: ...
    def next_waiting(self, waiting: Iterable[Sequence]) -> Sequence: ...
    def victim(self, running: list[Sequence]) -> Sequence: ...
    def displaces(self, candidate: Sequence, victim: Sequence) -> bool: ...


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


class Priority(Fcfs):
    def key(self, seq: Sequence) -> tuple:
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
        self.share.charge(seq.schedule.tenant, seq.schedule.weight, prefill_tokens=prefill_tokens, decode_tokens=decode_tokens)

    def key(self, seq: Sequence) -> tuple:
        return seq.schedule.priority, self.share.served(seq.schedule.tenant), seq.arrival_time

    def displaces(self, candidate: Sequence, victim: Sequence) -> bool:
        if candidate.schedule.priority != victim.schedule.priority:
            return candidate.schedule.priority < victim.schedule.priority
        ours, theirs = candidate.schedule.tenant, victim.schedule.tenant
        return ours != theirs and self.share.served(theirs) - self.share.served(ours) > self.preempt_margin


def make_policy(name: str, *, prefill_weight: float = 1.0, decode_weight: float = 2.0,
                preempt_margin: float = 64.0) -> SchedulingPolicy:
    makers = {
        "fcfs": Fcfs,
        "priority": Priority,
        "fair": lambda: Fair(FairShare(prefill_weight=prefill_weight, decode_weight=decode_weight), preempt_margin),
    }
    if name not in makers:
        raise ValueError(f"scheduling_policy must be one of {sorted(makers)}, got {name!r}")
    return makers[name]()
