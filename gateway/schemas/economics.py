"""MaaS economics shapes: replica-hour prices, and the monthly report. Money is a decimal string, as in bills;
ratios (utilisation, margin_ratio) and hours are decimal strings too, never floats."""
from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from gateway.schemas.admin import Instant, PerMillion
from gateway.schemas.billing import Money

Number = Money  # an exact decimal, written like money


class VersionCostSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    per_replica_hour: PerMillion  # same bounds as a price: 8 integer digits, 10 decimals, >= 0
    # Default: the version's current hardware. No control characters (PostgreSQL refuses NUL in text).
    hardware: Annotated[str, Field(max_length=200, pattern=r"^[^\x00-\x1f\x7f]*$")] | None = None
    effective_from: Instant | None = None  # default: now


class VersionCostOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    object: str = "version_cost"
    version: str
    per_replica_hour: Money
    hardware: str
    effective_from: datetime
    set_by: str
    created_at: datetime
    current: bool = False  # the price in effect now


class VersionCostList(BaseModel):
    object: str = "list"
    data: list[VersionCostOut]


class VersionEconomics(BaseModel):
    """One version's month. version None: what no engine served (semantic-cache hits, embeddings)."""

    version: str | None
    hardware: str | None
    per_replica_hour: Money | None  # in effect at the end of the period; None: unpriced
    requests: int
    prompt_tokens: int
    completion_tokens: int
    revenue: Money  # the ledger's cost, whatever the request's kind
    replica_hours: Number
    engine_hours: Number  # metered busy time: Σ engine_ms
    serving_cost: Money  # replica-hours at the price in effect each minute
    attributed_cost: Money  # engine time at that price: what the requests used
    idle_cost: Money  # cost - attributed_cost
    cost: Money  # max(serving_cost, attributed_cost): serving_cost unless replica-minutes were missed
    utilisation: Number | None  # engine_hours / replica_hours
    cost_per_million_output_tokens: Money | None
    margin: Money  # revenue - cost
    margin_ratio: Number | None  # margin / revenue
    throughput: Number | None  # output tokens per busy second (measured, or the `throughput` parameter)
    break_even_per_million_output_tokens: Money | None  # at `throughput` and the chosen utilisation
    # "replica_hours" (the pool) | "provider_prices" (an external upstream: cost = its tokens at the provider's
    # prices, which attributed_cost and cost then are; no replicas, no idle cost)
    cost_basis: str = "replica_hours"
    provider_input_per_million: Money | None = None
    provider_output_per_million: Money | None = None
    provider_cost: Money | None = None


class AlternativeCost(BaseModel):
    """What the model's month of tokens would have cost served entirely by one of its versions
    (gateway/economics/what_if.py); cost None: that version has no price or throughput to go by."""

    version: str
    cost_basis: str
    cost: Money | None


class Crossover(BaseModel):
    """Above output_tokens_per_month, one replica of pool_version kept up all month costs less than
    upstream_version's provider prices; None: never at the chosen utilisation."""

    pool_version: str
    upstream_version: str
    output_tokens_per_month: Number | None


class ModelEconomics(BaseModel):
    model: str
    requests: int
    prompt_tokens: int
    completion_tokens: int
    revenue: Money
    replica_hours: Number
    serving_cost: Money
    attributed_cost: Money
    idle_cost: Money
    cost: Money
    cost_per_million_output_tokens: Money | None  # over the tokens its engines generated
    margin: Money
    margin_ratio: Number | None
    provider_cost: Money | None = None  # what its upstream versions' tokens cost at the providers' prices
    versions: list[VersionEconomics]
    what_if: list[AlternativeCost] = []  # self-host vs API: the same tokens on each version
    crossovers: list[Crossover] = []  # pool vs upstream: the monthly volume where the pool becomes cheaper


class TenantEconomics(BaseModel):
    tenant_id: str
    requests: int
    completion_tokens: int
    revenue: Money
    attributed_cost: Money  # its requests' engine time
    idle_cost: Money  # its share of idle replicas: per version by attributed cost, unused versions by its total
    cost: Money
    margin: Money
    margin_ratio: Number | None


class EconomicsTotals(BaseModel):
    requests: int
    completion_tokens: int
    revenue: Money
    cost: Money
    attributed_cost: Money
    idle_cost: Money
    # Cost no tenant carries: only in a period with replicas up and no tenant's usage (tenants + this = cost).
    unallocated_cost: Money
    margin: Money


class EconomicsReport(BaseModel):
    object: str = "economics"
    month: str | None  # YYYY-MM, or None for another period
    start: datetime
    end: datetime
    currency: str
    utilisation: Number  # the one break-even prices assume
    models: list[ModelEconomics]
    tenants: list[TenantEconomics]
    totals: EconomicsTotals
