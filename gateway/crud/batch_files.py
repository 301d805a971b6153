"""Batch API files, always scoped to one tenant: create, read (metadata apart from content), list, delete."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, defer

from gateway.db.models.batch_file import BatchFile
from gateway.db.types import utcnow


def create_file(session: Session, *, tenant_id: str, file_id: str, filename: str, purpose: str, content: bytes,
                created_at: datetime | None = None) -> BatchFile:
    row = BatchFile(id=file_id, tenant_id=tenant_id, filename=filename, purpose=purpose, bytes=len(content),
                    content=content, created_at=created_at or utcnow())
    session.add(row)
    session.commit()
    return row


def get_file(session: Session, *, tenant_id: str, file_id: str) -> BatchFile | None:
    """The file's metadata (its content left unread); None when the tenant has no such file."""
    return session.scalar(select(BatchFile).options(defer(BatchFile.content))
                          .where(BatchFile.id == file_id, BatchFile.tenant_id == tenant_id))


def file_content(session: Session, *, tenant_id: str, file_id: str) -> bytes | None:
    content = session.scalar(select(BatchFile.content).where(BatchFile.id == file_id,
                                                             BatchFile.tenant_id == tenant_id))
    return None if content is None else bytes(content)


def list_files(session: Session, *, tenant_id: str, purpose: str | None = None, limit: int = 100,
               after: str | None = None) -> list[BatchFile]:
    """Newest first; `after` a file id of the tenant's: those listed after it."""
    stmt = (select(BatchFile).options(defer(BatchFile.content)).where(BatchFile.tenant_id == tenant_id)
            .order_by(BatchFile.created_at.desc(), BatchFile.id.desc()).limit(limit))
    if purpose is not None:
        stmt = stmt.where(BatchFile.purpose == purpose)
    if after is not None:
        cursor = get_file(session, tenant_id=tenant_id, file_id=after)
        if cursor is not None:
            stmt = stmt.where((BatchFile.created_at < cursor.created_at)
                              | ((BatchFile.created_at == cursor.created_at) & (BatchFile.id < cursor.id)))
    return list(session.scalars(stmt))


def delete_file(session: Session, *, tenant_id: str, file_id: str) -> bool:
    """True when the tenant had this file (now gone)."""
    result = session.execute(delete(BatchFile).where(BatchFile.id == file_id, BatchFile.tenant_id == tenant_id))
    session.commit()
    return bool(result.rowcount)
