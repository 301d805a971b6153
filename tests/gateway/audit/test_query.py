from datetime import UTC, datetime, timedelta

import pytest

from gateway.audit.auditor import Auditor
from gateway.audit.query import AuditQuery, list_records
from gateway.audit.record import Target


def _seed(db):
    a, b = Auditor("admin:a"), Auditor("admin:b")
    with db.session() as s, s.begin():
        a.record(s, "tenant.create", Target("tenant", "t1"), after={"name": "x"})
        b.record(s, "tenant.update", Target("tenant", "t1"), before={"rpm": 1}, after={"rpm": 2})
        a.record(s, "key.create", Target("key", "k1"), after={"prefix": "tg-abc"})
        b.record(s, "price.set", Target("price", "m@v:1"), after={"input_per_million": "0.1"})


def _seqs(db, **filters):
    with db.session() as s:
        return [r.seq for r in list_records(s, AuditQuery(**filters)).data]


def test_filters(database):
    _seed(database)
    assert _seqs(database) == [4, 3, 2, 1]
    assert _seqs(database, actor="admin:a") == [3, 1]
    assert _seqs(database, action="tenant.update") == [2]
    assert _seqs(database, action="tenant.*") == [2, 1]
    assert _seqs(database, target_type="tenant", target_id="t1") == [2, 1]
    assert _seqs(database, target_type="price", target_id="m@v:1") == [4]
    now = datetime.now(UTC)
    assert _seqs(database, since=now - timedelta(minutes=1), until=now + timedelta(minutes=1)) == [4, 3, 2, 1]
    assert _seqs(database, since=now + timedelta(minutes=1)) == []


def test_pages_follow_the_seq_cursor(database):
    _seed(database)
    with database.session() as s:
        first = list_records(s, AuditQuery(limit=3))
        rest = list_records(s, AuditQuery(limit=3, after=first.data[-1].seq))
    assert ([r.seq for r in first.data], first.has_more) == ([4, 3, 2], True)
    assert ([r.seq for r in rest.data], rest.has_more) == ([1], False)


@pytest.mark.parametrize("bad", [dict(limit=0), dict(limit=1001), dict(after=-1), dict(target_id="t1")])
def test_bad_queries_are_refused(bad):
    with pytest.raises(ValueError):
        AuditQuery(**bad)
