"""The ledger's local spool: the file format and its bounds, then the ledger spooling what the
database cannot take and replaying it, idempotently, once the database answers again."""
import asyncio
import json
import os
import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

import gateway.billing.spool as spool_module
from gateway.billing.ledger import Ledger, LedgerFull, UsageRecord, record_from_json, record_to_json
from gateway.billing.prices import PriceBook
from gateway.billing.spool import REJECTED, SEGMENT_GLOB, Spool, SpoolConfig
from gateway.crud.prices import set_price
from gateway.crud.tenants import create_tenant
from gateway.db.models import Usage

MODEL = "m"
NOV = datetime(2026, 11, 15, tzinfo=UTC)


def row(n: int) -> dict:
    return {"request_id": f"req-{n}", "n": n}


def lines(spool: Spool) -> list[dict]:
    return [json.loads(line) for p in sorted(spool.config.directory.glob(SEGMENT_GLOB))
            for line in p.read_text().splitlines()]


def replay_all(spool: Spool) -> list[dict]:
    """What a replayer would read, deleting each segment as if its rows were committed."""
    out = []
    spool.seal()
    for path in spool.segments():
        with spool.take(path) as segment:
            if segment is not None:
                out += segment.rows
                spool.remove(segment)
    return out


# --- the spool on its own


def test_append_writes_json_lines_and_fsyncs_once_per_batch(tmp_path, monkeypatch):
    spool = Spool(SpoolConfig(tmp_path))
    spool.open()
    fsyncs = []
    real = spool_module.os.fsync
    monkeypatch.setattr(spool_module.os, "fsync", lambda fd: (fsyncs.append(fd), real(fd)))
    spool.append([row(1), row(2)])  # a new segment: its directory entry, then the batch
    spool.append([row(3)])
    spool.append([row(4), row(5), row(6)])
    assert len(fsyncs) == 2 + 1 + 1
    assert [r["n"] for r in lines(spool)] == [1, 2, 3, 4, 5, 6]
    assert spool.pending and spool.bytes == sum(p.stat().st_size for p in tmp_path.glob(SEGMENT_GLOB))


def test_segments_rotate_and_replay_in_order(tmp_path):
    spool = Spool(SpoolConfig(tmp_path, segment_bytes=60))
    for i in range(10):
        spool.append([row(i)])
    assert len(list(tmp_path.glob(SEGMENT_GLOB))) > 3
    assert [r["n"] for r in replay_all(spool)] == list(range(10))
    assert list(tmp_path.glob(SEGMENT_GLOB)) == [] and not spool.pending and spool.bytes == 0


def test_full_past_max_bytes_yet_never_refuses_a_row(tmp_path):
    spool = Spool(SpoolConfig(tmp_path, max_bytes=100, segment_bytes=40))
    spool.append([row(1)])
    assert not spool.full
    for i in range(2, 8):
        spool.append([row(i)])  # rows of requests already running still go in
    assert spool.full and spool.bytes > 100
    assert len(lines(spool)) == 7
    replay_all(spool)
    assert not spool.full


def test_a_failed_write_makes_the_spool_full_until_one_succeeds(tmp_path, monkeypatch):
    spool = Spool(SpoolConfig(tmp_path))
    spool.append([row(1)])
    monkeypatch.setattr(spool_module, "_write_all", lambda fd, data: (_ for _ in ()).throw(OSError(28, "No space")))
    with pytest.raises(OSError):
        spool.append([row(2)])
    assert spool.full
    monkeypatch.undo()
    spool.append([row(3)])
    assert not spool.full
    assert [r["n"] for r in replay_all(spool)] == [1, 3]


def test_a_segment_being_written_is_never_taken_until_sealed(tmp_path):
    writer, replayer = Spool(SpoolConfig(tmp_path)), Spool(SpoolConfig(tmp_path))
    writer.append([row(1)])
    [path] = replayer.segments()
    with replayer.take(path) as segment:
        assert segment is None  # the writer holds it
    writer.seal()
    with replayer.take(path) as segment:
        assert [r["n"] for r in segment.rows] == [1]


def test_a_new_process_counts_leftovers_and_never_appends_to_them(tmp_path):
    first = Spool(SpoolConfig(tmp_path))
    first.append([row(1)])
    # A crash mid-write: the last line is cut short.
    [path] = list(tmp_path.glob(SEGMENT_GLOB))
    with open(path, "ab") as f:
        f.write(b'{"request_id": "req-2", "n"')
    os.close(first._active)  # the process died: its lock went with it
    first._active = None

    second = Spool(SpoolConfig(tmp_path))
    second.open()
    assert second.pending and second.bytes == path.stat().st_size
    second.append([row(3)])
    assert path.read_bytes().endswith(b'"n"')  # untouched: row 3 went to a segment of its own
    second.seal()
    taken = []
    for p in second.segments():
        with second.take(p) as segment:
            taken.append(([r["n"] for r in segment.rows], segment.bad_lines))
    assert taken == [([1], ['{"request_id": "req-2", "n"']), ([3], [])]


