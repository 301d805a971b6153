"""The Files and Batch APIs over HTTP on a canned backend: shapes, outputs by custom_id, bad input (400s,
failed batches), the size cap, cancel, tenant isolation (404s), and billing as batch work at the discount."""
from __future__ import annotations

import httpx
import pytest

from tests.gateway.api.v1.batches.conftest import (MODEL, auth, batch_of, chat_line, content, create, jsonl, serve,
                                                   upload, wait_for)
from tests.gateway.data_fixtures import assert_openai_error
from tests.gateway.support import ADMIN_KEY, CannedBackend, make_tenant, migrate_and_seed, wait_usage_rows


@pytest.fixture(scope="module")
def live(db):
    with serve(db, CannedBackend(tokens=8), files_max_bytes=4096) as server:
        yield server


@pytest.fixture
def tenant(db):
    return make_tenant(db[1])


def test_a_file_round_trips_and_is_listed_and_deleted(live, tenant):
    _, key = tenant
    data = jsonl([chat_line(0)])
    up = upload(live, key, data, filename="mine.jsonl")
    assert up.status_code == 200, up.text
    f = up.json()
    assert f["id"].startswith("file-") and f["object"] == "file" and f["purpose"] == "batch"
    assert (f["bytes"], f["filename"], f["status"]) == (len(data), "mine.jsonl", "processed")
    assert isinstance(f["created_at"], int)
    assert httpx.get(f"{live.url}/v1/files/{f['id']}", headers=auth(key)).json() == f
    assert httpx.get(f"{live.url}/v1/files/{f['id']}/content", headers=auth(key)).content == data
    listed = httpx.get(f"{live.url}/v1/files", headers=auth(key)).json()
    assert listed["object"] == "list" and [x["id"] for x in listed["data"]] == [f["id"]]
    gone = httpx.delete(f"{live.url}/v1/files/{f['id']}", headers=auth(key))
    assert gone.json() == {"id": f["id"], "object": "file", "deleted": True}
    assert_openai_error(httpx.get(f"{live.url}/v1/files/{f['id']}", headers=auth(key)), 404, code="not_found")


@pytest.mark.parametrize("content_, code", [
    (b"", "empty_file"), (b"\n\n", "empty_file"), (b"{not json}\n", "invalid_json_line"),
    (b"[1, 2]\n", "invalid_json_line"), (b"\xff\xfe", "invalid_file_format")])
def test_an_upload_that_is_not_jsonl_is_400(live, tenant, content_, code):
    assert_openai_error(upload(live, tenant[1], content_), 400, param="file", code=code)


def test_upload_mistakes_are_400s_never_500s(live, tenant):
    _, key = tenant
    assert_openai_error(upload(live, key, jsonl([chat_line(0)]), purpose="fine-tune"), 400, param="purpose")
    no_file = httpx.post(f"{live.url}/v1/files", headers=auth(key), data={"purpose": "batch"},
                         files={"other": ("x", b"{}")})
    assert_openai_error(no_file, 400, param="file")
    as_json = httpx.post(f"{live.url}/v1/files", headers=auth(key), json={"purpose": "batch"})
    assert_openai_error(as_json, 400)
    form = {**auth(key), "content-type": "multipart/form-data; boundary=x"}
    broken = httpx.post(f"{live.url}/v1/files", headers=form, content=b"--x\r\nnonsense")
    assert_openai_error(broken, 400)


def test_the_size_cap_is_a_413(live, tenant):
    big = jsonl([chat_line(i) for i in range(60)])  # > 4096 bytes, the cap set above
    assert len(big) > 4096
    assert_openai_error(upload(live, tenant[1], big), 413)


