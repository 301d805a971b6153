import asyncio
import json
import logging
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import select

from gateway.billing.ledger import Ledger, UsageRecord
from gateway.billing.prices import PriceBook
from gateway.billing.spool import REJECTED, Spool, SpoolConfig
from gateway.crud.prices import set_price
from gateway.crud.tenants import create_tenant
from gateway.crud.usage import month_tokens
from gateway.db.models import Usage
from gateway.domain.period import Month

MODEL = "m"
NOV = datetime(2026, 11, 15, tzinfo=UTC)


@pytest.fixture
def tenant_id(database):
    with database.session() as s:
        set_price(s, model=MODEL, input_per_million=Decimal("0.1"), output_per_million=Decimal("0.3"),
                  effective_from=datetime(2026, 1, 1, tzinfo=UTC))
        return create_tenant(s, name="acme").id


@pytest.fixture
def ledger(database):
    return Ledger(database, PriceBook(database), "EUR", batch_size=100, linger_s=0.01, retry_delay_s=0)


def rec(tenant_id: str, n: int | str, **kw) -> UsageRecord:
    return UsageRecord(**{"request_id": f"req-{n}", "tenant_id": tenant_id, "key_id": None,
                          "endpoint": "/v1/chat/completions", "model": MODEL, "prompt_tokens": 10,
                          "completion_tokens": 5, "created_at": NOV, **kw})


def rows(database) -> list[Usage]:
    with database.session() as s:
        return list(s.scalars(select(Usage).order_by(Usage.request_id)))


async def test_record_returns_at_once_and_flush_writes_with_cost(database, tenant_id, ledger):
    ledger.record(rec(tenant_id, 1, prompt_tokens=1000, completion_tokens=500, version="m@v1"))
    assert ledger.pending == 1 and rows(database) == []
    await ledger.flush()
    [row] = rows(database)
    assert (row.cost, row.currency, row.version, row.status) == (Decimal("0.00025"), "EUR", "m@v1", "ok")
    assert row.created_at == NOV


async def test_idempotent_by_request_id(database, tenant_id, ledger):
    ledger.record(rec(tenant_id, 1))
    ledger.record(rec(tenant_id, 1, prompt_tokens=999))  # the same request, in the same batch
    await ledger.flush()
    ledger.record(rec(tenant_id, 1, prompt_tokens=777))  # and again later
    await ledger.flush()
    [row] = rows(database)
    assert row.prompt_tokens == 10


async def test_background_writer_batches_and_close_loses_nothing(database, tenant_id, ledger, monkeypatch):
    batches = []
    insert = ledger._insert
    monkeypatch.setattr(ledger, "_insert", lambda batch: (batches.append(len(batch)), insert(batch)))
    await ledger.start()
    for i in range(250):
        ledger.record(rec(tenant_id, i))
    await ledger.close()
    assert len(rows(database)) == 250
    assert sum(batches) == 250 and max(batches) <= 100 and len(batches) <= 5


async def test_writer_runs_without_flush(database, tenant_id, ledger):
    await ledger.start()
    ledger.record(rec(tenant_id, 1))
    for _ in range(100):
        if rows(database):
            break
        await asyncio.sleep(0.02)
    assert len(rows(database)) == 1
    await ledger.close()


async def test_record_from_another_thread(database, tenant_id, ledger):
    await ledger.start()
    await asyncio.to_thread(ledger.record, rec(tenant_id, "thread"))
    await ledger.close()
    assert [r.request_id for r in rows(database)] == ["req-thread"]


async def test_record_after_close_is_written_synchronously(database, tenant_id, ledger):
    await ledger.start()
    await ledger.close()
    ledger.record(rec(tenant_id, "late"))
    assert [r.request_id for r in rows(database)] == ["req-late"]


async def test_transient_failures_are_retried(database, tenant_id, ledger, monkeypatch):
    insert, calls = ledger._insert, []

    def flaky(batch):
        calls.append(1)
        if len(calls) <= 2:
            raise ConnectionError("database restarting")
        insert(batch)

    monkeypatch.setattr(ledger, "_insert", flaky)
    for i in range(3):
        ledger.record(rec(tenant_id, i))
    await ledger.flush()
    assert len(rows(database)) == 3 and len(calls) == 3


