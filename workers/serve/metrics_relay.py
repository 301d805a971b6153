"""The engines' metrics, from every Serve replica to whoever scrapes the gateway.

Each replica process has its own Prometheus registry; Ray Serve's handles reach one replica per call, so a
gateway cannot ask them all. Instead each replica pushes a snapshot of its `tollgate:` engine series to one
named Ray actor, the hub, every few seconds; the gateway reads the hub and merges:

- counters and histograms are summed over replicas, per label set (per version: `model_name`), so
  `tollgate:generation_tokens_total{model_name="m@v"}` is the version's total;
- gauges (running and waiting requests, KV blocks) stay per replica, with a `replica` label added: a sum of
  KV use across replicas would describe no replica.

A replica that stops (or stops reporting for `ttl_s`) is retired: its gauges go, its counter and histogram
values are kept in the hub's retired sums, so totals never go backwards while the hub lives.

Samples travel as plain tuples: (family, type, help, sample name, ((label, value), ...), value)."""
from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import ray
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric

log = logging.getLogger(__name__)

HUB_NAME = "tollgate-metrics-hub"
HUB_NAMESPACE = "tollgate"
PREFIX = "tollgate:"
RETIRED = "retired"  # the hub's pseudo-replica holding stopped replicas' counter and histogram sums
_SUMMED = ("counter", "histogram")

Sample = tuple[str, str, str, str, tuple[tuple[str, str], ...], float]


def snapshot(registry: CollectorRegistry, prefix: str = PREFIX) -> list[Sample]:
    """The registry's series whose family name starts with prefix (creation timestamps left out)."""
    out = []
    for family in registry.collect():
        if not family.name.startswith(prefix):
            continue
        for s in family.samples:
            if s.name.endswith("_created"):
                continue
            out.append((family.name, family.type, family.documentation, s.name, tuple(sorted(s.labels.items())),
                        float(s.value)))
    return out


def merge(by_replica: dict[str, list[Sample]]) -> list[Metric]:
    """Metric families for a scrape: counters and histograms summed over replicas, gauges per replica."""
    families: dict[str, Metric] = {}
    sums: dict[tuple[str, str, tuple], float] = defaultdict(float)
    for replica, samples in sorted(by_replica.items()):
        for family, kind, doc, name, labels, value in samples:
            if family not in families:
                families[family] = Metric(family, doc, kind)
            if kind in _SUMMED:
                sums[(family, name, labels)] += value
            elif replica != RETIRED:
                families[family].add_sample(name, dict(labels) | {"replica": replica}, value)
    for (family, name, labels), value in sums.items():
        families[family].add_sample(name, dict(labels), value)
    return [f for f in families.values() if f.samples]


class Hub:
    """Latest snapshot per replica; replicas silent for ttl_s are retired. Runs as the MetricsHub actor."""

    def __init__(self, ttl_s: float = 30.0) -> None:
        self._ttl_s = ttl_s
        self._latest: dict[str, tuple[float, list[Sample]]] = {}
        self._retired: dict[tuple, float] = defaultdict(float)  # (family, type, help, name, labels) -> sum

    def put(self, replica: str, samples: list[Sample]) -> None:
        self._latest[replica] = (time.monotonic(), samples)

    def retire(self, replica: str, samples: list[Sample] | None = None) -> None:
        """replica stops: fold its last counters and histograms (or `samples`, its final ones) into the sums."""
        _, last = self._latest.pop(replica, (0.0, []))
        for family, kind, doc, name, labels, value in samples if samples is not None else last:
            if kind in _SUMMED:
                self._retired[(family, kind, doc, name, labels)] += value

    def collect(self) -> dict[str, list[Sample]]:
        now = time.monotonic()
        for replica in [r for r, (at, _) in self._latest.items() if now - at > self._ttl_s]:
            self.retire(replica)
        out = {replica: samples for replica, (_, samples) in self._latest.items()}
        if self._retired:
            out[RETIRED] = [(*key, value) for key, value in self._retired.items()]
        return out


MetricsHub = ray.remote(num_cpus=0)(Hub)


def hub(ttl_s: float = 30.0):
    """The cluster's hub actor, created by the first caller (detached: it outlives the replica that made it)."""
    return MetricsHub.options(name=HUB_NAME, namespace=HUB_NAMESPACE, get_if_exists=True,
                              lifetime="detached").remote(ttl_s)


class MetricsPusher:
    """A replica's side: push `registry`'s engine series to the hub every interval_s until stopped."""

    def __init__(self, replica: str, registry: CollectorRegistry, interval_s: float = 2.0) -> None:
        self.replica, self.registry, self.interval_s = replica, registry, interval_s
        self._task: asyncio.Task | None = None
        self._hub: Any = None  # the hub actor's handle, got on the first push

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="metrics-pusher")

    async def _run(self) -> None:
        while True:
            await self.push()
            await asyncio.sleep(self.interval_s)

    async def push(self) -> None:
        try:
            if self._hub is None:
                self._hub = hub()
            await self._hub.put.remote(self.replica, snapshot(self.registry))
        except Exception as e:  # metrics are never worth a failed replica: try again next interval
            self._hub = None
            log.warning("engine metrics not pushed to the hub: %s", e)

    async def stop(self) -> None:
        """Stop pushing and retire this replica with its final values."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        try:
            await (self._hub or hub()).retire.remote(self.replica, snapshot(self.registry))
        except Exception as e:
            log.warning("engine metrics of %s not retired: %s", self.replica, e)


async def read_hub(timeout_s: float = 2.0) -> dict[str, list[Sample]]:
    """The hub's snapshots ({} when no replica has pushed yet, or this process is not on a cluster): for a
    gateway on the cluster. Never starts Ray itself."""
    if not ray.is_initialized():
        return {}
    try:
        actor = await asyncio.to_thread(ray.get_actor, HUB_NAME, namespace=HUB_NAMESPACE)
    except ValueError:
        return {}
    return await asyncio.wait_for(actor.collect.remote(), timeout_s)


class RelayedMetrics:
    """A Prometheus collector serving the last merge of the hub's snapshots. Scrapes never wait on Ray:
    `update` (from a poller) replaces the families, `collect` hands out what is there."""

    def __init__(self) -> None:
        self._families: list[Metric] = []

    def update(self, by_replica: dict[str, list[Sample]]) -> None:
        self._families = merge(by_replica)

    def collect(self) -> Iterable[Metric]:
        return list(self._families)

    def describe(self) -> Iterable[Metric]:
        return []  # registered without a first collect: the families come and go with the replicas
