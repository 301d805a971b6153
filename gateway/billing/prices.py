"""PriceBook: every price history in memory, so costing a request never waits on the database."""
from __future__ import annotations

import bisect
import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal

from sqlalchemy.orm import Session

from gateway.audit.auditor import Auditor
from gateway.catalogue import Catalogue
from gateway.domain.tiers import Tier, flat, tiers_from_json, tiers_to_json
from gateway.crud.prices import list_prices, priced_models, set_price
from gateway.db.database import Database
from gateway.db.types import MONEY_QUANTUM, utcnow
from gateway.observability.outage import OutageLog

log = logging.getLogger(__name__)

MILLION = Decimal(1_000_000)
# Catalogue prices are the baseline "since always", so usage at any date has a price.
CATALOGUE_EFFECTIVE_FROM = datetime(1970, 1, 1, tzinfo=UTC)


class UnknownPrice(LookupError):
    """No price in effect for this model at that time."""


@dataclass(frozen=True, slots=True)
class PricePoint:
    model: str
    input_per_million: Decimal
    output_per_million: Decimal
    cached_input_per_million: Decimal
    cached_output_per_million: Decimal
    effective_from: datetime
    # Monthly volume tiers (gateway.domain.tiers), the first at the flat prices above; () = flat.
    tiers: tuple[Tier, ...] = ()

    @property
    def tiered(self) -> bool:
        return len(self.tiers) > 1


DEFAULT_BATCH_DISCOUNT = Decimal("0.5")
KINDS = ("interactive", "batch")  # what a ledger row's work was: a request answered now, or a Batch API line


def request_cost(price: PricePoint, *, prompt_tokens: int, completion_tokens: int,
                 cached_tokens: int, cache_hit: bool, discount: Decimal = Decimal(0),
                 tier: Tier | None = None) -> Decimal:
    """Cached prompt tokens at the cached-input price, the rest at the input price; completion
    tokens at the output price, or the cached-output price for a semantic-cache hit. A `discount`
    (a batch line's) takes that fraction off the whole, before the one rounding. With `tier`, its
    input and output prices replace the flat ones (cached prompt tokens keep the cached price)."""
    cached = min(cached_tokens, prompt_tokens)
    input_price = price.input_per_million if tier is None else tier.input_per_million
    output = price.cached_output_per_million if cache_hit else (
        price.output_per_million if tier is None else tier.output_per_million)
    micro = ((prompt_tokens - cached) * input_price
             + cached * price.cached_input_per_million + completion_tokens * output)
    return (micro * (1 - discount) / MILLION).quantize(MONEY_QUANTUM, rounding=ROUND_HALF_EVEN)


class PriceBook:
    """Loaded from the prices table; `reload()` after a change. Also re-read every `refresh_s`
    (in a background thread, never on the caller's path) so several gateway processes converge
    on a price set through another one."""

    def __init__(self, database: Database, *, refresh_s: float = 60.0,
                 batch_discounts: dict[str, Decimal] | None = None) -> None:
        """`batch_discounts`: per model, the fraction a batch line saves (the catalogue's); others 0.5."""
        self._database = database
        self._refresh_outage = OutageLog(log, "price refresh (keeping the prices loaded earlier)")
        self._batch_discounts = dict(batch_discounts or {})
        self._refresh_s = refresh_s
        self._lock = threading.Lock()
        self._history: dict[str, list[PricePoint]] = {}  # model -> ascending effective_from
        self._loaded_at: float | None = None
        self._refreshing = False

    def reload(self) -> None:
        with self._database.session() as session:
            rows = list_prices(session)
        history = price_history(rows)
        with self._lock:
            self._history, self._loaded_at = history, time.monotonic()

    def _fresh(self) -> dict[str, list[PricePoint]]:
        loaded = self._loaded_at
        if loaded is None:
            self.reload()  # the first read must see the table
        elif time.monotonic() - loaded > self._refresh_s and not self._refreshing:
            self._refreshing = True
            threading.Thread(target=self._background_reload, name="pricebook-refresh", daemon=True).start()
        return self._history

    def _background_reload(self) -> None:
        try:
            self.reload()
            self._refresh_outage.succeeded()
        except Exception as e:
            # Keep serving the prices already loaded; try again after another refresh_s.
            self._refresh_outage.failed(e)
            self._loaded_at = time.monotonic()
        finally:
            self._refreshing = False

    def history(self, model: str) -> list[PricePoint]:
        return list(self._fresh().get(model, []))

    def price_at(self, model: str, when: datetime | None = None) -> PricePoint:
        """The price in effect at `when` (now by default); UnknownPrice if none."""
        when = when or utcnow()
        points = self._fresh().get(model, [])
        i = bisect.bisect_right([p.effective_from for p in points], when)
        if i == 0:
            raise UnknownPrice(f"no price for model {model!r} at {when.isoformat()}")
        return points[i - 1]

    def has_price(self, model: str, when: datetime | None = None) -> bool:
        points = self._fresh().get(model, [])
        return bool(points) and points[0].effective_from <= (when or utcnow())

    def batch_discount(self, model: str) -> Decimal:
        return self._batch_discounts.get(model, DEFAULT_BATCH_DISCOUNT)

    def cost(self, model: str, *, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0,
             cache_hit: bool = False, when: datetime | None = None, kind: str = "interactive") -> Decimal:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        return request_cost(self.price_at(model, when), prompt_tokens=prompt_tokens,
                            completion_tokens=completion_tokens, cached_tokens=cached_tokens,
                            cache_hit=cache_hit, discount=self.batch_discount(model) if kind == "batch" else Decimal(0))

    def missing_prices(self, catalogue: Catalogue) -> list[str]:
        """Catalogue models (chat and embedding) with no price now: they must not be served."""
        return sorted(m for m in _catalogue_models(catalogue) if not self.has_price(m))


