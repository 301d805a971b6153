"""The acceptance path with the official `openai` SDK, unchanged: files.create, batches.create, poll
batches.retrieve, files.content; a 50-line batch on the canned backend, and one on the real model whose bill
shows the lines at the batch price."""
from __future__ import annotations

import json
import time
from decimal import Decimal

import httpx
import pytest
from openai import OpenAI

from tests.gateway.api.v1.batches.conftest import MODEL, chat_line, jsonl, serve
from tests.gateway.support import ADMIN_KEY, CannedBackend, make_tenant, wait_usage_rows

N = 50


def run_batch(client: OpenAI, lines: list[dict], timeout_s: float = 120.0):
    f = client.files.create(file=("requests.jsonl", jsonl(lines)), purpose="batch")
    assert f.purpose == "batch" and f.bytes == len(jsonl(lines))
    batch = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h",
                                  metadata={"job": "nightly"})
    assert batch.status == "validating" and batch.metadata == {"job": "nightly"}
    deadline = time.monotonic() + timeout_s
    while batch.status not in ("completed", "failed", "expired", "cancelled") and time.monotonic() < deadline:
        time.sleep(0.2)
        batch = client.batches.retrieve(batch.id)
    assert batch.status == "completed", batch
    assert batch.request_counts.total == batch.request_counts.completed == len(lines)
    assert next(b.id for b in client.batches.list()) == batch.id
    out = [json.loads(line) for line in client.files.content(batch.output_file_id).text.splitlines()]
    assert sorted(o["custom_id"] for o in out) == sorted(x["custom_id"] for x in lines)
    return batch, out


def test_the_sdk_runs_a_50_line_batch_end_to_end(db):
    tenant_id, key = make_tenant(db[1])
    with serve(db, CannedBackend(tokens=4)) as server:
        client = OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
        batch, out = run_batch(client, [chat_line(i, max_tokens=4) for i in range(N)])
        assert batch.error_file_id is None
        assert all(o["response"]["body"]["choices"][0]["message"]["content"] == "aaaa" for o in out)
        client.files.delete(batch.input_file_id)
        with pytest.raises(Exception) as gone:
            client.files.retrieve(batch.input_file_id)
        assert getattr(gone.value, "status_code", None) == 404
    assert len(wait_usage_rows(db[1], tenant_id, N)) == N


@pytest.mark.model
def test_the_sdk_runs_a_50_line_batch_on_the_real_model_billed_at_the_batch_price(real_gateway):
    server, settings = real_gateway
    url = settings.resolved_database_url
    tenant_id, key = make_tenant(url)
    client = OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    lines = [{"custom_id": f"q{i}", "method": "POST", "url": "/v1/chat/completions",
              "body": {"model": MODEL, "messages": [{"role": "user", "content": f"What is {i} plus {i}?"}],
                       "max_tokens": 2, "temperature": 0}} for i in range(N)]
    _, out = run_batch(client, lines, timeout_s=300)
    assert all(o["response"]["status_code"] == 200 and o["response"]["body"]["usage"]["completion_tokens"] >= 1
               for o in out)
    rows = wait_usage_rows(url, tenant_id, N)
    assert len(rows) == N and {r.kind for r in rows} == {"batch"}
    bill = httpx.get(f"{server.url}/admin/tenants/{tenant_id}/bill",
                     headers={"Authorization": f"Bearer {ADMIN_KEY}"}).json()
    (line,) = bill["lines"]
    assert (line["kind"], line["requests"]) == ("batch", N)
    # The catalogue's prices: 0.10 per million uncached prompt tokens, 0 cached (the prefix cache's), 0.30 out.
    uncached = sum(r.prompt_tokens - r.cached_tokens for r in rows)
    interactive = (uncached * Decimal("0.10") + sum(r.completion_tokens for r in rows) * Decimal("0.30")) / 1_000_000
    assert Decimal(line["cost"]) == interactive * Decimal("0.5") == Decimal(bill["total_cost"])
