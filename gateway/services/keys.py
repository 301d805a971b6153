"""API keys: issue and revoke, checked, audited and told to every replica; the admin API and the console both
call these."""
from __future__ import annotations

from sqlalchemy.orm import Session

from gateway.audit.auditor import Auditor
from gateway.catalogue import Catalogue
from gateway.crud.keys import create_key, get_key, revoke_key
from gateway.db.models.api_key import ApiKey
from gateway.db.types import utcnow
from gateway.domain.errors import invalid_request, not_found
from gateway.events.events import KeyRevoked
from gateway.schemas.admin import KeyCreate, KeyCreated, KeyOut
from gateway.services import Services
from gateway.services.announce import announce
from gateway.services.tenants import tenant_or_404


def servable_names(catalogue: Catalogue) -> set[str]:
    """Every name a request may use as `model`."""
    return {*catalogue.models, *catalogue.embeddings, *catalogue.aliases, *catalogue.version_names()}


def issue_key(session: Session, services: Services, auditor: Auditor, tenant_id: str, body: KeyCreate) -> KeyCreated:
    """Check, create and audit a key."""
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


def revoke_by_id(session: Session, services: Services, auditor: Auditor, key_id: str) -> ApiKey:
    """Revoke (idempotent), audit and tell every replica."""
    key = get_key(session, key_id=key_id)
    if key is None:
        raise not_found(f"No API key with id {key_id!r}.")
    key = revoke_key(session, key=key, audit=auditor.on_write("key.revoke", before=key))
    services.authenticator.invalidate_key(key_id)
    announce(services, KeyRevoked(key_id))
    return key
