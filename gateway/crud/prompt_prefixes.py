"""The prompt_prefixes table: a tenant-month's sightings written in one transaction (counted, capped), and what
the waste report reads back."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, delete, false, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from gateway.db.models.prompt_prefix import PromptPrefix

_INSERT = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
_GREATEST = {"sqlite": func.max, "postgresql": func.greatest}  # two-argument max and min of a row's old and new
_LEAST = {"sqlite": func.min, "postgresql": func.least}
_IN_CHUNK = 500  # digests per IN (...): far under SQLite's bound on parameters


@dataclass(frozen=True, slots=True)
class SeenPrefix:
    kind: str
    digest: str
    tokens: int
    preview: str


@dataclass(frozen=True, slots=True)
class Sighting:
    """One request's prefixes, longest first, and when it came."""
    at: datetime
    prefixes: list[SeenPrefix]


@dataclass(slots=True)
class _Tally:
    prefix: SeenPrefix
    first: datetime
    last: datetime
    seen: int = 0
    reused: int = 0


@dataclass(slots=True)
class RecordOutcome:
    reused_tokens: int = 0  # input tokens of these requests that repeated a prefix seen before in the month
    evicted: int = 0  # prefixes dropped to keep the tenant-month within its cap


def record_sightings(connection: Connection, *, tenant_id: str, month: str, sightings: list[Sighting],
                     cap: int) -> RecordOutcome:
    """Count each request's prefixes, in order: a request whose prefix was seen before in the month (in the table
    or earlier in `sightings`) reuses its longest such prefix. Then keep the `cap` most seen prefixes of the
    tenant-month (the most recently seen on ties). Call inside a transaction: on PostgreSQL it takes the
    tenant-month's advisory lock, so two gateways flushing the same tenant at once agree on what was seen before."""
    dialect = connection.dialect.name
    insert = _INSERT.get(dialect)
    if insert is None:
        raise RuntimeError(f"prompt prefixes support sqlite and postgresql, not {dialect}")
    _serialise(connection, tenant_id=tenant_id, month=month)
    wanted = sorted({p.digest for s in sightings for p in s.prefixes})
    seen = _known(connection, tenant_id=tenant_id, month=month, digests=wanted)
    tallies: dict[str, _Tally] = {}
    outcome = RecordOutcome()
    for s in sightings:
        reused = next((p for p in s.prefixes if p.digest in seen), None)
        for p in s.prefixes:
            t = tallies.setdefault(p.digest, _Tally(p, s.at, s.at))
            t.seen += 1
            t.first, t.last = min(t.first, s.at), max(t.last, s.at)
            seen.add(p.digest)
        if reused is not None:
            tallies[reused.digest].reused += 1
            outcome.reused_tokens += reused.tokens
    if tallies:
        stmt = insert(PromptPrefix)
        stmt = stmt.on_conflict_do_update(
            index_elements=["tenant_id", "month", "digest"],
            set_={"times_seen": PromptPrefix.times_seen + stmt.excluded.times_seen,
                  "times_reused": PromptPrefix.times_reused + stmt.excluded.times_reused,
                  "first_seen": _LEAST[dialect](PromptPrefix.first_seen, stmt.excluded.first_seen),
                  "last_seen": _GREATEST[dialect](PromptPrefix.last_seen, stmt.excluded.last_seen)})
        connection.execute(stmt, [
            {"tenant_id": tenant_id, "month": month, "kind": t.prefix.kind, "digest": d, "tokens": t.prefix.tokens,
             "times_seen": t.seen, "times_reused": t.reused, "first_seen": t.first, "last_seen": t.last,
             "preview": t.prefix.preview} for d, t in sorted(tallies.items())])
    outcome.evicted = _cap(connection, tenant_id=tenant_id, month=month, cap=cap)
    return outcome


def _serialise(connection: Connection, *, tenant_id: str, month: str) -> None:
    """Hold off every other writer of the tenant-month until this transaction ends, before reading what was seen.
    PostgreSQL: the tenant-month's advisory lock. SQLite: its one write lock, taken by a write that changes nothing
    (a read first would let another gateway's flush in between)."""
    if connection.dialect.name == "postgresql":
        connection.execute(select(func.pg_advisory_xact_lock(_lock_key(tenant_id, month))))
    else:
        connection.execute(update(PromptPrefix).where(false()).values(times_seen=PromptPrefix.times_seen))


def _known(connection: Connection, *, tenant_id: str, month: str, digests: list[str]) -> set[str]:
    known: set[str] = set()
    for i in range(0, len(digests), _IN_CHUNK):
        stmt = select(PromptPrefix.digest).where(PromptPrefix.tenant_id == tenant_id, PromptPrefix.month == month,
                                                 PromptPrefix.digest.in_(digests[i:i + _IN_CHUNK]))
        known.update(connection.scalars(stmt))
    return known


def _cap(connection: Connection, *, tenant_id: str, month: str, cap: int) -> int:
    """Drop the least seen prefixes (the least recently seen first) beyond `cap`; how many went."""
    mine = (PromptPrefix.tenant_id == tenant_id, PromptPrefix.month == month)
    over = connection.scalar(select(func.count()).select_from(PromptPrefix).where(*mine)) - cap
    if over <= 0:
        return 0
    victims = list(connection.scalars(
        select(PromptPrefix.id).where(*mine)
        .order_by(PromptPrefix.times_seen, PromptPrefix.last_seen, PromptPrefix.id).limit(over)))
    connection.execute(delete(PromptPrefix).where(PromptPrefix.id.in_(victims)))
    return len(victims)


def _lock_key(tenant_id: str, month: str) -> int:
    """A signed 64-bit advisory lock key for the tenant-month."""
    return int.from_bytes(hashlib.sha256(f"prompt_prefixes:{tenant_id}:{month}".encode()).digest()[:8], "big",
                          signed=True)


@dataclass(frozen=True, slots=True)
class PrefixTotals:
    distinct: int  # prefixes kept for the tenant-month
    reused_tokens: int  # Σ tokens × times_reused: input tokens that repeated a prefix seen before


def prefix_totals(session: Session, *, tenant_id: str, month: str) -> PrefixTotals:
    stmt = select(func.count(), func.coalesce(func.sum(PromptPrefix.tokens * PromptPrefix.times_reused), 0)).where(
        PromptPrefix.tenant_id == tenant_id, PromptPrefix.month == month)
    n, reused = session.execute(stmt).one()
    return PrefixTotals(int(n), int(reused))


def most_repeated(session: Session, *, tenant_id: str, month: str, limit: int = 10) -> list[PromptPrefix]:
    """The prefixes seen more than once, by tokens × repeats (most recently seen first on ties)."""
    weight = PromptPrefix.tokens * (PromptPrefix.times_seen - 1)
    stmt = (select(PromptPrefix)
            .where(PromptPrefix.tenant_id == tenant_id, PromptPrefix.month == month, PromptPrefix.times_seen > 1)
            .order_by(weight.desc(), PromptPrefix.last_seen.desc(), PromptPrefix.id).limit(limit))
    return list(session.scalars(stmt))
