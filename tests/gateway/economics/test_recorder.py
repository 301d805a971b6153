"""Replica-minutes: idempotent across gateways watching one pool, additive across pools."""
import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from gateway.crud.replica_minutes import replica_minutes
from gateway.db.models import ReplicaMinute
from gateway.economics.recorder import RecorderConfig, ReplicaRecorder, ReplicaSource

T0 = datetime(2026, 11, 10, 12, 0, 5, tzinfo=UTC)


class Pool:
    def __init__(self, name: str, counts: dict[str, int]) -> None:
        self.replica_pool, self.counts = name, counts

    def replica_counts(self) -> dict[str, int]:
        return dict(self.counts)


def recorder(database, source, when):
    return ReplicaRecorder(database, source, clock=lambda: when[0])


def total(database, version):
    with database.session() as s:
        return replica_minutes(s, version=version, start=T0 - timedelta(hours=1), end=T0 + timedelta(hours=1))


def test_two_gateways_on_one_pool_do_not_double_count(database):
    shared = Pool("ray:cluster/tollgate", {"m@a": 2, "m@b": 1})
    when = [T0]
    one, two = recorder(database, shared, when), recorder(database, shared, when)
    assert isinstance(shared, ReplicaSource)
    one.sample()
    two.sample()  # the same minute from another gateway
    when[0] = T0 + timedelta(seconds=30)
    one.sample()  # and again later in that minute
    assert (total(database, "m@a"), total(database, "m@b")) == (2, 1)
    shared.counts["m@a"] = 3  # a replica came up during the minute: the minute keeps the most seen
    two.sample()
    shared.counts["m@a"] = 1
    one.sample()
    assert total(database, "m@a") == 3
    when[0] = T0 + timedelta(minutes=1)
    one.sample()
    assert total(database, "m@a") == 4  # 3 + 1: a new minute
    with database.session() as s:
        minutes = [r.minute for r in s.scalars(select(ReplicaMinute).where(ReplicaMinute.version == "m@a")
                                               .order_by(ReplicaMinute.minute))]
    assert minutes == [datetime(2026, 11, 10, 12, 0, tzinfo=UTC), datetime(2026, 11, 10, 12, 1, tzinfo=UTC)]


def test_separate_pools_add_up(database):
    when = [T0]
    recorder(database, Pool("inprocess:host:1", {"m@a": 1}), when).sample()
    recorder(database, Pool("inprocess:host:2", {"m@a": 1}), when).sample()
    assert total(database, "m@a") == 2


async def test_the_loop_samples_until_stopped(database):
    source = Pool("inprocess:host:1", {"m@a": 1})
    rec = ReplicaRecorder(database, source, RecorderConfig(interval_s=0.01), clock=lambda: T0)
    await rec.start()
    await asyncio.sleep(0.1)
    await rec.stop()
    assert total(database, "m@a") == 1  # many samples, one minute


def test_interval_must_see_every_minute():
    for bad in (0, -1, 61):
        with pytest.raises(ValueError, match="interval_s"):
            RecorderConfig(interval_s=bad)
