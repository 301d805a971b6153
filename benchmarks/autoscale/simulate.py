"""One policy over the traffic, tick by tick: the policy decides, the pool scales, the load is served."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.autoscale.load import Load
from benchmarks.autoscale.pool import Pool, StartTimes
from benchmarks.autoscale.replica import ReplicaModel
from benchmarks.autoscale.traffic import Traffic


@dataclass(slots=True)
class Run:
    tick_s: float
    replicas: np.ndarray  # [ticks] replicas paid for (loading, standby, serving)
    serving: np.ndarray  # [ticks] serving capacity in replicas (a replica that started mid-tick counts in part)
    served: np.ndarray  # [ticks] requests that got into a batch
    service_ttft: np.ndarray  # [ticks] an admitted request's TTFT once in a batch (prefill + the step it waits)


def simulate(policy, traffic: Traffic, model: ReplicaModel, times: StartTimes) -> Run:
    tick = traffic.tick_s
    serving, standby = policy.initial()
    pool = Pool(times, serving=serving, standby=standby)  # Ray starts initial_replicas before traffic
    load = Load(model)
    n = traffic.ticks
    replicas, capacity, served, service_ttft = ([0.0] * n for _ in range(4))
    mean_prompt = np.divide(traffic.prompt_tokens, traffic.arrivals, out=np.zeros(n), where=traffic.arrivals > 0)
    # Python floats: arithmetic on numpy scalars would be most of the loop's time.
    arrivals, output_tokens, prompt = (a.tolist() for a in (traffic.arrivals, traffic.output_tokens, mean_prompt))
    for i in range(n):
        now = i * tick
        d = policy.decide(now, load.ongoing)
        pool.scale(d.at, d.serving, d.standby)
        pool.advance(now, tick)
        step = load.step(pool.capacity(now, tick), arrivals[i], output_tokens[i], tick)
        replicas[i], capacity[i], served[i] = pool.size, step.capacity, step.served
        service_ttft[i] = model.ttft_s(step.batch, prompt[i])
    return Run(tick_s=tick, replicas=np.array(replicas), serving=np.array(capacity), served=np.array(served),
               service_ttft=np.array(service_ttft))