def price_point(row) -> PricePoint:
    """A prices-table row as a PricePoint, its tiers parsed."""
    tiers = tiers_from_json(row.tiers, input_per_million=row.input_per_million,
                            output_per_million=row.output_per_million)
    return PricePoint(row.model, row.input_per_million, row.output_per_million, row.cached_input_per_million,
                      row.cached_output_per_million, row.effective_from, tiers)


def price_history(rows) -> dict[str, list[PricePoint]]:
    """model -> its PricePoints, ascending effective_from (rows come sorted so)."""
    history: dict[str, list[PricePoint]] = {}
    for r in rows:
        history.setdefault(r.model, []).append(price_point(r))
    return history


def point_at(points: list[PricePoint], when: datetime) -> PricePoint | None:
    """The point in effect at `when` in one model's ascending history; None before the first."""
    i = bisect.bisect_right([p.effective_from for p in points], when)
    return points[i - 1] if i else None


def batch_discounts(catalogue: Catalogue) -> dict[str, Decimal]:
    """Each catalogue model's batch discount, exact."""
    specs = {**catalogue.models, **catalogue.embeddings}
    return {model: _dec(spec.price.batch_discount) for model, spec in specs.items()}


def _catalogue_models(catalogue: Catalogue) -> list[str]:
    return [*catalogue.models, *catalogue.embeddings]


def catalogue_tiers(price) -> tuple[Tier, ...]:
    """A catalogue price's tiers, exact (flat when it lists none)."""
    if not price.tiers:
        return flat(_dec(price.input_per_million), _dec(price.output_per_million))
    return tuple(Tier(t.up_to, _dec(t.input_per_million), _dec(t.output_per_million)) for t in price.tiers)


def _dec(value: float) -> Decimal:
    return Decimal(str(value))  # 0.1 -> Decimal("0.1"), not the float's binary expansion


def seed_prices_from_catalogue(session: Session, catalogue: Catalogue, *,
                               auditor: Auditor | None = None) -> list[str]:
    """Insert the catalogue's price for every model that has none yet; returns those seeded.
    Prices set through the admin API are never overwritten. With `auditor`, each seeded price is a
    `price.set` row of the audit log, in the same transaction as the price."""
    have = priced_models(session)
    specs = {**{m: s.price for m, s in catalogue.models.items()},
             **{m: s.price for m, s in catalogue.embeddings.items()}}
    seeded = []
    for model, price in specs.items():
        if model in have:
            continue
        set_price(session, model=model, input_per_million=_dec(price.input_per_million),
                  output_per_million=_dec(price.output_per_million),
                  cached_input_per_million=_dec(price.cached_input_per_million),
                  tiers=tiers_to_json(catalogue_tiers(price)),
                  effective_from=CATALOGUE_EFFECTIVE_FROM,
                  audit=auditor.on_write("price.set") if auditor is not None else None)
        seeded.append(model)
    return seeded
