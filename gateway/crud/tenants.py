"""Tenants: create, read, update. Tenants are disabled, never deleted (the ledger points at them)."""
from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gateway.crud.commit import AuditHook, commit
from gateway.crud.errors import AlreadyExists
from gateway.db.models.tenant import Tenant


def create_tenant(session: Session, *, name: str, audit: AuditHook | None = None, **fields: Any) -> Tenant:
    """`fields`: any Tenant column (rpm, tpm, monthly_token_budget, cache_*); `audit` records it in the
    same transaction."""
    if get_tenant_by_name(session, name=name) is not None:
        raise AlreadyExists(f"a tenant named {name!r} already exists")
    tenant = Tenant(name=name, **{k: v for k, v in fields.items() if v is not None})
    session.add(tenant)
    try:
        commit(session, tenant, audit)
    except IntegrityError as e:  # lost a race with another create of the same name
        session.rollback()
        raise AlreadyExists(f"a tenant named {name!r} already exists") from e
    return tenant


def get_tenant(session: Session, *, tenant_id: str) -> Tenant | None:
    return session.get(Tenant, tenant_id)


def get_tenant_by_name(session: Session, *, name: str) -> Tenant | None:
    return session.scalar(select(Tenant).where(Tenant.name == name))


def list_tenants(session: Session) -> list[Tenant]:
    return list(session.scalars(select(Tenant).order_by(Tenant.created_at, Tenant.name)))


def update_tenant(session: Session, *, tenant: Tenant, changes: dict[str, Any],
                  audit: AuditHook | None = None) -> Tenant:
    """Set each given column (None clears a nullable limit); `audit` records it in the same transaction."""
    if ("name" in changes and changes["name"] != tenant.name
            and get_tenant_by_name(session, name=changes["name"]) is not None):
        raise AlreadyExists(f"a tenant named {changes['name']!r} already exists")
    for field, value in changes.items():
        setattr(tenant, field, value)
    try:
        commit(session, tenant, audit)
    except IntegrityError as e:
        session.rollback()
        raise AlreadyExists(f"a tenant named {changes.get('name')!r} already exists") from e
    return tenant
