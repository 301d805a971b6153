"""Tenants: look up, create and change, audited and told to every replica; the admin API and the console both call
these."""
from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from gateway.audit.auditor import Auditor
from gateway.crud.errors import AlreadyExists
from gateway.crud.tenants import create_tenant, get_tenant, update_tenant
from gateway.db.models.tenant import Tenant
from gateway.domain.errors import APIError, invalid_request, not_found
from gateway.events.events import TenantChanged
from gateway.schemas.admin import TenantCreate, check_default_within_cap
from gateway.services import Services
from gateway.services.announce import announce


def tenant_or_404(session: Session, tenant_id: str) -> Tenant:
    tenant = get_tenant(session, tenant_id=tenant_id)
    if tenant is None:
        raise not_found(f"No tenant with id {tenant_id!r}.")
    return tenant


def _name_taken(e: AlreadyExists) -> APIError:
    return APIError(409, str(e), code="tenant_exists", param="name")


def add_tenant(session: Session, auditor: Auditor, body: TenantCreate) -> Tenant:
    """Create and audit a tenant; 409 when the name is taken."""
    try:
        return create_tenant(session, **body.model_dump(), audit=auditor.on_write("tenant.create"))
    except AlreadyExists as e:
        raise _name_taken(e) from e


def change_tenant(session: Session, services: Services, auditor: Auditor, tenant_id: str,
                  changes: dict[str, Any]) -> Tenant:
    """Apply and audit `changes` (a TenantUpdate's fields that were sent), then tell every replica."""
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
