"""A batch survives its gateway: stopped mid-batch and started again it resumes, and a line whose record was
lost after it was billed runs again without a second bill: every line exactly once in the output, the
ledger and the batch's `usage`."""
from __future__ import annotations

import time

import httpx

from tests.gateway.api.v1.batches.conftest import auth, batch_of, chat_line, content, serve, wait_for
from tests.gateway.support import CannedBackend, make_tenant, wait_usage_rows


def _exactly_once(db, tenant_id: str, out: list[dict], n: int, batch: dict) -> None:
    assert sorted(o["custom_id"] for o in out) == sorted(f"req-{i}" for i in range(n))
    rows = wait_usage_rows(db[1], tenant_id, n)
    time.sleep(0.3)  # nothing more lands
    rows = wait_usage_rows(db[1], tenant_id, n)
    assert len(rows) == n and {r.kind for r in rows} == {"batch"}
    assert {r.request_id for r in rows} == {o["response"]["request_id"] for o in out}
    assert all(r.status == "ok" and r.completion_tokens == 8 for r in rows)
    billed_in, billed_out = sum(r.prompt_tokens for r in rows), sum(r.completion_tokens for r in rows)
    assert batch["usage"] == {"input_tokens": billed_in,
                              "input_tokens_details": {"cached_tokens": sum(r.cached_tokens for r in rows)},
                              "output_tokens": billed_out, "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": billed_in + billed_out}
    assert billed_in > 0 and billed_out == 8 * n


def _get(server, key: str, batch_id: str) -> dict:
    return httpx.get(f"{server.url}/v1/batches/{batch_id}", headers=auth(key), timeout=30).json()


def test_a_gateway_restarted_mid_batch_resumes_it(db):
    tenant_id, key = make_tenant(db[1])
    n = 40
    with serve(db, CannedBackend(tokens=8, delay_s=0.02)) as first:
        made = batch_of(first, key, [chat_line(i) for i in range(n)])
        deadline = time.monotonic() + 30
        while _get(first, key, made["id"])["request_counts"]["completed"] < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
    with serve(db, CannedBackend(tokens=8, delay_s=0.02), batch_runner_enabled=False) as idle:
        mid = _get(idle, key, made["id"])  # as the stopped gateway left it
    assert 8 <= mid["request_counts"]["completed"] < n and mid["status"] == "in_progress"
    with serve(db, CannedBackend(tokens=8, delay_s=0.02)) as second:
        done = wait_for(second, key, made["id"])
        assert done["status"] == "completed" and done["request_counts"] == {"total": n, "completed": n, "failed": 0}
        _exactly_once(db, tenant_id, content(second, key, done["output_file_id"]), n, done)


def test_a_line_whose_record_was_lost_runs_again_and_bills_once(db):
    tenant_id, key = make_tenant(db[1])
    n = 10
    with serve(db, CannedBackend(tokens=8)) as server:
        store = server.server.config.app.state.batch_runner.store  # the app under uvicorn
        real, lost = store.record_line, []

        async def crash_once(batch_id, line, ok, output, **usage):
            if line == 4 and not lost:  # as if the process died after the ledger row, before the record
                lost.append(line)
                raise RuntimeError("killed")
            return await real(batch_id, line, ok, output, **usage)

        store.record_line = crash_once
        made = batch_of(server, key, [chat_line(i) for i in range(n)])
        done = wait_for(server, key, made["id"])
        assert lost == [4] and done["status"] == "completed" and done["request_counts"]["completed"] == n
        _exactly_once(db, tenant_id, content(server, key, done["output_file_id"]), n, done)
