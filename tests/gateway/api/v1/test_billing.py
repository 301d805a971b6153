"""Limits and billing end to end against the real model: RPM 429, a client that leaves mid-stream
(aborted in the engine, billed for what it got), the month's bill reconciled to the token with
what clients were told, and a budget that 200 concurrent requests cannot overspend."""
from __future__ import annotations

import asyncio
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from openai import OpenAI

from tests.gateway.support import ADMIN_KEY, FP32, METRICS, make_tenant, wait_usage_rows

pytestmark = pytest.mark.model

MSG = [{"role": "user", "content": "Say hi."}]
LONG = {"model": "smollm2-135m-instruct", "prompt": "1, 2, 3, 4, 5, 6,", "max_tokens": 200, "temperature": 0,
        "stream": True}


def _running(server_url: str) -> float:
    text = httpx.get(f"{server_url}/metrics", headers=METRICS).text
    m = re.search(r'tollgate:num_requests_running\{model_name="' + re.escape(FP32) + r'"\} (\S+)', text)
    return float(m.group(1)) if m else 0.0


def test_rpm_gives_429_with_retry_after(real_gateway):
    server, settings = real_gateway
    tenant_id, key = make_tenant(settings.resolved_database_url, rpm=2)
    h = {"Authorization": f"Bearer {key}"}
    body = {"model": "smollm2-135m-instruct", "messages": MSG, "max_tokens": 1}
    first = httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=h, timeout=60)
    assert first.headers["x-ratelimit-limit-requests"] == "2"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    assert httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=h, timeout=60).status_code == 200
    third = httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=h, timeout=60)
    assert third.status_code == 429
    assert third.json()["error"]["code"] == "rate_limit_exceeded"
    assert int(third.headers["retry-after"]) >= 1
    assert third.headers["x-ratelimit-remaining-requests"] == "0"
    assert len(wait_usage_rows(settings.resolved_database_url, tenant_id, 2)) == 2


def _disconnect_mid_stream(server_url: str, key: str, after_events: int = 4) -> str:
    """Read a few events of a long stream, then drop the connection; returns our request id."""
    with httpx.Client(timeout=60) as client, client.stream("POST", f"{server_url}/v1/completions", json=LONG,
                       headers={"Authorization": f"Bearer {key}"}) as resp:
        assert resp.status_code == 200
        rid, seen = resp.headers["x-request-id"], 0
        for line in resp.iter_lines():
            if line.startswith("data: "):
                seen += 1
                if seen >= after_events:
                    break
    return rid


def test_disconnect_aborts_the_generation_and_bills_what_was_generated(real_gateway):
    server, settings = real_gateway
    tenant_id, key = make_tenant(settings.resolved_database_url)
    started = time.monotonic()
    rid = _disconnect_mid_stream(server.url, key)
    rows = wait_usage_rows(settings.resolved_database_url, tenant_id, 1)
    assert [r.request_id for r in rows] == [rid]
    assert rows[0].status == "aborted"
    assert 4 <= rows[0].completion_tokens < LONG["max_tokens"]
    # The engine's gauges refresh on a step (not on an abort): one more request steps it. Had the
    # 200-token generation not been aborted, it would still be running after this one finishes.
    OpenAI(base_url=f"{server.url}/v1", api_key=key).completions.create(
        model="smollm2-135m-instruct", prompt="Hi", max_tokens=1)
    assert _running(server.url) == 0
    assert time.monotonic() - started < 60


def _one(client: OpenAI, i: int) -> int:
    """One request of a mix; returns the tokens its usage reported."""
    kind = i % 4
    if kind == 0:
        return client.chat.completions.create(model="chat", messages=MSG, max_tokens=3).usage.total_tokens
    if kind == 1:
        chunks = list(client.chat.completions.create(model="smollm2-135m-instruct", messages=MSG, max_tokens=3,
                                                     stream=True, stream_options={"include_usage": True}))
        return chunks[-1].usage.total_tokens
    if kind == 2:
        return client.completions.create(model="smollm2-135m-instruct", prompt="Hello", max_tokens=3).usage.total_tokens
    chunks = list(client.completions.create(model="smollm2-135m-instruct", prompt="Once", max_tokens=3,
                                            stream=True, stream_options={"include_usage": True}))
    return chunks[-1].usage.total_tokens


def test_bill_reconciles_with_client_usage(real_gateway):
    server, settings = real_gateway
    url = settings.resolved_database_url
    tenant_id, key = make_tenant(url)
    client = OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    with ThreadPoolExecutor(6) as pool:
        told = list(pool.map(lambda i: _one(client, i), range(52)))
    rid = _disconnect_mid_stream(server.url, key)
    rows = wait_usage_rows(url, tenant_id, 53)
    assert len(rows) == 53
    aborted = next(r for r in rows if r.request_id == rid)
    bill = httpx.get(f"{server.url}/admin/tenants/{tenant_id}/bill",
                     headers={"Authorization": f"Bearer {ADMIN_KEY}"}).json()
    billed = sum(line["prompt_tokens"] + line["completion_tokens"] for line in bill["lines"])
    assert sum(line["requests"] for line in bill["lines"]) == 53
    assert billed == sum(told) + aborted.prompt_tokens + aborted.completion_tokens
    assert float(bill["total_cost"]) > 0


async def test_budget_holds_under_200_concurrent_requests(real_gateway):
    server, settings = real_gateway
    url = settings.resolved_database_url
    _probe_tenant, probe_key = make_tenant(url)
    body = {"model": "smollm2-135m-instruct", "messages": MSG, "max_tokens": 4}
    async with httpx.AsyncClient(base_url=server.url, timeout=120,
                                 limits=httpx.Limits(max_connections=200)) as http:
        probe = await http.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {probe_key}"})
        worst = probe.json()["usage"]["prompt_tokens"] + body["max_tokens"]
        budget = 10 * worst
        tenant_id, key = make_tenant(url, monthly_token_budget=budget)
        h = {"Authorization": f"Bearer {key}"}

        async def plain():
            r = await http.post("/v1/chat/completions", json=body, headers=h)
            return r.status_code, r.json()

        async def streamed():
            async with http.stream("POST", "/v1/chat/completions", headers=h,
                                   json={**body, "stream": True, "stream_options": {"include_usage": True}}) as r:
                raw = (await r.aread()).decode()
                return r.status_code, raw if r.status_code == 200 else json.loads(raw)

        results = await asyncio.gather(*(plain() if i % 2 else streamed() for i in range(200)))
    ok = [r for r in results if r[0] == 200]
    refused = [r for r in results if r[0] == 429]
    assert len(ok) + len(refused) == 200
    assert len(ok) >= 10
    assert all(body["error"]["code"] == "insufficient_quota" for status, body in refused)
    rows = wait_usage_rows(url, tenant_id, len(ok))
    total = sum(r.prompt_tokens + r.completion_tokens for r in rows)
    assert len(rows) == len(ok)
    assert total <= budget
    # Streams that were admitted report usage equal to their ledger row; none overshot.
    streamed_ok = [text for status, text in ok if isinstance(text, str)]
    assert all(text.rstrip().endswith("data: [DONE]") for text in streamed_ok)
