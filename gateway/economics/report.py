"""The economics report's arithmetic, on plain inputs (gateway/economics/query.py reads them from the database).

Per version: revenue is the ledger's cost (every kind of request); serving_cost is its replica-minutes at the
replica-hour price in effect each minute; attributed_cost its requests' metered engine time at the price in
effect when each finished; cost = max(serving, attributed) (attributed exceeds serving only when
replica-minutes were not sampled, say with no gateway up); idle_cost = cost - attributed. Tenants carry their
attributed cost plus a share of each version's idle cost in proportion to their attributed cost there (their
requests, when nobody's engine time was metered); the cost of a version nobody used is shared among all tenants
of the period the same way, by their attributed cost over every version. So tenants carry the whole cost (their
margins are fully loaded); it stays unallocated only in a period without any tenant's usage.

Money is exact: sums are kept unrounded, each version's figures rounded once to the money quantum, and the
tenants' shares apportioned by largest remainder, so tenants (+ unallocated) add up to the totals to the
last quantum, and versions to models to totals.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal

from gateway.domain.period import Period
from gateway.db.types import MONEY_QUANTUM
from gateway.economics.apportion import apportion
from gateway.economics.costs import CostPoint, ProviderPrice
from gateway.economics.what_if import alternatives
from gateway.schemas.economics import (EconomicsReport, EconomicsTotals, ModelEconomics, TenantEconomics,
                                       VersionEconomics)

MS_PER_HOUR = Decimal(3_600_000)
MILLION = Decimal(1_000_000)
ZERO = Decimal(0)
RATIO = Decimal("0.000001")  # hours, utilisation and ratios are shown to 6 places
RATE = Decimal("0.01")  # tokens per second
DEFAULT_UTILISATION = Decimal("0.6")


@dataclass(frozen=True, slots=True)
class UsageSlice:
    """Ledger sums of one tenant on one version while one replica-hour price was in effect."""

    tenant_id: str
    model: str
    version: str | None  # None: served by no engine (cache hits, embeddings)
    requests: int
    prompt_tokens: int
    completion_tokens: int
    revenue: Decimal
    engine_ms: float
    per_replica_hour: Decimal | None  # None: no price then


@dataclass(frozen=True, slots=True)
class ReplicaSlice:
    """Replica-minutes of one version (every pool) while one price was in effect."""

    version: str
    replica_minutes: int
    per_replica_hour: Decimal | None


@dataclass(frozen=True, slots=True)
class ReportOptions:
    currency: str = "USD"
    utilisation: Decimal = DEFAULT_UTILISATION  # what break-even prices assume
    throughput: Decimal | None = None  # output tokens per busy second; None: each version's measured one

    def __post_init__(self) -> None:
        if not ZERO < self.utilisation <= 1:
            raise ValueError(f"utilisation must be in (0, 1], got {self.utilisation}")
        if self.throughput is not None and self.throughput <= 0:
            raise ValueError(f"throughput must be > 0, got {self.throughput}")


@dataclass(slots=True)
class _Tenant:
    requests: int = 0
    completion_tokens: int = 0
    revenue: Decimal = ZERO
    attributed: Decimal = ZERO  # unrounded


@dataclass(slots=True)
class _Version:
    model: str
    version: str | None
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    revenue: Decimal = ZERO
    engine_ms: Decimal = ZERO
    replica_minutes: int = 0
    serving: Decimal = ZERO  # unrounded
    attributed: Decimal = ZERO  # unrounded
    provider: ProviderPrice | None = None  # an upstream version: its tokens cost the provider's prices
    tenants: dict[str, _Tenant] = field(default_factory=lambda: defaultdict(_Tenant))


def money(value: Decimal) -> Decimal:
    return value.quantize(MONEY_QUANTUM, rounding=ROUND_HALF_EVEN)


def _ratio(a: Decimal, b: Decimal) -> Decimal | None:
    return (a / b).quantize(RATIO, rounding=ROUND_HALF_EVEN) if b else None


def _collect(usage: list[UsageSlice], replicas: list[ReplicaSlice],
             providers: dict[str, ProviderPrice]) -> dict[tuple[str, str | None], _Version]:
    versions: dict[tuple[str, str | None], _Version] = {}

    def acc(model: str, version: str | None) -> _Version:
        return versions.setdefault((model, version), _Version(model, version, provider=providers.get(version or "")))

    for s in usage:
        v = acc(s.model, s.version)
        ms = Decimal(repr(s.engine_ms))
        attributed = ms / MS_PER_HOUR * (s.per_replica_hour or ZERO) if s.version is not None else ZERO
        if v.provider is not None:  # an upstream version: no replicas, every token at the provider's price
            attributed = v.provider.cost(s.prompt_tokens, s.completion_tokens)
        v.requests += s.requests
        v.prompt_tokens += s.prompt_tokens
        v.completion_tokens += s.completion_tokens
        v.revenue += s.revenue
        v.engine_ms += ms
        v.attributed += attributed
        t = v.tenants[s.tenant_id]
        t.requests += s.requests
        t.completion_tokens += s.completion_tokens
        t.revenue += s.revenue
        t.attributed += attributed
    for r in replicas:
        v = acc(r.version.partition("@")[0], r.version)
        v.replica_minutes += r.replica_minutes
        v.serving += Decimal(r.replica_minutes) * (r.per_replica_hour or ZERO) / 60
    return versions


@dataclass(slots=True)
class _Shares:
    """The rounded cost of one version and each tenant's part of it."""

    serving: Decimal
    attributed: Decimal
    cost: Decimal
    tenant_attributed: dict[str, Decimal]
    tenant_idle: dict[str, Decimal]
    unallocated: Decimal


