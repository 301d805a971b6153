"""Replica-hour prices over time: the catalogue's `cost:` is the baseline since 1970, admin changes add points."""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from sqlalchemy.orm import Session

from gateway.audit.auditor import Auditor
from gateway.billing.prices import CATALOGUE_EFFECTIVE_FROM
from gateway.catalogue import Catalogue
from gateway.crud.version_costs import costed_versions, list_version_costs, set_version_cost
import itertools

CATALOGUE_ACTOR = "catalogue"


@dataclass(frozen=True, slots=True)
class CostPoint:
    version: str
    per_replica_hour: Decimal
    hardware: str
    effective_from: datetime


class CostHistory:
    """Every version's price points, ascending; read once per report (the table is small)."""

    def __init__(self, points: list[CostPoint]) -> None:
        self._points: dict[str, list[CostPoint]] = {}
        for p in sorted(points, key=lambda p: (p.version, p.effective_from)):
            self._points.setdefault(p.version, []).append(p)

    @classmethod
    def load(cls, session: Session) -> CostHistory:
        return cls([CostPoint(r.version, r.per_replica_hour, r.hardware, r.effective_from)
                    for r in list_version_costs(session)])

    def at(self, version: str, when: datetime) -> CostPoint | None:
        """The price in effect at `when`; None when the version has none then."""
        points = self._points.get(version, [])
        i = bisect.bisect_right([p.effective_from for p in points], when)
        return points[i - 1] if i else None

    def spans(self, version: str, start: datetime, end: datetime) -> list[tuple[datetime, datetime, CostPoint | None]]:
        """[start, end) cut where the price changes: (from, to, the price in effect) each."""
        cuts = [p.effective_from for p in self._points.get(version, []) if start < p.effective_from < end]
        bounds = [start, *cuts, end]
        return [(a, b, self.at(version, a)) for a, b in itertools.pairwise(bounds)]


@dataclass(frozen=True, slots=True)
class ProviderPrice:
    """What an external upstream charges the operator for a version's tokens (the catalogue's `cost:`)."""

    input_per_million: Decimal
    output_per_million: Decimal

    def cost(self, prompt_tokens: int, completion_tokens: int) -> Decimal:
        return (self.input_per_million * prompt_tokens + self.output_per_million * completion_tokens) / 1_000_000


def _dec(value: float) -> Decimal:
    return Decimal(str(value))  # 0.085 -> Decimal("0.085"), not the float's binary expansion


def seed_version_costs_from_catalogue(session: Session, catalogue: Catalogue, *,
                                      auditor: Auditor | None = None) -> list[str]:
    """Give every catalogue version with a `cost:` and no price yet its catalogue price, since 1970; returns
    those seeded. Prices set through the admin API are never overwritten. With `auditor`, each seeded price is a
    `version_cost.set` row of the audit log, in the same transaction as the price."""
    have = costed_versions(session)
    seeded = []
    for name in catalogue.pool_version_names():  # upstream versions cost per token (provider prices)
        cost = catalogue.version(name)[2].cost
        if cost is None or name in have:
            continue
        set_version_cost(session, version=name, per_replica_hour=_dec(cost.per_replica_hour),
                         hardware=cost.hardware, effective_from=CATALOGUE_EFFECTIVE_FROM, set_by=CATALOGUE_ACTOR,
                         audit=auditor.on_write("version_cost.set") if auditor is not None else None)
        seeded.append(name)
    return seeded


def provider_prices(catalogue: Catalogue) -> dict[str, ProviderPrice]:
    """The upstream versions' token prices (catalogue `cost: {input_per_million, output_per_million}`)."""
    out = {}
    for name in catalogue.upstream_version_names():
        cost = catalogue.version(name)[2].cost
        if cost is not None:
            out[name] = ProviderPrice(_dec(cost.input_per_million), _dec(cost.output_per_million))
    return out
