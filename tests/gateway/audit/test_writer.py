import threading

import pytest
from sqlalchemy import delete, func, select

from gateway.audit.chain import GENESIS
from gateway.audit.errors import ChainHeadMissing
from gateway.audit.record import Change, Target
from gateway.audit.table import AuditChainHead, AuditLogRow
from gateway.audit.verify import verify
from gateway.audit.writer import append
from gateway.db.database import Database

from .conftest import ALICE, append_n


def _rows(db: Database) -> list[AuditLogRow]:
    with db.session() as s:
        return list(s.scalars(select(AuditLogRow).order_by(AuditLogRow.seq)))


def test_rows_chain_from_genesis(database):
    append_n(database, 3)
    rows = _rows(database)
    assert [r.seq for r in rows] == [1, 2, 3]
    assert rows[0].prev_hash == GENESIS and rows[1].prev_hash == rows[0].hash and rows[2].prev_hash == rows[1].hash
    assert (rows[0].actor, rows[0].request_id, rows[0].before, rows[0].after) == ("admin:alice", "req-1",
                                                                                 {"rpm": 0}, {"rpm": 1})
    with database.session() as s:
        assert s.get(AuditChainHead, 1).hash == rows[2].hash and verify(s).ok


def test_a_rolled_back_transaction_leaves_no_row_and_the_head_as_it_was(database):
    append_n(database, 1)
    with database.session() as s:
        ALICE.record(s, "tenant.update", Target("tenant", "t"), after={"rpm": 1})
        s.rollback()
    append_n(database, 1)
    assert [r.seq for r in _rows(database)] == [1, 2]
    with database.session() as s:
        assert verify(s).ok


def test_no_head_row_refuses_to_start_a_new_chain(database):
    with database.session() as s, s.begin():
        s.execute(delete(AuditChainHead))
    with database.session() as s, pytest.raises(ChainHeadMissing):
        append(s, Change("admin:a", "tenant.create", Target("tenant", "t")))


def test_changes_are_checked():
    with pytest.raises(ValueError):
        Change("", "tenant.create", Target("tenant", "t"))
    with pytest.raises(ValueError):
        Change("admin:a", "create", Target("tenant", "t"))


def test_concurrent_appends_keep_one_chain(db_url, database):
    """Threads with their own engines, as two gateway processes would be: no seq twice, no shared prev_hash."""
    threads, per_thread, errors = 4, 8, []

    def work(i: int) -> None:
        db = Database(db_url)
        try:
            for j in range(per_thread):
                with db.session() as s, s.begin():
                    ALICE.record(s, "key.create", Target("key", f"{i}-{j}"), after={"i": i, "j": j})
        except Exception as e:  # reported below, with the thread that failed
            errors.append((i, e))
        finally:
            db.dispose()

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert errors == []
    rows = _rows(database)
    assert [r.seq for r in rows] == list(range(1, threads * per_thread + 1))
    assert len({r.prev_hash for r in rows}) == len(rows)
    with database.session() as s:
        verdict = verify(s)
        assert verdict.ok and verdict.rows == threads * per_thread, verdict
        assert s.scalar(select(func.count()).select_from(AuditLogRow)) == threads * per_thread