def test_rejected_rows_go_to_their_own_file(tmp_path):
    spool = Spool(SpoolConfig(tmp_path))
    spool.reject([{"reason": "bad", "row": row(1)}])
    assert json.loads((tmp_path / REJECTED).read_text())["row"]["n"] == 1
    assert not spool.pending  # never replayed


def test_bad_configuration_is_refused(tmp_path):
    with pytest.raises(ValueError):
        SpoolConfig(tmp_path, max_bytes=0)


# --- the ledger with a spool


@pytest.fixture
def tenant_id(database):
    with database.session() as s:
        set_price(s, model=MODEL, input_per_million=Decimal("0.1"), output_per_million=Decimal("0.3"),
                  effective_from=datetime(2026, 1, 1, tzinfo=UTC))
        return create_tenant(s, name="acme").id


def rec(tenant_id: str, n: int | str, **kw) -> UsageRecord:
    return UsageRecord(**{"request_id": f"req-{n}", "tenant_id": tenant_id, "key_id": None,
                          "endpoint": "/v1/chat/completions", "model": MODEL, "prompt_tokens": 1000,
                          "completion_tokens": 500, "created_at": NOV, **kw})


def usage(database) -> list[Usage]:
    with database.session() as s:
        return list(s.scalars(select(Usage).order_by(Usage.request_id)))


class Outage:
    """Makes the ledger's inserts fail as an unreachable database does, until `end()`."""

    def __init__(self, ledger: Ledger, monkeypatch, *, after: int | None = None) -> None:
        self.down, self.calls, self._after, self._insert = True, 0, after, ledger._insert
        monkeypatch.setattr(ledger, "_insert", self.insert)
        monkeypatch.setattr(ledger, "_reachable", lambda: not self.down)

    def insert(self, batch) -> None:
        self.calls += 1
        if self.down and (self._after is None or self.calls > self._after):
            raise OperationalError("INSERT INTO usage_ledger", {}, ConnectionRefusedError("connection refused"))
        self._insert(batch)

    def end(self) -> None:
        self.down = False


def spooled_ledger(database, tmp_path, **kw) -> Ledger:
    spool = Spool(SpoolConfig(tmp_path / "spool", **kw.pop("spool", {})))
    return Ledger(database, PriceBook(database), "EUR", spool=spool, linger_s=0, retry_delay_s=0,
                  replay_interval_s=0.05, **kw)


def test_records_round_trip_through_json():
    r = rec("t", 1, version="m@v1", cache_hit=True, ttft_ms=1.5)
    assert record_from_json(json.loads(json.dumps(record_to_json(r)))) == r


async def test_database_down_rows_are_spooled_at_once_and_billed_once_back(database, tenant_id, tmp_path,
                                                                          monkeypatch):
    ledger = spooled_ledger(database, tmp_path)
    outage = Outage(ledger, monkeypatch)
    for i in range(5):
        ledger.record(rec(tenant_id, i))
    await ledger.flush()
    assert outage.calls == 1  # an unreachable database is not retried: the spool is durable now
    assert ledger.spooled == 5 and ledger.pending == 0 and usage(database) == []
    assert await ledger.replay() == 0  # still down: the segment stays
    outage.end()
    assert await ledger.replay() == 5
    rows = usage(database)
    assert [r.request_id for r in rows] == [f"req-{i}" for i in range(5)]
    assert all(r.cost == Decimal("0.00025") and r.currency == "EUR" for r in rows)
    assert not ledger.spool.pending and await ledger.replay() == 0


async def test_an_insert_that_hangs_is_spooled_and_never_billed_twice(database, tenant_id, tmp_path,
                                                                    monkeypatch):
    ledger = spooled_ledger(database, tmp_path, write_timeout_s=0.1)
    insert = ledger._insert
    monkeypatch.setattr(ledger, "_insert", lambda batch: (time.sleep(0.3), insert(batch)))
    ledger.record(rec(tenant_id, 1))
    await ledger.flush()
    assert ledger.spooled == 1  # durable without waiting on the database
    await asyncio.sleep(0.4)  # the slow insert lands after all ...
    monkeypatch.setattr(ledger, "_insert", insert)
    await ledger.replay()  # ... and the replay skips its row
    assert [r.request_id for r in usage(database)] == ["req-1"] and not ledger.spool.pending


async def test_replay_never_bills_twice(database, tenant_id, tmp_path, monkeypatch):
    ledger = spooled_ledger(database, tmp_path)
    ledger.record(rec(tenant_id, "landed"))  # in the database already (say the ack was lost) ...
    await ledger.flush()
    outage = Outage(ledger, monkeypatch)
    ledger.record(rec(tenant_id, "landed", prompt_tokens=7))  # ... and spooled as well
    ledger.record(rec(tenant_id, "new"))
    await ledger.flush()
    outage.end()
    await ledger.replay()
    await ledger.replay()
    rows = usage(database)
    assert [(r.request_id, r.prompt_tokens) for r in rows] == [("req-landed", 1000), ("req-new", 1000)]


