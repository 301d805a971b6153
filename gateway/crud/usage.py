"""The usage ledger: idempotent inserts and the sums bills and budgets are made of."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, case, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from gateway.db.models.usage import Usage
from gateway.domain.period import Month, Period

_INSERT = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


@dataclass(frozen=True, slots=True)
class ModelTotals:
    tenant_id: str
    model: str
    kind: str  # "interactive" | "batch"
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost: Decimal
    tier: int = 1  # the model's volume tier (gateway.domain.tiers), 1-based


def insert_usage(connection: Connection, *, rows: list[dict[str, Any]]) -> None:
    """Insert ledger rows in one executemany; a request_id already there is skipped."""
    insert = _INSERT.get(connection.dialect.name)
    if insert is None:
        raise RuntimeError(f"the usage ledger supports sqlite and postgresql, not {connection.dialect.name}")
    stmt = insert(Usage).on_conflict_do_nothing(index_elements=["request_id"])
    connection.execute(stmt, rows)


def month_tokens(session: Session, *, tenant_id: str, month: Month) -> int:
    """Prompt + completion tokens the tenant used in `month` (what the budget counts)."""
    stmt = select(func.coalesce(func.sum(Usage.prompt_tokens + Usage.completion_tokens), 0)).where(
        Usage.tenant_id == tenant_id, Usage.created_at >= month.start, Usage.created_at < month.end)
    return int(session.scalar(stmt) or 0)


def totals_by_model(session: Session, *, period: Period, tenant_id: str | None = None) -> list[ModelTotals]:
    """Per (tenant, model, kind) sums over `period`; every tenant when tenant_id is None. Completion tokens a
    reservation covered are left out: its fee line carries them (gateway.billing.reservation_fees)."""
    stmt = (select(Usage.tenant_id, Usage.model, Usage.kind, func.count(Usage.id),
                   func.coalesce(func.sum(Usage.prompt_tokens), 0),
                   func.coalesce(func.sum(Usage.completion_tokens - Usage.reserved_tokens), 0),
                   func.coalesce(func.sum(Usage.cached_tokens), 0),
                   func.sum(Usage.cost))
            .where(Usage.created_at >= period.start, Usage.created_at < period.end)
            .group_by(Usage.tenant_id, Usage.model, Usage.kind)
            .order_by(Usage.tenant_id, Usage.model, Usage.kind.desc()))  # "interactive" before "batch"
    if tenant_id is not None:
        stmt = stmt.where(Usage.tenant_id == tenant_id)
    return [ModelTotals(tenant_id=t, model=m, kind=k, requests=int(n), prompt_tokens=int(p),
                        completion_tokens=int(c), cached_tokens=int(ct), cost=cost or Decimal(0))
            for t, m, k, n, p, c, ct, cost in session.execute(stmt)]


@dataclass(frozen=True, slots=True)
class ClampTotals:
    requests: int  # requests the output cap clamped
    tokens_saved: int  # what they asked for above the cap, summed (asked - cap)


def clamp_totals(session: Session, *, period: Period, tenant_id: str | None = None) -> dict[str, ClampTotals]:
    """Per tenant over `period`: the requests its output cap clamped and the tokens that saved."""
    stmt = (select(Usage.tenant_id, func.count(Usage.id),
                   func.coalesce(func.sum(Usage.max_tokens_asked - Usage.max_tokens_cap), 0))
            .where(Usage.created_at >= period.start, Usage.created_at < period.end,
                   Usage.max_tokens_cap.is_not(None))
            .group_by(Usage.tenant_id))
    if tenant_id is not None:
        stmt = stmt.where(Usage.tenant_id == tenant_id)
    return {t: ClampTotals(int(n), int(saved)) for t, n, saved in session.execute(stmt)}


@dataclass(frozen=True, slots=True)
class WasteTotals:
    model: str
    engine_requests: int  # requests the engine served
    engine_prompt_tokens: int
    prefix_cached_tokens: int  # of those prompt tokens, the ones the engine's prefix cache already held
    cache_hits: int  # requests the semantic cache answered (no engine work)
    hit_prompt_tokens: int
    hit_completion_tokens: int


def waste_by_model(session: Session, *, period: Period, tenant_id: str) -> list[WasteTotals]:
    """Per model over `period`: what the engine's prefix cache and the semantic cache spared the tenant."""
    hit = Usage.cache_hit.is_(True)
    engine = Usage.cache_hit.is_(False)

    def when(cond, value):
        return func.coalesce(func.sum(case((cond, value), else_=0)), 0)

    stmt = (select(Usage.model, when(engine, 1), when(engine, Usage.prompt_tokens), when(engine, Usage.cached_tokens),
                   when(hit, 1), when(hit, Usage.prompt_tokens), when(hit, Usage.completion_tokens))
            .where(Usage.tenant_id == tenant_id, Usage.created_at >= period.start, Usage.created_at < period.end)
            .group_by(Usage.model).order_by(Usage.model))
    return [WasteTotals(m, *(int(v) for v in values)) for m, *values in session.execute(stmt)]


