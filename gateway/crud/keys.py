"""API keys: issue (the secret is returned once), list, revoke, look up by hash."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gateway.crud.commit import AuditHook, commit
from gateway.db.models.api_key import ApiKey
from gateway.db.models.tenant import Tenant
from gateway.db.types import utcnow
from gateway.domain.api_keys import generate_key


def create_key(session: Session, *, tenant_id: str, models: list[str] | None = None,
               expires_at: datetime | None = None, rpm: int | None = None,
               tpm: int | None = None, max_output_tokens: int | None = None,
               default_max_tokens: int | None = None, audit: AuditHook | None = None) -> tuple[ApiKey, str]:
    """(row, secret). The secret exists nowhere else: hand it to the caller once. `audit` records the
    key (never its secret) in the same transaction."""
    new = generate_key()
    key = ApiKey(tenant_id=tenant_id, prefix=new.prefix, key_hash=new.key_hash, models=models,
                 expires_at=expires_at, rpm=rpm, tpm=tpm, max_output_tokens=max_output_tokens,
                 default_max_tokens=default_max_tokens)
    session.add(key)
    commit(session, key, audit)
    return key, new.key


def get_key(session: Session, *, key_id: str) -> ApiKey | None:
    return session.get(ApiKey, key_id)


def list_keys(session: Session, *, tenant_id: str) -> list[ApiKey]:
    stmt = select(ApiKey).where(ApiKey.tenant_id == tenant_id).order_by(ApiKey.created_at)
    return list(session.scalars(stmt))


def revoke_key(session: Session, *, key: ApiKey, when: datetime | None = None,
               audit: AuditHook | None = None) -> ApiKey:
    """Idempotent: a key revoked twice keeps its first revocation time (and only the first is audited)."""
    if key.revoked_at is None:
        key.revoked_at = when or utcnow()
        commit(session, key, audit)
    return key


def find_key(session: Session, *, key_hash: str) -> tuple[ApiKey, Tenant] | None:
    stmt = select(ApiKey, Tenant).join(Tenant, Tenant.id == ApiKey.tenant_id).where(
        ApiKey.key_hash == key_hash)
    row = session.execute(stmt).first()
    return None if row is None else (row[0], row[1])


def touch_key(session: Session, *, key_id: str, when: datetime | None = None) -> None:
    session.execute(update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=when or utcnow()))
    session.commit()
