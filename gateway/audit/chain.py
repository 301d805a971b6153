"""The hash chain, pure: JSON-safe values, the canonical bytes of a row, and its SHA-256.

hash(row) = sha256(canonical JSON of {seq, at, actor, action, target_type, target_id, request_id, before,
after, prev_hash}): keys sorted, no whitespace, ASCII, timestamps as UTC with microseconds, decimals as
strings. The first row's prev_hash is GENESIS; each later row's is the hash of the row before it, so editing
any field of a row, or removing a row, breaks the chain from there on."""
from __future__ import annotations

import hashlib
import math
import json
import uuid
from collections.abc import Mapping
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from gateway.audit.record import JSON, AuditRecord

GENESIS = "0" * 64


def canonical_time(at: datetime) -> str:
    """Exact and fixed-width: 2026-12-01T19:52:00.000123Z. A naive time is taken as UTC."""
    at = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def jsonable(value: Any) -> JSON:
    """`value` as plain JSON: Decimals as strings (never through a float), datetimes as canonical_time."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("an audited value cannot be NaN or infinite")
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return canonical_time(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [jsonable(v) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, (set, frozenset)) else items
    raise TypeError(f"cannot audit a value of type {type(value).__name__}")


def canonical(*, seq: int, at: datetime, actor: str, action: str, target_type: str, target_id: str,
              request_id: str | None, before: JSON, after: JSON, prev_hash: str) -> bytes:
    fields = {"seq": seq, "at": canonical_time(at), "actor": actor, "action": action,
              "target_type": target_type, "target_id": target_id, "request_id": request_id,
              "before": before, "after": after, "prev_hash": prev_hash}
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def row_hash(**fields: Any) -> str:
    """The SHA-256 (hex) of canonical(**fields)."""
    return hashlib.sha256(canonical(**fields)).hexdigest()


def seal(*, seq: int, at: datetime, actor: str, action: str, target_type: str, target_id: str,
         request_id: str | None, before: JSON, after: JSON, prev_hash: str) -> AuditRecord:
    """The record with its hash computed."""
    fields = dict(seq=seq, at=at, actor=actor, action=action, target_type=target_type, target_id=target_id,
                  request_id=request_id, before=before, after=after, prev_hash=prev_hash)
    return AuditRecord(**fields, hash=row_hash(**fields))


def recomputed_hash(record: AuditRecord) -> str:
    """What `record.hash` must be if nothing in it was changed."""
    return row_hash(seq=record.seq, at=record.at, actor=record.actor, action=record.action,
                    target_type=record.target_type, target_id=record.target_id, request_id=record.request_id,
                    before=record.before, after=record.after, prev_hash=record.prev_hash)
