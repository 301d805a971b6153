"""Admin: tenants."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy.orm import Session

from gateway.api.admin.announce import announce
from gateway.api.admin.auditing import AuditorDep
from gateway.api.deps import ServicesDep, SessionDep
from gateway.audit.auditor import Auditor
from gateway.domain.errors import APIError, invalid_request, not_found
from gateway.crud.errors import AlreadyExists
from gateway.crud.tenants import create_tenant, get_tenant, list_tenants, update_tenant
from gateway.db.models.tenant import Tenant
from gateway.events.events import TenantChanged
from gateway.schemas.admin import TenantCreate, TenantList, TenantOut, TenantUpdate, check_default_within_cap

router = APIRouter()


def tenant_or_404(session: Session, tenant_id: str) -> Tenant:
    tenant = get_tenant(session, tenant_id=tenant_id)
    if tenant is None:
        raise not_found(f"No tenant with id {tenant_id!r}.")
    return tenant


def _name_taken(e: AlreadyExists) -> APIError:
    return APIError(409, str(e), code="tenant_exists", param="name")


def add_tenant(session: Session, auditor: Auditor, body: TenantCreate) -> Tenant:
    """Create and audit a tenant; 409 when the name is taken. The admin API and the console both call it."""
    try:
        return create_tenant(session, **body.model_dump(), audit=auditor.on_write("tenant.create"))
    except AlreadyExists as e:
        raise _name_taken(e) from e


def change_tenant(session: Session, services: Any, auditor: Auditor, tenant_id: str,
                  changes: dict[str, Any]) -> Tenant:
    """Apply and audit `changes` (a TenantUpdate's fields that were sent), then tell every replica; the admin
    API and the console both call it."""
    tenant = tenant_or_404(session, tenant_id)
    try:  # the caps as they will be, sent or kept: a default above the cap is refused
        check_default_within_cap(changes.get("max_output_tokens", tenant.max_output_tokens),
                                 changes.get("default_max_tokens", tenant.default_max_tokens))
    except ValueError as e:
        raise invalid_request(str(e), param="default_max_tokens") from None
    try:
        tenant = update_tenant(session, tenant=tenant, changes=changes,
                               audit=auditor.on_write("tenant.update", before=tenant))
    except AlreadyExists as e:
        raise _name_taken(e) from e
    services.authenticator.invalidate_tenant(tenant_id)
    announce(services, TenantChanged(tenant_id))
    return tenant


@router.post("/tenants", status_code=201, response_model=TenantOut)
def create(body: TenantCreate, session: SessionDep, auditor: AuditorDep) -> TenantOut:
    """Create a tenant."""
    return TenantOut.model_validate(add_tenant(session, auditor, body))


@router.get("/tenants", response_model=TenantList)
def list_all(session: SessionDep) -> TenantList:
    """Every tenant."""
    return TenantList(data=[TenantOut.model_validate(t) for t in list_tenants(session)])


@router.get("/tenants/{tenant_id}", response_model=TenantOut)
def read(tenant_id: str, session: SessionDep) -> TenantOut:
    """One tenant."""
    return TenantOut.model_validate(tenant_or_404(session, tenant_id))


@router.patch("/tenants/{tenant_id}", response_model=TenantOut)
def update(tenant_id: str, body: TenantUpdate, session: SessionDep, services: ServicesDep,
           auditor: AuditorDep) -> TenantOut:
    """Change limits, status or cache settings; takes effect on the next request, on every replica."""
    return TenantOut.model_validate(change_tenant(session, services, auditor, tenant_id,
                                                  body.model_dump(exclude_unset=True)))
