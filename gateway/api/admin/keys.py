"""Admin: API keys. The secret is in the create response only."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from sqlalchemy.orm import Session

from gateway.api.admin.announce import announce
from gateway.api.admin.auditing import AuditorDep
from gateway.api.admin.tenants import tenant_or_404
from gateway.api.deps import ServicesDep, SessionDep
from gateway.audit.auditor import Auditor
from gateway.domain.errors import invalid_request, not_found
from gateway.catalogue import Catalogue
from gateway.crud.keys import create_key, get_key, list_keys, revoke_key
from gateway.db.models.api_key import ApiKey
from gateway.db.types import utcnow
from gateway.events.events import KeyRevoked
from gateway.schemas.admin import KeyCreate, KeyCreated, KeyList, KeyOut

router = APIRouter()


def servable_names(catalogue: Catalogue) -> set[str]:
    """Every name a request may use as `model`."""
    return {*catalogue.models, *catalogue.embeddings, *catalogue.aliases, *catalogue.version_names()}


def issue_key(session: Session, services: Any, auditor: Auditor, tenant_id: str, body: KeyCreate) -> KeyCreated:
    """Check, create and audit a key; the admin API and the console both call it."""
    tenant_or_404(session, tenant_id)
    if body.models is not None:
        unknown = sorted(set(body.models) - servable_names(services.catalogue))
        if unknown:
            raise invalid_request(f"unknown models: {', '.join(unknown)}", param="models")
    if body.expires_at is not None and body.expires_at <= utcnow():  # in UTC (KeyCreate)
        raise invalid_request("expires_at is in the past", param="expires_at")
    key, secret = create_key(session, tenant_id=tenant_id, models=body.models, expires_at=body.expires_at,
                             rpm=body.rpm, tpm=body.tpm, max_output_tokens=body.max_output_tokens,
                             default_max_tokens=body.default_max_tokens, audit=auditor.on_write("key.create"))
    return KeyCreated.model_validate({**KeyOut.model_validate(key).model_dump(), "key": secret})


def revoke_by_id(session: Session, services: Any, auditor: Auditor, key_id: str) -> ApiKey:
    """Revoke (idempotent), audit and tell every replica; the admin API and the console both call it."""
    key = get_key(session, key_id=key_id)
    if key is None:
        raise not_found(f"No API key with id {key_id!r}.")
    key = revoke_key(session, key=key, audit=auditor.on_write("key.revoke", before=key))
    services.authenticator.invalidate_key(key_id)
    announce(services, KeyRevoked(key_id))
    return key


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