def test_a_batch_runs_every_line_and_reports_by_custom_id(db, live, tenant):
    tenant_id, key = tenant
    lines = [chat_line(i, custom_id=f"c{i}", max_tokens=3 + i % 2) for i in range(6)]
    lines.append(chat_line(6, custom_id="bad", temperature=7))  # the endpoint refuses it: an error line
    made = batch_of(live, key, lines)
    assert made["id"].startswith("batch_") and made["object"] == "batch" and made["status"] == "validating"
    assert made["endpoint"] == "/v1/chat/completions" and made["completion_window"] == "24h"
    assert made["expires_at"] - made["created_at"] == 24 * 3600
    done = wait_for(live, key, made["id"])
    assert done["status"] == "completed", done
    assert done["request_counts"] == {"total": 7, "completed": 6, "failed": 1}
    for stamp in ("in_progress_at", "finalizing_at", "completed_at"):
        assert isinstance(done[stamp], int)
    out = content(live, key, done["output_file_id"])
    assert [o["custom_id"] for o in out] == [f"c{i}" for i in range(6)]
    for i, o in enumerate(out):
        assert o["id"].startswith("batch_req_") and o["error"] is None
        assert o["response"]["status_code"] == 200
        body = o["response"]["body"]
        assert body["object"] == "chat.completion" and body["choices"][0]["message"]["content"] == "a" * (3 + i % 2)
    (err,) = content(live, key, done["error_file_id"])
    assert err["custom_id"] == "bad" and err["error"] is None
    assert err["response"]["status_code"] == 400 and err["response"]["body"]["error"]["param"] == "temperature"
    files = httpx.get(f"{live.url}/v1/files/{done['output_file_id']}", headers=auth(key)).json()
    assert files["purpose"] == "batch_output"
    rows = wait_usage_rows(db[1], tenant_id, 6)
    assert len(rows) == 6 and {r.kind for r in rows} == {"batch"}
    assert {r.request_id for r in rows} == {o["response"]["request_id"] for o in out}
    bill = httpx.get(f"{live.url}/admin/tenants/{tenant_id}/bill", headers=auth(ADMIN_KEY)).json()
    (line,) = bill["lines"]
    assert line["kind"] == "batch" and line["requests"] == 6
    # 0.10 in, 0.30 out per million, halved: the prompt is 2 words a line (the canned count), 3-4 out.
    prompt, completion = sum(r.prompt_tokens for r in rows), sum(r.completion_tokens for r in rows)
    from decimal import Decimal
    full = (Decimal(prompt) * Decimal("0.10") + Decimal(completion) * Decimal("0.30")) / 1_000_000
    assert Decimal(line["cost"]) == full / 2


def test_invalid_lines_fail_the_batch_with_errors_naming_their_lines(live, tenant):
    _, key = tenant
    lines = [chat_line(0), chat_line(1, custom_id="req-0"), {**chat_line(2), "url": "/v1/completions"},
             {**chat_line(3), "method": "GET"}, chat_line(4, stream=True), {**chat_line(5), "body": "hi"}]
    done = wait_for(live, key, batch_of(live, key, lines)["id"])
    assert done["status"] == "failed" and isinstance(done["failed_at"], int)
    errors = done["errors"]["data"]
    assert [(e["line"], e["code"]) for e in errors] == [
        (2, "duplicate_custom_id"), (3, "invalid_url"), (4, "invalid_value"), (5, "invalid_value"),
        (6, "invalid_value")]
    assert [e["param"] for e in errors] == ["custom_id", "url", "method", "body.stream", "body"]
    assert done["output_file_id"] is None and done["request_counts"]["total"] == 0


def test_create_mistakes_are_4xx(live, tenant):
    _, key = tenant
    file_id = upload(live, key, jsonl([chat_line(0)])).json()["id"]
    assert_openai_error(create(live, key, file_id, "/v1/responses"), 400, param="endpoint")
    assert_openai_error(create(live, key, file_id, completion_window="1h"), 400, param="completion_window")
    assert_openai_error(create(live, key, "file-000000000000000000000000"), 404, param="input_file_id")
    assert_openai_error(create(live, key, "nonsense"), 404, param="input_file_id")
    bad = httpx.post(f"{live.url}/v1/batches", headers=auth(key), json={"endpoint": "/v1/chat/completions"})
    assert_openai_error(bad, 400, param="input_file_id")
    assert_openai_error(httpx.post(f"{live.url}/v1/batches", headers=auth(key), content=b"{"), 400)