async def test_a_bad_row_does_not_sink_its_batch_and_is_kept_loudly(database, tenant_id, ledger, caplog):
    ledger.record(rec(tenant_id, "good"))
    ledger.record(rec("no-such-tenant", "orphan"))  # violates the tenant foreign key
    with caplog.at_level(logging.ERROR, logger="gateway.billing.ledger"):
        await ledger.flush()
    assert [r.request_id for r in rows(database)] == ["req-good"]
    assert ledger.rejected == 1
    assert any(r.levelno == logging.CRITICAL and "req-orphan" in r.getMessage() for r in caplog.records)


async def test_with_a_spool_a_bad_row_is_set_aside_in_the_rejected_file(database, tenant_id, tmp_path):
    spool = Spool(SpoolConfig(tmp_path / "spool"))
    ledger = Ledger(database, PriceBook(database), "EUR", spool=spool, linger_s=0, retry_delay_s=0)
    ledger.record(rec(tenant_id, "good"))
    ledger.record(rec("no-such-tenant", "orphan"))
    await ledger.flush()
    assert [r.request_id for r in rows(database)] == ["req-good"]
    [kept] = [json.loads(line) for line in (tmp_path / "spool" / REJECTED).read_text().splitlines()]
    assert kept["row"]["request_id"] == "req-orphan" and "IntegrityError" in kept["reason"]
    assert ledger.rejected == 1 and ledger.spooled == 0 and not spool.pending


async def test_unpriced_model_keeps_its_tokens_with_no_cost(database, tenant_id, ledger, caplog):
    with caplog.at_level(logging.ERROR, logger="gateway.billing.ledger"):
        ledger.record(rec(tenant_id, 1, model="unpriced"))
        await ledger.flush()
    [row] = rows(database)
    assert row.cost is None and row.prompt_tokens == 10
    assert any("unpriced" in r.getMessage() for r in caplog.records)


async def test_month_tokens_counts_prompt_and_completion_in_that_month(database, tenant_id, ledger):
    ledger.record(rec(tenant_id, 1))
    ledger.record(rec(tenant_id, 2, prompt_tokens=100, completion_tokens=0))
    ledger.record(rec(tenant_id, 3, created_at=datetime(2026, 12, 1, tzinfo=UTC)))
    ledger.record(rec(tenant_id, 4, created_at=datetime(2026, 10, 31, 23, 59, 59, tzinfo=UTC)))
    await ledger.flush()
    with database.session() as s:
        assert month_tokens(s, tenant_id=tenant_id, month=Month(2026, 11)) == 115
        assert month_tokens(s, tenant_id=tenant_id, month=Month(2026, 12)) == 15
        assert month_tokens(s, tenant_id=tenant_id, month=Month(2026, 9)) == 0


def test_bad_configuration_is_refused(database):
    with pytest.raises(ValueError):
        Ledger(database, PriceBook(database), batch_size=0)


async def test_engine_ms_is_kept_per_row_and_through_the_spool(database, tenant_id, ledger):
    from gateway.billing.ledger import record_from_json, record_to_json

    ledger.record(rec(tenant_id, 1, version="m@v1", engine_ms=12.345))
    ledger.record(rec(tenant_id, 2, cache_hit=True, engine_ms=0.0))  # a semantic-cache hit: no engine work
    ledger.record(rec(tenant_id, 3))  # not metered (embeddings, an older replica)
    await ledger.flush()
    assert [r.engine_ms for r in rows(database)] == [12.345, 0.0, None]
    spooled = rec(tenant_id, 4, engine_ms=1.5)
    assert record_from_json(json.loads(json.dumps(record_to_json(spooled)))) == spooled
    old = record_to_json(rec(tenant_id, 5))
    del old["engine_ms"]  # a row spooled before the column existed
    assert record_from_json(old).engine_ms is None
