"""What output rate a model's pool can guarantee: the capacity reserved throughput is sold against.

Per pool version, one replica's output tokens/s times its warm floor (replicas.min: what is always up; the
autoscaler's extra replicas are not a guarantee). One replica's rate is measured when the ledger has enough of
it: output tokens per busy engine second (each row's metered engine_ms) over the last day, once the version's
engines were busy `min_busy_s` in it. Before that (a fresh server) it is the catalogue's
benchmark_output_tokens_per_s, the engine benchmark's figure for the version. A version with neither adds
nothing. Upstream versions are not the pool's: a reservation is enforced by our engine's scheduler."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from gateway.catalogue import Catalogue
from gateway.crud.reservations import reserved_on
from gateway.crud.usage import served_output_rates

WINDOW = timedelta(days=1)
MIN_BUSY_S = 600.0


@dataclass(frozen=True, slots=True)
class VersionCapacity:
    version: str
    replicas: int
    tokens_per_s: float  # one replica's
    basis: str  # "measured" | "benchmark" | "unknown"


@dataclass(frozen=True, slots=True)
class Capacity:
    model: str
    capacity_tokens_per_s: float
    reserved_tokens_per_s: float  # by every tenant's active reservations on the model
    versions: tuple[VersionCapacity, ...]

    @property
    def available_tokens_per_s(self) -> float:
        return max(0.0, self.capacity_tokens_per_s - self.reserved_tokens_per_s)


def model_capacity(session: Session, catalogue: Catalogue, model: str, *, now: datetime,
                   min_busy_s: float = MIN_BUSY_S) -> Capacity:
    spec = catalogue.models[model]
    measured = served_output_rates(session, model=model, since=now - WINDOW)
    versions = []
    for name, version in spec.versions.items():
        if version.is_upstream:
            continue
        full = f"{model}@{name}"
        tokens, busy_ms = measured.get(full, (0, 0.0))
        if busy_ms >= min_busy_s * 1000:
            rate, basis = tokens / (busy_ms / 1000), "measured"
        elif version.benchmark_output_tokens_per_s is not None:
            rate, basis = version.benchmark_output_tokens_per_s, "benchmark"
        else:
            rate, basis = 0.0, "unknown"
        versions.append(VersionCapacity(full, version.replicas.min, rate, basis))
    total = sum(v.tokens_per_s * v.replicas for v in versions)
    return Capacity(model, total, reserved_on(session, model=model), tuple(versions))