def _shares(v: _Version) -> _Shares:
    serving, attributed = money(v.serving), money(v.attributed)
    cost = max(serving, attributed)
    idle = cost - attributed
    exact = {t: x.attributed for t, x in v.tenants.items()}
    weights = exact if any(exact.values()) else {t: Decimal(x.requests) for t, x in v.tenants.items()}
    if not v.tenants:
        return _Shares(serving, attributed, cost, {}, {}, idle + attributed)
    return _Shares(serving, attributed, cost, apportion(attributed, exact), apportion(idle, weights), ZERO)


def _version_line(v: _Version, s: _Shares, point: CostPoint | None, options: ReportOptions) -> VersionEconomics:
    replica_hours = Decimal(v.replica_minutes) / 60
    engine_hours = v.engine_ms / MS_PER_HOUR
    measured = v.completion_tokens * Decimal(1000) / v.engine_ms if v.engine_ms else None
    throughput = options.throughput if v.version is not None and options.throughput else measured
    price = point.per_replica_hour if point is not None else None
    break_even = None
    if price is not None and throughput:
        break_even = money(price * MILLION / (throughput * 3600 * options.utilisation))
    margin = v.revenue - s.cost
    provider = v.provider
    return VersionEconomics(
        version=v.version, hardware=point.hardware if point is not None else None, per_replica_hour=price,
        requests=v.requests, prompt_tokens=v.prompt_tokens, completion_tokens=v.completion_tokens,
        revenue=v.revenue, replica_hours=replica_hours.quantize(RATIO), engine_hours=engine_hours.quantize(RATIO),
        serving_cost=s.serving, attributed_cost=s.attributed, idle_cost=s.cost - s.attributed, cost=s.cost,
        utilisation=_ratio(engine_hours, replica_hours),
        cost_per_million_output_tokens=money(s.cost * MILLION / v.completion_tokens) if v.completion_tokens else None,
        margin=margin, margin_ratio=_ratio(margin, v.revenue),
        throughput=throughput.quantize(RATE) if throughput is not None else None,
        break_even_per_million_output_tokens=break_even,
        cost_basis="provider_prices" if provider is not None else "replica_hours",
        provider_input_per_million=provider.input_per_million if provider is not None else None,
        provider_output_per_million=provider.output_per_million if provider is not None else None,
        provider_cost=s.attributed if provider is not None else None)


