"""Files over a real database (SQLite and PostgreSQL): the tenant's storage quota (racing uploads included),
expired files hidden at once and swept later, and what the runner does about expiry."""
from __future__ import annotations

import json
import threading
from datetime import timedelta

import pytest

from gateway.batch.ids import new_file_id
from gateway.crud import batch_files
from gateway.crud.tenants import create_tenant
from gateway.db.models.batch_file import BatchFile
from gateway.db.models.tenant import Tenant
from gateway.db.types import utcnow
from gateway.domain import batch_state as state
from tests.gateway.batch.test_runner import FakeEndpoint, get, make_batch, runner, until


def _tenant(database, **fields) -> str:
    with database.session() as s:
        return create_tenant(s, name=f"t-{new_file_id()}", **fields).id


def _put(database, tenant_id: str, size: int, *, quota: int | None = 1000, expires_in_s: float | None = None,
         purpose: str = "batch") -> str:
    now = utcnow()
    with database.session() as s:
        return batch_files.create_file(
            s, tenant_id=tenant_id, file_id=new_file_id(), filename="f.jsonl", purpose=purpose, content=b"x" * size,
            created_at=now, quota=quota,
            expires_at=None if expires_in_s is None else now + timedelta(seconds=expires_in_s)).id


def test_uploads_fit_the_quota_counting_unexpired_files_and_outputs(database):
    tenant = _tenant(database)
    _put(database, tenant, 400)
    _put(database, tenant, 300, quota=None, purpose="batch_output")  # written by the system: never refused
    _put(database, tenant, 250, expires_in_s=-1)  # expired: no longer counts
    _put(database, tenant, 300)  # 1000 exactly
    with pytest.raises(batch_files.StorageFull) as e:
        _put(database, tenant, 1)
    assert (e.value.limit, e.value.used, e.value.size) == (1000, 1000, 1)
    assert "1000 bytes" in str(e.value)


def test_a_tenants_own_quota_wins_over_the_default(database):
    tenant = _tenant(database, files_max_bytes=100)
    with pytest.raises(batch_files.StorageFull):
        _put(database, tenant, 101)
    with database.session() as s:
        s.get(Tenant, tenant).files_max_bytes = 5000
        s.commit()
    _put(database, tenant, 2000)


def test_racing_uploads_never_overshoot_the_quota(database):
    tenant, outcomes, start = _tenant(database), [], threading.Barrier(6)

    def upload():
        start.wait()
        try:
            _put(database, tenant, 300)
            outcomes.append("stored")
        except batch_files.StorageFull:
            outcomes.append("full")

    threads = [threading.Thread(target=upload) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["full"] * 3 + ["stored"] * 3  # 3 x 300 fit in 1000, a 4th never does
    with database.session() as s:
        assert batch_files.stored_bytes(s, tenant_id=tenant) == 900


def test_an_expired_file_is_gone_at_once_and_swept_later(database):
    tenant = _tenant(database)
    live, gone = _put(database, tenant, 10, expires_in_s=3600), _put(database, tenant, 10, expires_in_s=-1)
    with database.session() as s:
        assert batch_files.get_file(s, tenant_id=tenant, file_id=gone) is None
        assert batch_files.file_content(s, tenant_id=tenant, file_id=gone) is None
        assert [f.id for f in batch_files.list_files(s, tenant_id=tenant)] == [live]
        assert batch_files.expired_at(s, tenant_id=tenant, file_id=gone) is not None
        assert batch_files.expired_at(s, tenant_id=tenant, file_id=live) is None
        assert batch_files.delete_expired(s, now=utcnow()) >= 1
        assert batch_files.delete_expired(s, now=utcnow()) == 0  # idempotent: a second sweeper finds nothing
        assert s.get(BatchFile, gone) is None and s.get(BatchFile, live) is not None


def _expire_input(database, batch_id: str) -> str:
    with database.session() as s:
        b = get(database, batch_id)
        s.get(BatchFile, b.input_file_id).expires_at = utcnow() - timedelta(seconds=1)
        s.commit()
        return b.input_file_id


async def test_a_batch_whose_input_expired_fails_naming_the_file(database):
    batch_id, _ = make_batch(database, 3)
    file_id = _expire_input(database, batch_id)
    r = runner(database, FakeEndpoint(), sweep_s=3600)
    await r.start()
    await until(lambda: get(database, batch_id).status == state.FAILED)
    await r.stop()
    [error] = json.loads(bytes(get(database, batch_id).errors))
    assert error["code"] == "file_expired" and file_id in error["message"] and error["param"] == "input_file_id"


async def test_outputs_expire_after_the_default_and_the_runner_sweeps(database):
    swept_id, _ = make_batch(database, 1)
    swept_file = _expire_input(database, swept_id)
    batch_id, _ = make_batch(database, 2, fail={1})
    r = runner(database, FakeEndpoint(), output_expires_s=7 * 86400, sweep_s=0.05)
    await r.start()
    await until(lambda: get(database, batch_id).status == state.COMPLETED)
    await until(lambda: _row(database, swept_file) is None)  # the runner's sweep deleted it
    await r.stop()
    b = get(database, batch_id)
    for file_id in (b.output_file_id, b.error_file_id):
        ttl = _row(database, file_id).expires_at - _row(database, file_id).created_at
        assert ttl == timedelta(days=7)


def _row(database, file_id: str) -> BatchFile | None:
    with database.session() as s:
        return s.get(BatchFile, file_id)
