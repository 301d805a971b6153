"""Admin: a tenant's reserved throughput per model (issue 33): created only within what the pool can guarantee."""
from __future__ import annotations

from fastapi import APIRouter

from gateway.api.admin.auditing import AuditorDep
from gateway.crud.reservations import (create_reservation, end_reservation, get_reservation, hold_model,
                                        list_reservations)
from gateway.db.types import utcnow
from gateway.domain.errors import APIError, model_not_found, not_found
from gateway.economics.capacity import Capacity, model_capacity
from gateway.events.events import TenantChanged
from gateway.schemas.reservations import ReservationCreate, ReservationList, ReservationOut
from gateway.services.announce import announce
from gateway.services.deps import ServicesDep, SessionDep
from gateway.services.tenants import tenant_or_404

router = APIRouter()


class OverCapacity(APIError):
    """409: the model's active reservations plus this one would exceed what its pool can guarantee. The error
    names the figures: the capacity, what is already reserved, and what is available."""

    def __init__(self, capacity: Capacity, asked: float) -> None:
        super().__init__(409, f"The pool of `{capacity.model}` can guarantee {capacity.capacity_tokens_per_s:g} "
                         f"output tokens/s; {capacity.reserved_tokens_per_s:g} are reserved, so at most "
                         f"{capacity.available_tokens_per_s:g} are available, not {asked:g}.",
                         code="over_capacity", param="output_tokens_per_s")
        self.capacity = capacity

    def body(self) -> dict:
        body = super().body()
        c = self.capacity
        body["error"].update(capacity_tokens_per_s=c.capacity_tokens_per_s,
                             reserved_tokens_per_s=c.reserved_tokens_per_s,
                             available_tokens_per_s=c.available_tokens_per_s,
                             basis={v.version: v.basis for v in c.versions})
        return body


def _changed(services, tenant_id: str) -> None:
    """The tenant's requests carry the new rate from their next authentication, here and on other replicas."""
    services.authenticator.invalidate_tenant(tenant_id)
    announce(services, TenantChanged(tenant_id))


@router.post("/tenants/{tenant_id}/reservations", status_code=201, response_model=ReservationOut)
def create(tenant_id: str, body: ReservationCreate, session: SessionDep, services: ServicesDep,
           auditor: AuditorDep) -> ReservationOut:
    """Reserve output tokens/s on a model for a monthly fee; 409 `over_capacity` with the figures when the pool
    cannot guarantee it beside the reservations already held."""
    tenant_or_404(session, tenant_id)
    if body.model not in services.catalogue.models:
        raise model_not_found(body.model)
    hold_model(session, model=body.model)  # the check and the write as one step against a racing POST
    capacity = model_capacity(session, services.catalogue, body.model, now=utcnow())
    if body.output_tokens_per_s > capacity.available_tokens_per_s:
        raise OverCapacity(capacity, body.output_tokens_per_s)
    reservation = create_reservation(session, tenant_id=tenant_id, model=body.model,
                                     output_tokens_per_s=body.output_tokens_per_s, monthly_fee=body.monthly_fee,
                                     audit=auditor.on_write("reservation.create"))
    _changed(services, tenant_id)
    return ReservationOut.model_validate(reservation)


@router.get("/tenants/{tenant_id}/reservations", response_model=ReservationList)
def list_all(tenant_id: str, session: SessionDep) -> ReservationList:
    """The tenant's reservations, active and ended, oldest first."""
    tenant_or_404(session, tenant_id)
    return ReservationList(data=[ReservationOut.model_validate(r)
                                 for r in list_reservations(session, tenant_id=tenant_id)])


@router.delete("/tenants/{tenant_id}/reservations/{reservation_id}", response_model=ReservationOut)
def end(tenant_id: str, reservation_id: str, session: SessionDep, services: ServicesDep,
        auditor: AuditorDep) -> ReservationOut:
    """End a reservation now (its fee is prorated to this moment); ending an ended one changes nothing."""
    tenant_or_404(session, tenant_id)
    reservation = get_reservation(session, tenant_id=tenant_id, reservation_id=reservation_id)
    if reservation is None:
        raise not_found(f"No reservation {reservation_id!r} for tenant {tenant_id!r}.")
    reservation = end_reservation(session, reservation=reservation,
                                  audit=auditor.on_write("reservation.end", before=reservation))
    _changed(services, tenant_id)
    return ReservationOut.model_validate(reservation)
