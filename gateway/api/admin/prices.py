"""Admin: prices per million tokens, with their history."""
from __future__ import annotations

from fastapi import APIRouter

from gateway.api.admin.auditing import AuditorDep
from gateway.crud.prices import list_prices, price_in_effect, set_price
from gateway.db.models.price import Price
from gateway.db.types import utcnow
from gateway.domain.errors import model_not_found
from gateway.domain.tiers import tiers_to_json
from gateway.schemas.admin import PriceList, PriceOut, PriceSet
from gateway.services.deps import ServicesDep, SessionDep

router = APIRouter()


def _current_ids(prices: list[Price]) -> set[int]:
    """The row in effect now for each model (rows come sorted by model, effective_from)."""
    now, current = utcnow(), {}
    for p in prices:
        if p.effective_from <= now:
            current[p.model] = p.id
    return set(current.values())


def _out(price: Price, current: set[int]) -> PriceOut:
    return PriceOut.model_validate(price).model_copy(update={"current": price.id in current})


@router.get("/prices", response_model=PriceList)
def list_all(session: SessionDep) -> PriceList:
    """Every price row, oldest first per model; `current` marks the one in effect."""
    prices = list_prices(session)
    current = _current_ids(prices)
    return PriceList(data=[_out(p, current) for p in prices])


@router.put("/prices/{model:path}", response_model=PriceOut)
def put(model: str, body: PriceSet, session: SessionDep, services: ServicesDep, auditor: AuditorDep) -> PriceOut:
    """Set a model's price from `effective_from` (default: now); earlier usage keeps its price."""
    catalogue = services.catalogue
    if model not in catalogue.models and model not in catalogue.embeddings:
        raise model_not_found(model)
    when = body.effective_from or utcnow()  # in UTC (PriceSet)
    # The audit's before: what was charged from `when` until now (the row overwritten, or the one before).
    audit = auditor.on_write("price.set", before=price_in_effect(session, model=model, at=when))
    price = set_price(session, model=model, input_per_million=body.input_per_million,
                      output_per_million=body.output_per_million, effective_from=when,
                      cached_input_per_million=body.cached_input_per_million,
                      cached_output_per_million=body.cached_output_per_million,
                      tiers=tiers_to_json(body.tier_list()), audit=audit)
    services.prices.reload()
    return _out(price, _current_ids(list_prices(session)))
