"""Batch API files, always scoped to one tenant: create (within the tenant's storage quota), read (metadata
apart from content), list, delete; and the sweep of expired ones. An expired file is gone for the tenant at
once, whether or not the sweep has deleted its row yet."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session, defer

from gateway.db.models.batch_file import BatchFile
from gateway.db.models.tenant import Tenant
from gateway.db.rowcount import rowcount
from gateway.db.types import utcnow


class StorageFull(Exception):
    """The upload would take the tenant's unexpired files past its quota."""

    def __init__(self, limit: int, used: int, size: int) -> None:
        super().__init__(f"Storing this file ({size} bytes) would exceed your file storage quota of {limit} bytes "
                         f"({used} bytes are in use). Delete files, or wait for some to expire.")
        self.limit, self.used, self.size = limit, used, size


def _live(now: datetime):
    return or_(BatchFile.expires_at.is_(None), BatchFile.expires_at > now)


def stored_bytes(session: Session, *, tenant_id: str, now: datetime | None = None) -> int:
    """Bytes of the tenant's unexpired files (batch outputs included)."""
    return int(session.scalar(select(func.coalesce(func.sum(BatchFile.bytes), 0))
                              .where(BatchFile.tenant_id == tenant_id, _live(now or utcnow()))))


def quota_room(session: Session, *, tenant_id: str, quota: int, now: datetime | None = None) -> int:
    """Bytes the tenant may still store: its own files_max_bytes (else `quota`, the gateway's) less its files."""
    own = session.scalar(select(Tenant.files_max_bytes).where(Tenant.id == tenant_id))
    return (own if own is not None else quota) - stored_bytes(session, tenant_id=tenant_id, now=now)


def create_file(session: Session, *, tenant_id: str, file_id: str, filename: str, purpose: str, content: bytes,
                created_at: datetime | None = None, expires_at: datetime | None = None,
                quota: int | None = None) -> BatchFile:
    """Store a file. With `quota` (the gateway's default; the tenant's own files_max_bytes wins), raise
    StorageFull when it would not fit: the tenant's row is locked first (FOR UPDATE on PostgreSQL; SQLite
    has one writer at a time), so two uploads racing cannot both fit in room for one."""
    now = created_at or utcnow()
    if quota is not None:
        own = _lock_tenant(session, tenant_id)
        limit = own if own is not None else quota
        used = stored_bytes(session, tenant_id=tenant_id, now=now)
        if used + len(content) > limit:
            session.rollback()
            raise StorageFull(limit, used, len(content))
    row = BatchFile(id=file_id, tenant_id=tenant_id, filename=filename, purpose=purpose, bytes=len(content),
                    content=content, created_at=now, expires_at=expires_at)
    session.add(row)
    session.commit()
    return row


def _lock_tenant(session: Session, tenant_id: str) -> int | None:
    """Hold the tenant's row until commit; its own quota. SQLite ignores FOR UPDATE and takes no lock for a
    read, so there a no-op update takes its one write lock first (a racing upload waits on busy_timeout)."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(update(Tenant).where(Tenant.id == tenant_id).values(files_max_bytes=Tenant.files_max_bytes))
        return session.scalar(select(Tenant.files_max_bytes).where(Tenant.id == tenant_id))
    return session.scalar(select(Tenant.files_max_bytes).where(Tenant.id == tenant_id).with_for_update())


def get_file(session: Session, *, tenant_id: str, file_id: str, now: datetime | None = None) -> BatchFile | None:
    """The file's metadata (its content left unread); None when the tenant has no such file, or it expired."""
    return session.scalar(select(BatchFile).options(defer(BatchFile.content))
                          .where(BatchFile.id == file_id, BatchFile.tenant_id == tenant_id, _live(now or utcnow())))


def file_content(session: Session, *, tenant_id: str, file_id: str, now: datetime | None = None) -> bytes | None:
    content = session.scalar(select(BatchFile.content).where(BatchFile.id == file_id, BatchFile.tenant_id == tenant_id,
                                                             _live(now or utcnow())))
    return None if content is None else bytes(content)


def expired_at(session: Session, *, tenant_id: str, file_id: str, now: datetime | None = None) -> datetime | None:
    """When the file expired, if it has and the sweep has not deleted it yet; None otherwise."""
    return session.scalar(select(BatchFile.expires_at).where(
        BatchFile.id == file_id, BatchFile.tenant_id == tenant_id, BatchFile.expires_at <= (now or utcnow())))


def list_files(session: Session, *, tenant_id: str, purpose: str | None = None, limit: int = 100,
               after: str | None = None, now: datetime | None = None) -> list[BatchFile]:
    """Newest first; `after` a file id of the tenant's: those listed after it."""
    now = now or utcnow()
    stmt = (select(BatchFile).options(defer(BatchFile.content)).where(BatchFile.tenant_id == tenant_id, _live(now))
            .order_by(BatchFile.created_at.desc(), BatchFile.id.desc()).limit(limit))
    if purpose is not None:
        stmt = stmt.where(BatchFile.purpose == purpose)
    if after is not None:
        cursor = get_file(session, tenant_id=tenant_id, file_id=after, now=now)
        if cursor is not None:
            stmt = stmt.where((BatchFile.created_at < cursor.created_at)
                              | ((BatchFile.created_at == cursor.created_at) & (BatchFile.id < cursor.id)))
    return list(session.scalars(stmt))


def delete_file(session: Session, *, tenant_id: str, file_id: str) -> bool:
    """True when the tenant had this file (now gone)."""
    result = session.execute(delete(BatchFile).where(BatchFile.id == file_id, BatchFile.tenant_id == tenant_id))
    session.commit()
    return bool(rowcount(result))


def delete_expired(session: Session, *, now: datetime, limit: int = 500) -> int:
    """Delete up to `limit` expired files (any tenant's); how many this call deleted. Idempotent: gateways
    sweeping at once each delete what is still there, and a row two of them pick is deleted once."""
    ids = list(session.scalars(select(BatchFile.id).where(BatchFile.expires_at <= now)
                               .order_by(BatchFile.expires_at).limit(limit)))
    if not ids:
        return 0
    result = session.execute(delete(BatchFile).where(BatchFile.id.in_(ids), BatchFile.expires_at <= now))
    session.commit()
    return rowcount(result)