async def test_a_replay_cut_short_leaves_the_segment_for_the_next(database, tenant_id, tmp_path, monkeypatch):
    ledger = spooled_ledger(database, tmp_path, batch_size=2)
    outage = Outage(ledger, monkeypatch)
    for i in range(5):
        ledger.record(rec(tenant_id, i))
    await ledger.flush()
    # The database answers one replayed batch, then fails again (a crash mid-segment looks the same:
    # some rows committed, the file still there).
    outage.calls, outage._after = 0, 1
    assert await ledger.replay() is not None
    assert len(usage(database)) == 2 and ledger.spool.pending
    outage.end()
    await ledger.replay()
    assert [r.request_id for r in usage(database)] == [f"req-{i}" for i in range(5)]
    assert not ledger.spool.pending


async def test_rows_spooled_before_a_restart_are_billed_after_it(database, tenant_id, tmp_path, monkeypatch):
    before = spooled_ledger(database, tmp_path)
    outage = Outage(before, monkeypatch)
    await before.start()
    for i in range(3):
        before.record(rec(tenant_id, i))
    await before.close()  # shut down while the database is down: the queue drains into the spool
    assert before.spooled == 3 and usage(database) == []
    outage.end()

    after = spooled_ledger(database, tmp_path)
    await after.start()
    for _ in range(100):
        if len(usage(database)) == 3:
            break
        await asyncio.sleep(0.05)
    await after.close()
    assert [r.request_id for r in usage(database)] == ["req-0", "req-1", "req-2"]
    assert after.replayed == 3


async def test_replayed_rows_keep_the_price_of_their_created_at(database, tenant_id, tmp_path, monkeypatch):
    ledger = spooled_ledger(database, tmp_path)
    outage = Outage(ledger, monkeypatch)
    ledger.record(rec(tenant_id, 1))
    await ledger.flush()
    with database.session() as s:  # a price change before the database came back
        set_price(s, model=MODEL, input_per_million=Decimal("9"), output_per_million=Decimal("9"),
                  effective_from=datetime(2026, 12, 1, tzinfo=UTC))
    ledger._prices.reload()
    outage.end()
    await ledger.replay()
    [r] = usage(database)
    assert r.cost == Decimal("0.00025")


async def test_bad_spooled_lines_are_set_aside_and_the_rest_billed(database, tenant_id, tmp_path, monkeypatch):
    ledger = spooled_ledger(database, tmp_path)
    outage = Outage(ledger, monkeypatch)
    ledger.record(rec(tenant_id, 1))
    await ledger.flush()
    ledger.spool.append([{"not": "a usage row"}])
    ledger.spool.seal()
    [path] = ledger.spool.segments()
    with open(path, "ab") as f:  # noqa: ASYNC230 (a test's one small write)
        f.write(b'{"torn')
    outage.end()
    await ledger.replay()
    assert [r.request_id for r in usage(database)] == ["req-1"]
    rejected = [json.loads(line) for line in (tmp_path / "spool" / REJECTED).read_text().splitlines()]
    assert {e.get("line") or json.dumps(e["row"]) for e in rejected} == {'{"torn', '{"not": "a usage row"}'}
    assert not ledger.spool.pending


async def test_background_replay_once_the_database_answers(database, tenant_id, tmp_path, monkeypatch):
    ledger = spooled_ledger(database, tmp_path)
    outage = Outage(ledger, monkeypatch)
    await ledger.start()
    for i in range(3):
        ledger.record(rec(tenant_id, i))
    for _ in range(100):
        if ledger.spooled == 3:
            break
        await asyncio.sleep(0.02)
    outage.end()
    for _ in range(100):
        if len(usage(database)) == 3:
            break
        await asyncio.sleep(0.05)
    await ledger.close()
    assert len(usage(database)) == 3 and not ledger.spool.pending


async def test_no_room_only_while_the_database_is_down_and_the_spool_full(database, tenant_id, tmp_path,
                                                                          monkeypatch):
    ledger = spooled_ledger(database, tmp_path, spool={"max_bytes": 700})  # a row is ~300 bytes
    ledger.ensure_room()
    outage = Outage(ledger, monkeypatch)
    ledger.record(rec(tenant_id, 1))
    await ledger.flush()
    assert ledger.has_room()  # down, but the spool has room
    for i in range(2, 5):
        ledger.record(rec(tenant_id, i))
    await ledger.flush()
    assert ledger.spool.full and not ledger.has_room()
    with pytest.raises(LedgerFull):
        ledger.ensure_room()
    ledger.record(rec(tenant_id, 5))  # a request already running is still billed
    await ledger.flush()
    assert ledger.spooled == 5
    outage.end()
    await ledger.replay()
    assert ledger.has_room() and len(usage(database)) == 5


async def test_rows_the_spool_cannot_take_stay_queued(database, tenant_id, tmp_path, monkeypatch):
    ledger = spooled_ledger(database, tmp_path)
    outage = Outage(ledger, monkeypatch)
    monkeypatch.setattr(spool_module, "_write_all", lambda fd, data: (_ for _ in ()).throw(OSError(28, "No space")))
    ledger.record(rec(tenant_id, 1))
    await ledger.flush()
    assert ledger.pending == 1 and not ledger.has_room()
    outage.end()
    await ledger.flush()
    assert ledger.pending == 0 and len(usage(database)) == 1
