"""Admin: tenants."""
from __future__ import annotations

from fastapi import APIRouter

from gateway.api.admin.auditing import AuditorDep
from gateway.crud.tenants import list_tenants
from gateway.schemas.admin import TenantCreate, TenantList, TenantOut, TenantUpdate
from gateway.services.deps import ServicesDep, SessionDep
from gateway.services.tenants import add_tenant, change_tenant, tenant_or_404

router = APIRouter()


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
