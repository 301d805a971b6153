"""A bill's reservation lines: one `reservation_fee` line per reservation active in the month.

The fee is prorated by the second over the part of the month the reservation covers: from its creation (or the
month's start) to its end (or the month's end). An active reservation is a commitment for the rest of the month,
so its line shows the whole remaining fee from the moment it is created; ending it early credits the rest.

The line's completion_tokens are the tokens the reservation covered (the engine's count on each usage row,
`reserved_tokens`): paid by the fee, so they are in no usage row's cost. A row's covered tokens go to the
tenant's reservation on that model that was the latest created at or before the row (a row just before a
reservation's creation, served under a rate its authentication cached, goes to the first one)."""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, Decimal

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.crud.reservations import reservations_in
from gateway.db.models.reservation import Reservation
from gateway.db.models.usage import Usage
from gateway.db.types import MONEY_QUANTUM
from gateway.domain.period import Month
from gateway.schemas.billing import ReservationFeeLine


def prorated_fee(reservation: Reservation, month: Month) -> Decimal:
    start = max(reservation.created_at, month.start)
    end = min(reservation.ended_at or month.end, month.end)
    if end <= start:
        return Decimal(0)
    share = Decimal((end - start).total_seconds()) / Decimal((month.end - month.start).total_seconds())
    return (reservation.monthly_fee * share).quantize(MONEY_QUANTUM, rounding=ROUND_HALF_EVEN)


def fee_lines(session: Session, *, month: Month,
              tenant_id: str | None = None) -> dict[str, list[ReservationFeeLine]]:
    """tenant -> its reservation lines for `month`, oldest reservation first."""
    held = reservations_in(session, start=month.start, end=month.end, tenant_id=tenant_id)
    by_model: dict[tuple[str, str], list[Reservation]] = defaultdict(list)
    for r in held:
        by_model[(r.tenant_id, r.model)].append(r)
    covered = {r.id: 0 for r in held}
    for (tenant, model), reservations in by_model.items():
        starts = [r.created_at for r in reservations]
        for at, tokens in _covered_rows(session, tenant, model, month):
            covered[reservations[max(0, bisect_right(starts, at) - 1)].id] += tokens
    out: dict[str, list[ReservationFeeLine]] = defaultdict(list)
    for r in held:
        out[r.tenant_id].append(ReservationFeeLine(
            model=r.model, requests=0, prompt_tokens=0, completion_tokens=covered[r.id], cached_tokens=0,
            cost=prorated_fee(r, month), reservation_id=r.id, output_tokens_per_s=r.output_tokens_per_s))
    return out


def _covered_rows(session: Session, tenant_id: str, model: str, month: Month):
    """(created_at, covered tokens) of the tenant's rows on `model` with covered tokens, in the month."""
    stmt = (select(Usage.created_at, Usage.reserved_tokens)
            .where(Usage.tenant_id == tenant_id, Usage.model == model, Usage.reserved_tokens > 0,
                   Usage.created_at >= month.start, Usage.created_at < month.end))
    return session.execute(stmt)

