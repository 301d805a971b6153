"""Admin: API keys. The secret is in the create response only."""
from __future__ import annotations

from fastapi import APIRouter

from gateway.api.admin.auditing import AuditorDep
from gateway.crud.keys import list_keys
from gateway.schemas.admin import KeyCreate, KeyCreated, KeyList, KeyOut
from gateway.services.deps import ServicesDep, SessionDep
from gateway.services.keys import issue_key, revoke_by_id
from gateway.services.tenants import tenant_or_404

router = APIRouter()


@router.post("/tenants/{tenant_id}/keys", status_code=201, response_model=KeyCreated)
def create(tenant_id: str, body: KeyCreate, session: SessionDep, services: ServicesDep,
           auditor: AuditorDep) -> KeyCreated:
    """Issue a key; the response is the only place the secret ever appears."""
    return issue_key(session, services, auditor, tenant_id, body)


@router.get("/tenants/{tenant_id}/keys", response_model=KeyList)
def list_all(tenant_id: str, session: SessionDep) -> KeyList:
    """A tenant's keys, without their secrets."""
    tenant_or_404(session, tenant_id)
    return KeyList(data=[KeyOut.model_validate(k) for k in list_keys(session, tenant_id=tenant_id)])


@router.delete("/keys/{key_id}", response_model=KeyOut)
def revoke(key_id: str, session: SessionDep, services: ServicesDep, auditor: AuditorDep) -> KeyOut:
    """Revoke a key (idempotent); refused from the next request on."""
    return KeyOut.model_validate(revoke_by_id(session, services, auditor, key_id))
