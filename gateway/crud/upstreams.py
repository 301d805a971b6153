"""Upstream overrides (PUT /admin/upstreams/{name}): one row per upstream, the key already sealed."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.crud.commit import AuditHook, commit
from gateway.db.models.upstream_override import UpstreamOverride


def get_override(session: Session, *, name: str) -> UpstreamOverride | None:
    return session.get(UpstreamOverride, name)


def list_overrides(session: Session) -> list[UpstreamOverride]:
    return list(session.scalars(select(UpstreamOverride).order_by(UpstreamOverride.name)))


def set_override(session: Session, *, name: str, updated_by: str, base_url: str | None = None,
                 api_key_sealed: str | None = None, timeout_s: float | None = None,
                 audit: AuditHook | None = None) -> UpstreamOverride:
    """Merge the given fields into the upstream's override (None: leave that field as it is)."""
    row = session.get(UpstreamOverride, name)
    if row is None:
        row = UpstreamOverride(name=name)
        session.add(row)
    if base_url is not None:
        row.base_url = base_url
    if api_key_sealed is not None:
        row.api_key_encrypted = api_key_sealed
    if timeout_s is not None:
        row.timeout_s = timeout_s
    row.updated_by = updated_by
    commit(session, row, audit)
    return row