EMBEDDINGS = "/v1/embeddings"


def prompt_input_tokens(session: Session, *, period: Period, tenant_id: str) -> int:
    """Prompt tokens over `period` of every request that sent a prompt (embeddings aside), cache hits included."""
    stmt = select(func.coalesce(func.sum(Usage.prompt_tokens), 0)).where(
        Usage.tenant_id == tenant_id, Usage.created_at >= period.start, Usage.created_at < period.end,
        Usage.endpoint != EMBEDDINGS)
    return int(session.scalar(stmt) or 0)


def totals_by_prompt_version(session: Session, *, period: Period,
                             tenant_id: str) -> list[tuple[str | None, ModelTotals]]:
    """Per (prompt version, model, kind) sums of a tenant over `period`; None for requests without a prompt
    (listed last)."""
    stmt = (select(Usage.prompt_version, Usage.model, Usage.kind, func.count(Usage.id),
                   func.coalesce(func.sum(Usage.prompt_tokens), 0),
                   func.coalesce(func.sum(Usage.completion_tokens - Usage.reserved_tokens), 0),
                   func.coalesce(func.sum(Usage.cached_tokens), 0),
                   func.sum(Usage.cost))
            .where(Usage.tenant_id == tenant_id, Usage.created_at >= period.start, Usage.created_at < period.end)
            .group_by(Usage.prompt_version, Usage.model, Usage.kind))
    rows = [(pv, ModelTotals(tenant_id=tenant_id, model=m, kind=k, requests=int(n), prompt_tokens=int(p),
                             completion_tokens=int(c), cached_tokens=int(ct), cost=cost or Decimal(0)))
            for pv, m, k, n, p, c, ct, cost in session.execute(stmt)]
    # Sorted here, not in SQL: where NULLs sort differs between SQLite and PostgreSQL.
    return sorted(rows, key=lambda r: (r[0] is None, r[0] or "", r[1].model, r[1].kind != "interactive"))


def iter_model_rows(session: Session, *, period: Period, models: set[str],
                    tenant_id: str | None = None, chunk: int = 2000) -> Iterator[Any]:
    """The rows of `models` over `period` in the order tiers are applied: per tenant and model, by created_at,
    then id. Only the columns costing needs; completion tokens without those a reservation covered (its fee pays
    them: they are neither costed nor counted in the volume)."""
    stmt = (select(Usage.tenant_id, Usage.model, Usage.kind, Usage.prompt_version, Usage.prompt_tokens,
                   Usage.completion_tokens - Usage.reserved_tokens, Usage.cached_tokens, Usage.cache_hit, Usage.cost,
                   Usage.created_at)
            .where(Usage.created_at >= period.start, Usage.created_at < period.end, Usage.model.in_(models))
            .order_by(Usage.tenant_id, Usage.model, Usage.created_at, Usage.id)
            .execution_options(yield_per=chunk))
    if tenant_id is not None:
        stmt = stmt.where(Usage.tenant_id == tenant_id)
    yield from session.execute(stmt)


def served_output_rates(session: Session, *, model: str, since: datetime) -> dict[str, tuple[int, float]]:
    """version -> (completion tokens, metered engine ms) of the model's engine-served rows since `since`."""
    stmt = (select(Usage.version, func.coalesce(func.sum(Usage.completion_tokens), 0),
                   func.coalesce(func.sum(Usage.engine_ms), 0.0))
            .where(Usage.model == model, Usage.created_at >= since, Usage.engine_ms > 0, Usage.version.is_not(None))
            .group_by(Usage.version))
    return {v: (int(t), float(ms)) for v, t, ms in session.execute(stmt)}


def iter_usage(session: Session, *, period: Period, tenant_id: str | None = None,
               chunk: int = 1000) -> Iterator[Usage]:
    """Ledger rows in time order, fetched `chunk` at a time."""
    stmt = (select(Usage).where(Usage.created_at >= period.start, Usage.created_at < period.end)
            .order_by(Usage.created_at, Usage.id).execution_options(yield_per=chunk))
    if tenant_id is not None:
        stmt = stmt.where(Usage.tenant_id == tenant_id)
    yield from session.scalars(stmt)
