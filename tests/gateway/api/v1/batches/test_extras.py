"""What OpenAI's objects carry beyond the basics, over HTTP and the official SDK: a batch's `usage` (the bill's),
files that expire (expires_after; batch outputs after a default), and a tenant's storage quota, set by the admin
API (audited) and refused with a 413 in OpenAI's error shape."""
from __future__ import annotations

import time
from datetime import timedelta

import httpx
import openai
import pytest
from openai import OpenAI

from gateway.db.database import Database
from gateway.db.models.batch_file import BatchFile
from gateway.db.types import utcnow
from tests.gateway.api.v1.batches.conftest import auth, batch_of, chat_line, create, jsonl, upload, serve, wait_for
from tests.gateway.data_fixtures import assert_openai_error
from tests.gateway.support import ADMIN_KEY, CannedBackend, make_tenant, wait_usage_rows

OUTPUT_TTL_S = 5 * 86400


@pytest.fixture(scope="module")
def live(db):
    with serve(db, CannedBackend(tokens=3), batch_output_expires_s=OUTPUT_TTL_S) as server:
        yield server


def test_the_sdk_sets_expires_after_and_reads_the_batchs_usage_off_the_bill(db, live):
    tenant_id, key = make_tenant(db[1])
    client = OpenAI(base_url=f"{live.url}/v1", api_key=key, max_retries=0)
    lines = [chat_line(i) for i in range(5)]
    f = client.files.create(file=("in.jsonl", jsonl(lines)), purpose="batch",
                            expires_after={"anchor": "created_at", "seconds": 7200})
    assert f.status == "processed" and f.expires_at == f.created_at + 7200
    assert client.files.retrieve(f.id).expires_at == f.expires_at
    batch = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
    done = wait_for(live, key, batch.id)
    assert done["status"] == "completed"
    batch = client.batches.retrieve(batch.id)
    rows = wait_usage_rows(db[1], tenant_id, 5)
    bill = httpx.get(f"{live.url}/admin/tenants/{tenant_id}/bill", headers=auth(ADMIN_KEY)).json()
    (line,) = bill["lines"]
    assert line["kind"] == "batch" and line["requests"] == len(rows) == 5
    u = batch.usage
    assert (u.input_tokens, u.input_tokens_details.cached_tokens, u.output_tokens) == (
        line["prompt_tokens"], line["cached_tokens"], line["completion_tokens"])
    assert u.total_tokens == u.input_tokens + u.output_tokens and u.output_tokens == 15
    assert u.output_tokens_details.reasoning_tokens == 0
    out = client.files.retrieve(batch.output_file_id)
    assert out.expires_at == out.created_at + OUTPUT_TTL_S  # a batch's outputs: the gateway's default


def test_a_new_batch_reports_zero_usage(db, live):
    _, key = make_tenant(db[1])
    up = upload(live, key, jsonl([chat_line(0)]))
    assert up.json()["expires_at"] is None and up.json()["status"] == "processed"  # none asked: never
    made = create(live, key, up.json()["id"]).json()
    assert made["usage"] == {"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 0,
                             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 0}


@pytest.mark.parametrize("fields, param", [
    ({"expires_after[anchor]": "created_at", "expires_after[seconds]": "3599"}, "expires_after[seconds]"),
    ({"expires_after[anchor]": "created_at", "expires_after[seconds]": "2592001"}, "expires_after[seconds]"),
    ({"expires_after[anchor]": "created_at", "expires_after[seconds]": "soon"}, "expires_after[seconds]"),
    ({"expires_after[anchor]": "created_at"}, "expires_after[seconds]"),
    ({"expires_after[anchor]": "uploaded", "expires_after[seconds]": "3600"}, "expires_after[anchor]"),
    ({"expires_after[seconds]": "3600"}, "expires_after[anchor]"),
])
def test_bad_expires_after_is_a_400_naming_the_field(db, live, fields, param):
    _, key = make_tenant(db[1])
    r = httpx.post(f"{live.url}/v1/files", headers=auth(key), data={"purpose": "batch", **fields},
                   files={"file": ("in.jsonl", jsonl([chat_line(0)]), "application/jsonl")})
    assert_openai_error(r, 400, param=param)


def _expire(db, file_id: str) -> None:
    database = Database(db[1])
    try:
        with database.session() as s:
            s.get(BatchFile, file_id).expires_at = utcnow() - timedelta(seconds=1)
            s.commit()
    finally:
        database.dispose()


def test_an_expired_file_is_gone_for_its_tenant(db, live):
    _, key = make_tenant(db[1])
    kept, gone = (upload(live, key, jsonl([chat_line(i)])).json()["id"] for i in range(2))
    _expire(db, gone)
    for path in (f"/v1/files/{gone}", f"/v1/files/{gone}/content"):
        assert_openai_error(httpx.get(f"{live.url}{path}", headers=auth(key)), 404, code="not_found")
    assert [f["id"] for f in httpx.get(f"{live.url}/v1/files", headers=auth(key)).json()["data"]] == [kept]
    assert_openai_error(create(live, key, gone), 404, param="input_file_id")


def test_the_storage_quota_set_by_the_admin_api_refuses_uploads_with_a_413(db, live):
    tenant_id, key = make_tenant(db[1])
    content = jsonl([chat_line(0)])
    admin = {"Authorization": f"Bearer {ADMIN_KEY}", "x-tollgate-actor": "ops"}
    r = httpx.patch(f"{live.url}/admin/tenants/{tenant_id}", headers=admin, json={"files_max_bytes": 2 * len(content)})
    assert r.status_code == 200 and r.json()["files_max_bytes"] == 2 * len(content)
    audit = httpx.get(f"{live.url}/admin/audit", headers=admin).json()["data"][0]
    assert audit["action"] == "tenant.update" and audit["after"]["files_max_bytes"] == 2 * len(content)
    assert audit["before"]["files_max_bytes"] is None
    done = wait_for(live, key, batch_of(live, key, [chat_line(0)])["id"])  # its output would not fit the quota
    assert done["status"] == "completed" and done["output_file_id"] is None and done["error_file_id"]
    assert done["errors"]["data"][0]["code"] == "output_limit_exceeded"
    assert "file storage quota" in done["errors"]["data"][0]["message"]
    error = assert_openai_error(upload(live, key, content), 413, param="file", code="storage_quota_exceeded")
    assert "quota" in error["message"] and str(2 * len(content)) in error["message"]
    client = OpenAI(base_url=f"{live.url}/v1", api_key=key)  # the SDK's own retries: a 413 is not retried
    started = time.monotonic()
    with pytest.raises(openai.APIStatusError) as e:
        client.files.create(file=("in.jsonl", content), purpose="batch")
    assert e.value.status_code == 413 and time.monotonic() - started < 0.5
    bad = httpx.patch(f"{live.url}/admin/tenants/{tenant_id}", headers=admin, json={"files_max_bytes": -1})
    assert bad.status_code == 400, bad.text
    r = httpx.patch(f"{live.url}/admin/tenants/{tenant_id}", headers=admin, json={"files_max_bytes": None})
    assert r.json()["files_max_bytes"] is None  # back to the gateway's default
    assert upload(live, key, content).status_code == 200