def _model_line(model: str, lines: list[VersionEconomics]) -> ModelEconomics:
    def total(name: str) -> Decimal:
        return sum((getattr(line, name) for line in lines), ZERO)

    generated = sum(line.completion_tokens for line in lines if line.version is not None)
    cost, revenue = total("cost"), total("revenue")
    provided = [line.provider_cost for line in lines if line.provider_cost is not None]
    what_if, crossovers = alternatives(lines, money)
    return ModelEconomics(
        model=model, requests=sum(line.requests for line in lines),
        prompt_tokens=sum(line.prompt_tokens for line in lines),
        completion_tokens=sum(line.completion_tokens for line in lines), revenue=revenue,
        replica_hours=total("replica_hours"), serving_cost=total("serving_cost"),
        attributed_cost=total("attributed_cost"), idle_cost=total("idle_cost"), cost=cost,
        cost_per_million_output_tokens=money(cost * MILLION / generated) if generated else None,
        margin=revenue - cost, margin_ratio=_ratio(revenue - cost, revenue),
        provider_cost=sum(provided, ZERO) if provided else None, versions=lines, what_if=what_if,
        crossovers=crossovers)


def build_report(usage: list[UsageSlice], replicas: list[ReplicaSlice], current: dict[str, CostPoint], *,
                 period: Period, month: str | None, options: ReportOptions,
                 providers: dict[str, ProviderPrice] | None = None) -> EconomicsReport:
    """`current`: each version's price at the end of the period (break-even and what is shown); `providers`:
    the upstream versions' token prices (their cost is their tokens at those prices, not replica-hours)."""
    versions = _collect(usage, replicas, providers or {})
    by_model: dict[str, list[VersionEconomics]] = defaultdict(list)
    tenants: dict[str, TenantEconomics] = {}
    unallocated = ZERO
    for key in sorted(versions, key=lambda k: (k[0], k[1] is None, k[1] or "")):
        v = versions[key]
        shares = _shares(v)
        unallocated += shares.unallocated
        by_model[v.model].append(_version_line(v, shares, current.get(v.version or ""), options))
        for tenant_id, t in v.tenants.items():
            out = tenants.setdefault(tenant_id, TenantEconomics(
                tenant_id=tenant_id, requests=0, completion_tokens=0, revenue=ZERO, attributed_cost=ZERO,
                idle_cost=ZERO, cost=ZERO, margin=ZERO, margin_ratio=None))
            out.requests += t.requests
            out.completion_tokens += t.completion_tokens
            out.revenue += t.revenue
            out.attributed_cost += shares.tenant_attributed.get(tenant_id, ZERO)
            out.idle_cost += shares.tenant_idle.get(tenant_id, ZERO)
    if tenants and unallocated:
        exact = {t: sum((v.tenants[t].attributed for v in versions.values() if t in v.tenants), ZERO) for t in tenants}
        weights = exact if any(exact.values()) else {t: Decimal(x.requests) for t, x in tenants.items()}
        for tenant_id, share in apportion(unallocated, weights).items():
            tenants[tenant_id].idle_cost += share
        unallocated = ZERO
    for t in tenants.values():
        t.cost = t.attributed_cost + t.idle_cost
        t.margin = t.revenue - t.cost
        t.margin_ratio = _ratio(t.margin, t.revenue)
    models = [_model_line(m, lines) for m, lines in sorted(by_model.items())]
    revenue, cost = sum((m.revenue for m in models), ZERO), sum((m.cost for m in models), ZERO)
    totals = EconomicsTotals(
        requests=sum(m.requests for m in models), completion_tokens=sum(m.completion_tokens for m in models),
        revenue=revenue, cost=cost, attributed_cost=sum((m.attributed_cost for m in models), ZERO),
        idle_cost=sum((m.idle_cost for m in models), ZERO), unallocated_cost=unallocated, margin=revenue - cost)
    return EconomicsReport(month=month, start=period.start, end=period.end, currency=options.currency,
                           utilisation=options.utilisation, models=models,
                           tenants=[tenants[t] for t in sorted(tenants)], totals=totals)