def test_another_tenants_files_and_batches_are_404(live, tenant, db):
    _, key = tenant
    _, other = make_tenant(db[1])
    made = batch_of(live, key, [chat_line(0)])
    done = wait_for(live, key, made["id"])
    for path in (f"/v1/batches/{made['id']}", f"/v1/files/{made['input_file_id']}",
                 f"/v1/files/{made['input_file_id']}/content", f"/v1/files/{done['output_file_id']}/content"):
        assert_openai_error(httpx.get(f"{live.url}{path}", headers=auth(other)), 404, code="not_found")
    assert_openai_error(httpx.post(f"{live.url}/v1/batches/{made['id']}/cancel", headers=auth(other)), 404)
    assert_openai_error(httpx.delete(f"{live.url}/v1/files/{made['input_file_id']}", headers=auth(other)), 404)
    assert_openai_error(create(live, other, made["input_file_id"]), 404, param="input_file_id")
    assert httpx.get(f"{live.url}/v1/batches", headers=auth(other)).json()["data"] == []
    assert httpx.get(f"{live.url}/v1/files", headers=auth(other)).json()["data"] == []
    assert httpx.get(f"{live.url}/v1/batches/{made['id']}", headers=auth(key)).status_code == 200


def test_batches_are_listed_newest_first_with_paging(live, db):
    _, key = make_tenant(db[1])
    ids = [batch_of(live, key, [chat_line(0)])["id"] for _ in range(3)]
    page = httpx.get(f"{live.url}/v1/batches?limit=2", headers=auth(key)).json()
    assert [b["id"] for b in page["data"]] == ids[::-1][:2] and page["has_more"] is True
    rest = httpx.get(f"{live.url}/v1/batches?limit=2&after={page['last_id']}", headers=auth(key)).json()
    assert [b["id"] for b in rest["data"]] == [ids[0]] and rest["has_more"] is False


class OnesEmbedder:
    """Stands in for MiniLM: every text a unit vector along the first axis, one token per word."""

    def embed(self, texts):
        import numpy as np
        v = np.zeros((len(texts), 4), dtype=np.float32)
        v[:, 0] = 1
        return v

    def count_tokens(self, texts) -> int:
        return sum(len(t.split()) for t in texts)


def test_completions_and_embeddings_batches(tmp_path, gw_catalogue):
    # A database of its own: the module's gateway (embeddings off) would otherwise claim these batches too.
    db = (tmp_path, f"sqlite:///{tmp_path / 'own.db'}")
    migrate_and_seed(db[1], gw_catalogue)
    tenant_id, key = make_tenant(db[1])
    with serve(db, CannedBackend(tokens=2), embeddings_enabled=True, embedder=OnesEmbedder()) as server:
        lines = [{"custom_id": f"p{i}", "method": "POST", "url": "/v1/completions",
                  "body": {"model": MODEL, "prompt": f"count {i}", "max_tokens": 2}} for i in range(3)]
        done = wait_for(server, key, batch_of(server, key, lines, "/v1/completions")["id"])
        assert done["status"] == "completed" and done["request_counts"]["completed"] == 3
        out = content(server, key, done["output_file_id"])
        assert [o["response"]["body"]["choices"][0]["text"] for o in out] == ["aa"] * 3
        assert out[0]["response"]["body"]["object"] == "text_completion"
        lines = [{"custom_id": f"e{i}", "method": "POST", "url": "/v1/embeddings",
                  "body": {"model": "all-minilm-l6-v2", "input": ["one two", "three"]}} for i in range(2)]
        done = wait_for(server, key, batch_of(server, key, lines, "/v1/embeddings")["id"])
        assert done["status"] == "completed" and done["request_counts"]["completed"] == 2
        (first, _) = content(server, key, done["output_file_id"])
        body = first["response"]["body"]
        assert body["object"] == "list" and body["data"][1]["embedding"] == [1.0, 0.0, 0.0, 0.0]
        assert body["usage"]["prompt_tokens"] == 3
    rows = wait_usage_rows(db[1], tenant_id, 5)
    assert sorted((r.endpoint, r.kind) for r in rows) == [("/v1/completions", "batch")] * 3 + [
        ("/v1/embeddings", "batch")] * 2


def test_an_embeddings_batch_where_embeddings_are_off_is_400(live, tenant):
    _, key = tenant
    file_id = upload(live, key, jsonl([chat_line(0)])).json()["id"]
    assert_openai_error(create(live, key, file_id, "/v1/embeddings"), 400, param="endpoint")
