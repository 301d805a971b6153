"""Requests in the pool, as a fluid, one tick at a time: a FIFO queue of arrival ticks (requests, output
tokens) in front of the serving replicas, which share the load evenly.

Service times (2 s at batch 1 to ~20 s at a full batch for the benchmark's outputs) are about one tick, so a
tick is treated as steady: if the pool can produce all the queued and arriving tokens within the tick, it
does, and each replica holds the batch n at which its throughput n / (a + b*n) equals its share of that
token rate (Little's law over the replica model); otherwise every replica runs a full batch (max_num_seqs)
and the rest waits, oldest first, for the next tick."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from benchmarks.autoscale.replica import ReplicaModel

EPS = 1e-9


@dataclass(slots=True)
class TickLoad:
    capacity: float  # serving replicas over the tick
    served: float  # requests that got into a batch in this tick
    batch: float  # requests per serving replica


class Load:
    def __init__(self, model: ReplicaModel):
        self.model = model
        self.queue: deque[list[float]] = deque()  # [requests, their output tokens], oldest first
        self.queued = 0.0
        self.queued_tokens = 0.0
        self.in_service = 0.0  # requests in batches, pool-wide, during the last tick

    @property
    def ongoing(self) -> float:
        """What Ray Serve's autoscaler counts: requests at replicas plus those queued for one."""
        return self.in_service + self.queued

    def step(self, capacity: float, arrivals: float, output_tokens: float, tick_s: float) -> TickLoad:
        if arrivals > 0:
            self.queue.append([float(arrivals), float(output_tokens)])
            self.queued += arrivals
            self.queued_tokens += output_tokens
        if capacity <= 0:
            self.in_service = 0.0
            return TickLoad(capacity=0.0, served=0.0, batch=0.0)
        full = self.model.max_num_seqs
        budget = capacity * self.model.throughput(full) * tick_s
        if self.queued_tokens <= budget:
            rate = self.queued_tokens / (capacity * tick_s)  # tokens/s each replica must produce
            batch = min(rate * self.model.step_a / (1 - rate * self.model.step_b), full)
        else:
            batch = full
        served = self._serve(budget)
        self.in_service = batch * capacity
        return TickLoad(capacity=capacity, served=served, batch=batch)

    def _serve(self, budget: float) -> float:
        served = 0.0
        while self.queue and budget > EPS:
            head = self.queue[0]
            if head[1] <= budget:
                self.queue.popleft()
                take, tokens = head
            else:  # part of this tick's requests, in proportion to the tokens there is room for
                tokens = budget
                take = head[0] * tokens / head[1]
                head[0] -= take
                head[1] -= tokens
            budget -= tokens
            served += take
            self.queued -= take
            self.queued_tokens -= tokens
        if not self.queue:
            self.queued = self.queued_tokens = 0.0
        return served
