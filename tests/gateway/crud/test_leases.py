"""The lease helper on a table of its own: one claimant per row, take-over after a lapse, renew and release
only by the holder. On SQLite and PostgreSQL."""
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Integer, String, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from gateway.crud import leases
from gateway.db.types import UTCDateTime

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class _Base(DeclarativeBase):
    pass


class Job(_Base):
    __tablename__ = "lease_test_jobs"
    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    rank: Mapped[int] = mapped_column(Integer)
    done: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)


@pytest.fixture
def jobs(database):
    _Base.metadata.create_all(database.engine)
    with database.session() as s:
        s.add_all([Job(id=f"j{i}", rank=i) for i in range(4)])
        s.commit()
    return database


def _claim(db, owner, *, now=T0, limit=10, skip=(), lease_s=30.0):
    with db.session() as s:
        won = leases.claim(s, Job, where=[Job.done == 0], order_by=[Job.rank], owner=owner, now=now,
                           lease_s=lease_s, limit=limit, skip=skip)
        s.commit()
        return won


def test_claims_in_order_up_to_the_limit_and_a_held_row_goes_to_nobody_else(jobs):
    assert _claim(jobs, "a", limit=2) == ["j0", "j1"]
    assert _claim(jobs, "b") == ["j2", "j3"]
    assert _claim(jobs, "c") == []


def test_only_rows_matching_where_and_not_skipped(jobs):
    with jobs.session() as s:
        s.get(Job, "j0").done = 1
        s.commit()
    assert _claim(jobs, "a", skip=["j1"]) == ["j2", "j3"]


def test_a_lapsed_lease_is_taken_over(jobs):
    assert _claim(jobs, "a", limit=1, lease_s=10) == ["j0"]
    assert _claim(jobs, "b", limit=1, now=T0 + timedelta(seconds=5)) == ["j1"]  # j0 still a's
    assert _claim(jobs, "b", limit=1, now=T0 + timedelta(seconds=11)) == ["j0"]


def test_renew_and_release_only_by_the_holder(jobs):
    _claim(jobs, "a", limit=1)
    with jobs.session() as s:
        assert not leases.renew(s, Job, row_id="j0", owner="b", until=T0 + timedelta(hours=1))
        assert leases.renew(s, Job, row_id="j0", owner="a", until=T0 + timedelta(hours=1))
        assert not leases.release(s, Job, row_id="j0", owner="b", done=1)
        assert leases.release(s, Job, row_id="j0", owner="a", done=1)
        s.commit()
    with jobs.session() as s:
        row = s.scalar(select(Job).where(Job.id == "j0"))
        assert (row.done, row.lease_owner, row.lease_until) == (1, None, None)
