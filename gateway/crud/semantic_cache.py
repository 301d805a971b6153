"""Persisting entries in SQL and reading them back, skipping (and logging) corrupt rows."""
from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import numpy as np
from sqlalchemy import Engine, delete, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import sessionmaker

from gateway.db.errors import database_unavailable
from gateway.db.models.semantic_cache_entry import SemanticCacheEntryRow
from gateway.db.rowcount import rowcount
from gateway.domain.cache import STORABLE_FINISH_REASONS, CachedAnswer, CacheEntry

log = logging.getLogger(__name__)


class CorruptEntry(ValueError):
    """A persisted row that cannot be turned back into a servable entry."""


def _to_datetime(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


def to_row(entry: CacheEntry) -> SemanticCacheEntryRow:
    payload = {
        "question": entry.question,
        "context": entry.context,
        "text": entry.answer.text,
        "prompt_tokens": entry.answer.prompt_tokens,
        "completion_tokens": entry.answer.completion_tokens,
        "finish_reason": entry.answer.finish_reason,
        "max_tokens": entry.answer.max_tokens,
        "token_ends": list(entry.answer.token_ends),
    }
    vector = np.asarray(entry.vector, dtype="<f4")
    return SemanticCacheEntryRow(
        id=entry.id, tenant_id=entry.tenant_id, model=entry.model, namespace=entry.namespace,
        exact_key=entry.exact_key, payload=json.dumps(payload, ensure_ascii=False).encode("utf-8"),
        vector=vector.tobytes(), dim=int(vector.shape[0]),
        created_at=_to_datetime(entry.created_at), expires_at=_to_datetime(entry.expires_at),
    )


def from_row(row: SemanticCacheEntryRow, dim: int) -> CacheEntry:
    """The entry a row holds; CorruptEntry when any part of it is unusable."""
    try:
        payload = json.loads(bytes(row.payload).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, TypeError) as e:
        raise CorruptEntry(f"payload: {e}") from e
    if not isinstance(payload, dict):
        raise CorruptEntry("payload: not a JSON object")
    question, text = payload.get("question"), payload.get("text")
    prompt_tokens, completion_tokens = payload.get("prompt_tokens"), payload.get("completion_tokens")
    finish_reason = payload.get("finish_reason")
    if not isinstance(question, str) or not question.strip():
        raise CorruptEntry("payload.question: missing or not a string")
    if not isinstance(text, str) or not text:
        raise CorruptEntry("payload.text: missing or not a string")
    for name, value in (("prompt_tokens", prompt_tokens), ("completion_tokens", completion_tokens)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CorruptEntry(f"payload.{name}: not a non-negative integer")
    if finish_reason not in STORABLE_FINISH_REASONS:
        raise CorruptEntry(f"payload.finish_reason: {finish_reason!r} is never served")
    max_tokens, ends = payload.get("max_tokens"), payload.get("token_ends") or []
    if finish_reason == "length" and (not isinstance(max_tokens, int) or max_tokens != completion_tokens):
        raise CorruptEntry("payload.max_tokens: a cut answer needs the limit it was cut at")
    if ends and (len(ends) != completion_tokens or any(not isinstance(e, int) or isinstance(e, bool) for e in ends)
                 or list(ends) != sorted(ends) or ends[-1] != len(text)):
        raise CorruptEntry("payload.token_ends: not one ascending offset per token ending at the text's end")
    raw = bytes(row.vector or b"")
    if row.dim != dim or len(raw) != dim * 4:
        raise CorruptEntry(f"vector: {len(raw)} bytes / dim {row.dim}, expected dim {dim}")
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(vector).all() or abs(norm - 1.0) > 1e-3:
        raise CorruptEntry(f"vector: not a finite unit vector (norm {norm:.4f})")
    if not row.namespace or not row.exact_key or not row.tenant_id or not row.model:
        raise CorruptEntry("keys: tenant_id, model, namespace and exact_key must be non-empty")
    return CacheEntry(
        id=row.id, tenant_id=row.tenant_id, model=row.model, namespace=row.namespace,
        exact_key=row.exact_key, question=question,
        answer=CachedAnswer(text, prompt_tokens, completion_tokens, finish_reason,
                            max_tokens if isinstance(max_tokens, int) else None, tuple(ends)),
        vector=vector, created_at=row.created_at.timestamp(),
        expires_at=row.expires_at.timestamp() if row.expires_at is not None else None,
        context=payload.get("context") if isinstance(payload.get("context"), str) else "",
    )


class CacheRepository:
    """Keyword-only CRUD over semantic_cache_entries; every method commits its own work."""

    def __init__(self, engine: Engine) -> None:
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def save(self, entry: CacheEntry, *, evicted: Sequence[str] = ()) -> None:
        """Insert an entry and drop the rows it displaced, in one transaction. Best effort: with
        the database unreachable the entry still serves from memory (it is only not there after a
        restart), so the failure is logged, not raised. Deletes stay strict: an invalidation that
        did not reach the database must not look done."""
        try:
            self._save(entry, evicted)
        except SQLAlchemyError as e:
            if not database_unavailable(e):
                raise
            log.warning("semantic cache: entry %s kept in memory only, the database is unreachable (%s)",
                        entry.id, type(e).__name__)

    def _save(self, entry: CacheEntry, evicted: Sequence[str]) -> None:
        with self._sessions() as session, session.begin():
            if evicted:
                session.execute(delete(SemanticCacheEntryRow).where(SemanticCacheEntryRow.id.in_(list(evicted))))
            session.execute(delete(SemanticCacheEntryRow).where(
                SemanticCacheEntryRow.exact_key == entry.exact_key))
            session.add(to_row(entry))

    def delete(self, *, entry_ids: list[str]) -> None:
        if not entry_ids:
            return
        with self._sessions() as session, session.begin():
            session.execute(delete(SemanticCacheEntryRow).where(SemanticCacheEntryRow.id.in_(entry_ids)))

    def ids(self) -> set[str]:
        """Every persisted entry's id."""
        with self._sessions() as session:
            return set(session.scalars(select(SemanticCacheEntryRow.id)))

    def delete_tenant(self, *, tenant_id: str) -> int:
        with self._sessions() as session, session.begin():
            result = session.execute(delete(SemanticCacheEntryRow).where(
                SemanticCacheEntryRow.tenant_id == tenant_id))
            return rowcount(result) or 0

    def load(self, *, dim: int, now: float) -> Iterator[CacheEntry]:
        """Live entries, oldest first. Corrupt rows are logged and skipped; expired ones deleted."""
        expired: list[str] = []
        with self._sessions() as session:
            rows = session.execute(select(SemanticCacheEntryRow).order_by(
                SemanticCacheEntryRow.created_at, SemanticCacheEntryRow.id)).scalars()
            for row in rows:
                try:
                    entry = from_row(row, dim)
                except CorruptEntry as e:
                    log.warning("semantic cache: skipping corrupt entry %s (tenant %s): %s", row.id, row.tenant_id, e)
                    continue
                if entry.expired(now):
                    expired.append(entry.id)
                    continue
                yield entry
        self.delete(entry_ids=expired)
