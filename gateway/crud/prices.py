"""Prices: a history per model; the one in effect at T has the latest effective_from <= T."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.crud.commit import AuditHook, commit
from gateway.db.models.price import Price


def list_prices(session: Session) -> list[Price]:
    return list(session.scalars(select(Price).order_by(Price.model, Price.effective_from)))


def set_price(session: Session, *, model: str, input_per_million: Decimal,
              output_per_million: Decimal, effective_from: datetime,
              cached_input_per_million: Decimal = Decimal(0),
              cached_output_per_million: Decimal = Decimal(0), tiers: list[dict] | None = None,
              audit: AuditHook | None = None) -> Price:
    """Add a price from `effective_from`; the same (model, effective_from) is overwritten. `tiers`: the
    monthly volume tiers as stored (gateway.domain.tiers.tiers_to_json), None for a flat price. `audit`
    records it in the same transaction."""
    price = session.scalar(select(Price).where(Price.model == model,
                                               Price.effective_from == effective_from))
    if price is None:
        price = Price(model=model, effective_from=effective_from)
        session.add(price)
    price.input_per_million = input_per_million
    price.output_per_million = output_per_million
    price.cached_input_per_million = cached_input_per_million
    price.cached_output_per_million = cached_output_per_million
    price.tiers = tiers
    commit(session, price, audit)
    return price


def price_in_effect(session: Session, *, model: str, at: datetime) -> Price | None:
    """The model's row with the latest effective_from <= `at`."""
    return session.scalar(select(Price).where(Price.model == model, Price.effective_from <= at)
                          .order_by(Price.effective_from.desc()).limit(1))


def priced_models(session: Session) -> set[str]:
    return set(session.scalars(select(Price.model).distinct()))
