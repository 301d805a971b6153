"""Batches under the tenant's limits: a rate limit pauses the batch (no line fails), a spent budget fails the
lines it refuses, cleanly, in the error file; cancel through the API."""
from __future__ import annotations

import httpx

from tests.gateway.api.v1.batches.conftest import auth, batch_of, chat_line, content, serve, wait_for
from tests.gateway.support import CannedBackend, make_tenant


def test_a_rate_limit_pauses_the_batch_and_every_line_still_runs(db):
    _, key = make_tenant(db[1], rpm=2)
    # A whole-second window: the upload and the batch's creation count against the RPM too, and the counter
    # keys are named by the window's start in whole seconds (two half-second windows would share one).
    with serve(db, CannedBackend(tokens=2), limit_window_s=1.0) as server:
        done = wait_for(server, key, batch_of(server, key, [chat_line(i, max_tokens=2) for i in range(4)])["id"])
        assert done["status"] == "completed" and done["request_counts"] == {"total": 4, "completed": 4, "failed": 0}
        assert done["error_file_id"] is None


def test_a_spent_budget_fails_the_lines_it_refuses(db):
    _, key = make_tenant(db[1], monthly_token_budget=40)
    with serve(db, CannedBackend(tokens=8), batch_concurrency=1) as server:
        done = wait_for(server, key, batch_of(server, key, [chat_line(i, max_tokens=8) for i in range(8)])["id"])
        assert done["status"] == "completed"
        counts = done["request_counts"]
        assert counts["total"] == 8 and counts["completed"] >= 1 and counts["failed"] >= 1
        errors = content(server, key, done["error_file_id"])
        assert len(errors) == counts["failed"]
        for e in errors:
            assert e["error"] is None and e["response"]["status_code"] == 429
            assert e["response"]["body"]["error"]["code"] == "insufficient_quota"


def test_cancel_through_the_api(db):
    _, key = make_tenant(db[1])
    with serve(db, CannedBackend(tokens=8, delay_s=0.05), batch_concurrency=1) as server:
        made = batch_of(server, key, [chat_line(i) for i in range(100)])
        cancelling = httpx.post(f"{server.url}/v1/batches/{made['id']}/cancel", headers=auth(key))
        assert cancelling.status_code == 200 and cancelling.json()["status"] == "cancelling"
        done = wait_for(server, key, made["id"])
        assert done["status"] == "cancelled" and isinstance(done["cancelled_at"], int)
        assert done["request_counts"]["completed"] < 100
        again = httpx.post(f"{server.url}/v1/batches/{made['id']}/cancel", headers=auth(key))
        assert again.status_code == 200 and again.json()["status"] == "cancelled"  # idempotent
        finished = wait_for(server, key, batch_of(server, key, [chat_line(0)])["id"])
        late = httpx.post(f"{server.url}/v1/batches/{finished['id']}/cancel", headers=auth(key))
        assert late.status_code == 409 and late.json()["error"]["code"] == "batch_not_cancellable"
