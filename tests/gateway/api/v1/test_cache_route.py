"""The semantic cache in the chat route: a repeat is answered without the engine, billed at the
model's cache prices, streamed like a generation; sampling, other tenants, other numbers and an
admin invalidation all miss; an answer cut at max_tokens serves smaller limits; the live check is billed
to nobody. Most tests run over the canned backend (whose calls are counted);
one drives the real model through the official SDK."""
from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal

import httpx
import pytest
from openai import OpenAI

from gateway.billing.prices import PricePoint, request_cost
from gateway.crud.prices import set_price
from gateway.db.database import Database
from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import (ADMIN_KEY, CANNED_ENGINE_MS, FP32, METRICS, CannedBackend, LiveServer, make_tenant,
                                   migrate_and_seed, usage_rows, wait_usage_rows)

MODEL = "smollm2-135m-instruct"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
# Cache prices unlike the list prices, so a hit's cost says which ones it was charged at.
PRICE = PricePoint(MODEL, Decimal("0.10"), Decimal("0.30"), Decimal("0.02"), Decimal("0.05"),
                   datetime(2000, 1, 1, tzinfo=UTC))


def ask(question: str, **extra) -> dict:
    return {"model": MODEL, "messages": [{"role": "user", "content": question}], "temperature": 0, **extra}


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("cache-route")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    database = Database(url)
    try:
        with database.session() as session:
            set_price(session, model=MODEL, input_per_million=PRICE.input_per_million,
                      output_per_million=PRICE.output_per_million, effective_from=PRICE.effective_from,
                      cached_input_per_million=PRICE.cached_input_per_million,
                      cached_output_per_million=PRICE.cached_output_per_million)
    finally:
        database.dispose()
    return tmp, url


@pytest.fixture(scope="module")
def backend():
    return CannedBackend(tokens=8)  # "aaaaaaaa", finish_reason "stop" (max_tokens is the default 512)


@pytest.fixture(scope="module")
def server(db, backend):
    tmp, url = db
    # Per-tenant series on (an operator's opt-in), so the metrics below can name the tenant.
    with LiveServer(create_app(gateway_settings(tmp, url, metrics_per_tenant=True), backend=backend)) as live:
        yield live


def chat(server: LiveServer, key: str, body: dict) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"},
                      timeout=30)


def stats(server: LiveServer, tenant_id: str) -> dict:
    return httpx.get(f"{server.url}/admin/tenants/{tenant_id}/cache/stats", headers=ADMIN).json()


def wait_stored(server: LiveServer, tenant_id: str, entries: int, timeout_s: float = 15.0) -> None:
    """Misses are stored off the response path: wait until the tenant has `entries`."""
    deadline = time.monotonic() + timeout_s
    while stats(server, tenant_id)["entries"] < entries:
        assert time.monotonic() < deadline, f"the cache never reached {entries} entries"
        time.sleep(0.05)


def test_a_repeat_is_a_hit_without_the_engine_billed_at_cache_prices(server, backend, db):
    tenant_id, key = make_tenant(db[1])
    first = chat(server, key, ask("What is the capital of France?"))
    assert first.status_code == 200, first.text
    assert first.headers["x-tollgate-cache"] == "miss" and "x-tollgate-cache-score" not in first.headers
    wait_stored(server, tenant_id, 1)
    calls = len(backend.served)

    second = chat(server, key, ask("What is the capital of France?"))
    assert second.status_code == 200, second.text
    assert len(backend.served) == calls  # nothing reached the engine
    assert second.headers["x-tollgate-cache"] == "hit"
    assert float(second.headers["x-tollgate-cache-score"]) == pytest.approx(1.0)
    body = second.json()
    assert body["object"] == "chat.completion" and body["model"] == MODEL
    assert body["choices"][0]["message"]["content"] == first.json()["choices"][0]["message"]["content"]
    assert body["choices"][0]["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["completion_tokens"] == 8 and usage["prompt_tokens"] == first.json()["usage"]["prompt_tokens"]
    assert usage["prompt_tokens_details"]["cached_tokens"] == usage["prompt_tokens"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]

    miss_row, hit_row = wait_usage_rows(db[1], tenant_id, 2)
    assert (miss_row.cache_hit, hit_row.cache_hit) == (False, True)
    assert (miss_row.engine_ms, hit_row.engine_ms) == (8 * CANNED_ENGINE_MS, 0.0)  # a hit costs no engine time
    assert hit_row.cached_tokens == usage["prompt_tokens"] and hit_row.version is None and hit_row.model == MODEL
    tokens = {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"]}
    assert hit_row.cost == request_cost(PRICE, **tokens, cached_tokens=usage["prompt_tokens"], cache_hit=True)
    assert miss_row.cost == request_cost(PRICE, **tokens, cached_tokens=0, cache_hit=False)
    assert 0 < hit_row.cost < miss_row.cost

    bill = httpx.get(f"{server.url}/admin/tenants/{tenant_id}/bill", headers=ADMIN).json()
    (line,) = bill["lines"]
    assert (line["requests"], line["cached_tokens"]) == (2, usage["prompt_tokens"])
    assert Decimal(bill["total_cost"]) == miss_row.cost + hit_row.cost

    metrics = httpx.get(f"{server.url}/metrics", headers=METRICS).text  # labels come sorted by name
    hits = f'tollgate_cache_lookups_total{{model="{MODEL}",result="hit",tenant="{tenant_id}",tier="exact"}} 1.0'
    assert hits in metrics
    saved = re.search(rf'tollgate_cache_money_saved_total\{{model="{MODEL}",tenant="{tenant_id}"\}} (\S+)', metrics)
    assert saved and float(saved.group(1)) == pytest.approx(float(
        request_cost(PRICE, **tokens, cached_tokens=0, cache_hit=False) - hit_row.cost))


def sse(server: LiveServer, key: str, body: dict) -> tuple[httpx.Headers, list]:
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", timeout=30,
                      json={**body, "stream": True, "stream_options": {"include_usage": True}},
                      headers={"Authorization": f"Bearer {key}"}) as r:
        assert r.status_code == 200
        lines = [line[len("data: "):] for line in r.read().decode().splitlines() if line.startswith("data: ")]
    return r.headers, [line if line == "[DONE]" else json.loads(line) for line in lines]


def test_a_streamed_hit_replays_the_text_as_chunks(server, backend, db):
    tenant_id, key = make_tenant(db[1])
    question = ask("Name a primary colour.")
    answer = chat(server, key, question).json()["choices"][0]["message"]["content"]
    wait_stored(server, tenant_id, 1)
    calls = len(backend.served)

    headers, events = sse(server, key, question)
    assert len(backend.served) == calls
    assert headers["x-tollgate-cache"] == "hit" and headers["content-type"].startswith("text/event-stream")
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == answer
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    usage = chunks[-1]["usage"]
    assert chunks[-1]["choices"] == [] and usage["completion_tokens"] == 8
    assert usage["prompt_tokens_details"]["cached_tokens"] == usage["prompt_tokens"]
    assert wait_usage_rows(db[1], tenant_id, 2)[-1].cache_hit


def test_an_exact_repeat_sent_as_the_answer_ends_hits(server, backend, db, monkeypatch):
    """Read-your-writes: the entry is stored off the response path, but a repeat sent the moment the first
    answer's last chunk arrives (the stream still open), or its whole body, is already a hit. Storing is held
    back until the repeats are answered, so they can only hit by the hold."""
    cache = server.server.config.app.state.services.cache
    gate, store = threading.Event(), cache.store_sync

    def gated_store(*args, **kwargs):
        assert gate.wait(30), "the test never opened the gate"
        return store(*args, **kwargs)

    monkeypatch.setattr(cache, "store_sync", gated_store)
    tenant_id, key = make_tenant(db[1])
    body = {**ask("Name a secondary colour."), "stream": True}
    try:
        with httpx.stream("POST", f"{server.url}/v1/chat/completions", json=body, timeout=30,
                          headers={"Authorization": f"Bearer {key}"}) as first:
            assert first.headers["x-tollgate-cache"] == "miss"
            for line in first.iter_lines():
                if line.startswith("data: {") and json.loads(line[6:])["choices"][0]["finish_reason"] == "stop":
                    break  # the last chunk of the answer: ask again now
            repeat = chat(server, key, ask("Name a secondary colour."))
        assert repeat.headers["x-tollgate-cache"] == "hit", repeat.headers
        calls = len(backend.served)
        assert chat(server, key, ask("Name a tertiary colour.")).headers["x-tollgate-cache"] == "miss"
        assert chat(server, key, ask("Name a tertiary colour.")).headers["x-tollgate-cache"] == "hit"
        assert len(backend.served) == calls + 1 and stats(server, tenant_id)["entries"] == 0  # none stored yet
    finally:
        gate.set()
    wait_stored(server, tenant_id, 2)


@pytest.mark.slow  # the app embeds with the real MiniLM
def test_a_paraphrase_is_a_semantic_hit(server, backend, db):
    tenant_id, key = make_tenant(db[1])
    chat(server, key, ask("What is the capital of France?"))
    wait_stored(server, tenant_id, 1)
    calls = len(backend.served)
    r = chat(server, key, ask("What's the capital city of France?"))
    assert r.headers["x-tollgate-cache"] == "hit" and len(backend.served) == calls
    assert 0.6 <= float(r.headers["x-tollgate-cache-score"]) < 1.0


def test_sampling_bypasses_the_cache(server, backend, db):
    tenant_id, key = make_tenant(db[1])
    calls = len(backend.served)
    for _ in range(2):
        r = chat(server, key, ask("Write a haiku about the sea.", temperature=0.7))
        assert r.status_code == 200 and r.headers["x-tollgate-cache"] == "bypass"
    assert len(backend.served) == calls + 2
    assert stats(server, tenant_id)["bypasses"] == 2


def test_tenants_never_share_answers(server, backend, db):
    tenant_a, key_a = make_tenant(db[1])
    _, key_b = make_tenant(db[1])
    assert chat(server, key_a, ask("How do I reset my password?")).headers["x-tollgate-cache"] == "miss"
    wait_stored(server, tenant_a, 1)
    assert chat(server, key_a, ask("How do I reset my password?")).headers["x-tollgate-cache"] == "hit"
    calls = len(backend.served)
    other = chat(server, key_b, ask("How do I reset my password?"))
    assert other.headers["x-tollgate-cache"] == "miss"
    assert len(backend.served) == calls + 1


def test_a_different_number_is_a_different_question(server, backend, db):
    tenant_id, key = make_tenant(db[1])
    chat(server, key, ask("What is 2+3?"))
    wait_stored(server, tenant_id, 1)
    calls = len(backend.served)
    r = chat(server, key, ask("What is 2+4?"))
    assert r.headers["x-tollgate-cache"] == "miss" and len(backend.served) == calls + 1


def test_admin_invalidation_makes_the_next_request_miss(server, db):
    tenant_id, key = make_tenant(db[1])
    chat(server, key, ask("Which port does Redis listen on?"))
    wait_stored(server, tenant_id, 1)
    assert chat(server, key, ask("Which port does Redis listen on?")).headers["x-tollgate-cache"] == "hit"
    dropped = httpx.delete(f"{server.url}/admin/tenants/{tenant_id}/cache", headers=ADMIN)
    assert dropped.json() == {"tenant_id": tenant_id, "deleted": 1}
    assert chat(server, key, ask("Which port does Redis listen on?")).headers["x-tollgate-cache"] == "miss"


def test_a_hit_still_counts_against_the_rate_limit(server, db):
    tenant_id, key = make_tenant(db[1], rpm=2)
    assert chat(server, key, ask("What is a semantic cache?")).headers["x-tollgate-cache"] == "miss"
    wait_stored(server, tenant_id, 1)
    hit = chat(server, key, ask("What is a semantic cache?"))
    assert hit.headers["x-tollgate-cache"] == "hit" and hit.headers["x-ratelimit-remaining-requests"] == "0"
    refused = chat(server, key, ask("What is a semantic cache?"))
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limit_exceeded"


def test_a_hit_is_settled_to_its_own_tokens_not_max_tokens(server, db):
    # Admission holds prompt + max_tokens (7 + 30) before the cache is consulted, a hit too (the lookup must
    # not cost an embedding to a tenant over its limits); settling leaves a hit only its own 15 tokens. TPM
    # 80: a miss (15), a hit (15) and a third request (37 held) fit, where hits charged max_tokens would not.
    tenant_id, key = make_tenant(db[1], tpm=80)
    question = ask("Which HTTP status means too many requests?", max_tokens=30)
    assert chat(server, key, question).headers["x-tollgate-cache"] == "miss"
    wait_stored(server, tenant_id, 1)
    hit = chat(server, key, question)
    assert hit.status_code == 200, hit.text
    assert hit.headers["x-tollgate-cache"] == "hit" and hit.json()["usage"]["total_tokens"] == 15
    deadline = time.monotonic() + 5  # the hit's settle runs just after its response
    while (third := chat(server, key, question)).status_code == 429 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert third.status_code == 200, third.text


def test_completions_are_not_cached(server, db):
    _, key = make_tenant(db[1])
    r = httpx.post(f"{server.url}/v1/completions", json={"model": MODEL, "prompt": "Hello", "temperature": 0},
                   headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert r.status_code == 200 and r.headers["x-tollgate-cache"] == "bypass"


@pytest.mark.model
def test_real_model_repeat_through_the_sdk(real_gateway, monkeypatch):
    server, settings = real_gateway
    backend = server.server.config.app.state.services.backend
    calls: list[str] = []
    generate = backend.stream

    def counted(request):
        calls.append(request.request_id)
        return generate(request)

    monkeypatch.setattr(backend, "stream", counted)
    tenant_id, key = make_tenant(settings.resolved_database_url)
    client = OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)
    messages = [{"role": "user", "content": "What is the capital of France?"}]

    first = client.chat.completions.with_raw_response.create(model=MODEL, messages=messages, temperature=0,
                                                             max_tokens=64)
    answer = first.parse()
    assert first.headers["x-tollgate-cache"] == "miss" and len(calls) == 1
    assert answer.choices[0].finish_reason == "stop", "the test needs an answer that ends by itself"
    wait_stored(server, tenant_id, 1)

    second = client.chat.completions.with_raw_response.create(model=MODEL, messages=messages, temperature=0,
                                                              max_tokens=64)
    again = second.parse()
    assert len(calls) == 1
    assert second.headers["x-tollgate-cache"] == "hit" and second.headers["x-tollgate-model"] == MODEL
    assert again.choices[0].message.content == answer.choices[0].message.content
    assert again.usage.completion_tokens == answer.usage.completion_tokens
    assert again.usage.prompt_tokens_details.cached_tokens == answer.usage.prompt_tokens

    streamed = list(client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=64,
                                                   stream=True, stream_options={"include_usage": True}))
    assert len(calls) == 1
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == answer.choices[0].message.content
    assert streamed[-1].usage.prompt_tokens_details.cached_tokens == answer.usage.prompt_tokens

    rows = wait_usage_rows(settings.resolved_database_url, tenant_id, 3)
    assert [r.cache_hit for r in rows] == [False, True, True]
    assert rows[0].version == FP32


class SlowEmbedder:
    """The real embedder, `delay_s` slower per query: keeps a store in flight long enough to see
    what shutdown does with it."""

    def __init__(self, inner, delay_s: float) -> None:
        self.inner, self.delay_s, self.dim = inner, delay_s, inner.dim

    def embed_one(self, text: str):
        time.sleep(self.delay_s)
        return self.inner.embed_one(text)


async def test_a_store_in_flight_at_shutdown_lands_and_the_next_process_serves_it(server, db):
    tmp, url = db
    embedder = server.server.config.app.state.services.embedder
    tenant_id, key = make_tenant(url)
    question = ask("How many bytes are in a kibibyte?")
    backend = CannedBackend(tokens=8)
    app = create_app(gateway_settings(tmp, url), backend=backend, embedder=SlowEmbedder(embedder, 0.5))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gateway", timeout=30) as http:
        r = await http.post("/v1/chat/completions", json=question, headers={"Authorization": f"Bearer {key}"})
        assert r.headers["x-tollgate-cache"] == "miss"
        # Shut down at once: the answer is still being embedded for the cache.
    assert len(persisted(url, tenant_id)) == 1  # shutdown waited for it

    with LiveServer(create_app(gateway_settings(tmp, url), backend=backend, embedder=embedder)) as second:
        assert stats(second, tenant_id)["entries"] == 1  # re-indexed at start-up
        assert chat(second, key, question).headers["x-tollgate-cache"] == "hit"
    assert len(backend.served) == 1


def persisted(url: str, tenant_id: str) -> list:
    from sqlalchemy import select

    from gateway.db.models.semantic_cache_entry import SemanticCacheEntryRow

    database = Database(url)
    try:
        with database.session() as session:
            return list(session.scalars(select(SemanticCacheEntryRow.id).where(
                SemanticCacheEntryRow.tenant_id == tenant_id)))
    finally:
        database.dispose()


def test_switched_off_the_gateway_never_caches(db):
    tmp, url = db
    _, key = make_tenant(url)
    backend = CannedBackend(tokens=8)
    settings = gateway_settings(tmp, url, cache_enabled=False, embeddings_enabled=False)
    with LiveServer(create_app(settings, backend=backend)) as off:
        for _ in range(2):
            assert chat(off, key, ask("What is the capital of France?")).headers["x-tollgate-cache"] == "bypass"
        stats_off = httpx.get(f"{off.url}/admin/tenants/any/cache/stats", headers=ADMIN)
        assert off.server.config.app.state.services.embedder is None
    assert len(backend.served) == 2
    assert stats_off.status_code == 404 and stats_off.json()["error"]["code"] == "not_found"


class BrokenEmbedder:
    dim = 384

    def embed_one(self, text: str):
        raise RuntimeError("embedder lost its weights")


async def test_a_failing_cache_is_logged_and_the_engine_answers(db, capsys):
    tmp, url = db
    _, key = make_tenant(url)
    backend = CannedBackend(tokens=8)
    app = create_app(gateway_settings(tmp, url, embeddings_enabled=False), backend=backend, embedder=BrokenEmbedder())
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gateway", timeout=30) as http:
        r = await http.post("/v1/chat/completions", json=ask("Is the cache up?"),
                            headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200 and r.headers["x-tollgate-cache"] == "bypass"
    assert len(backend.served) == 1
    logged = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    (failure,) = [e for e in logged if e["logger"] == "tollgate.cache"]  # JSON logs on stderr
    assert failure["level"] == "ERROR" and "embedder lost its weights" in failure["exc"]


def test_an_answer_cut_at_max_tokens_serves_equal_or_smaller_limits(server, db):
    tenant_id, key = make_tenant(db[1])
    first = chat(server, key, ask("Spell the letter a many times.", max_tokens=4))
    assert first.json()["choices"][0]["finish_reason"] == "length"
    wait_stored(server, tenant_id, 1)
    smaller = chat(server, key, ask("Spell the letter a many times.", max_tokens=2))
    assert smaller.headers["x-tollgate-cache"] == "hit"
    body = smaller.json()
    assert body["choices"][0]["message"]["content"] == "aa" and body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 2
    larger = chat(server, key, ask("Spell the letter a many times.", max_tokens=6))
    assert larger.headers["x-tollgate-cache"] == "miss" and larger.json()["choices"][0]["message"]["content"] == "a" * 6


def test_the_live_check_runs_in_the_background_and_is_billed_to_nobody(server, backend, db):
    tenant_id, key = make_tenant(db[1])
    chat(server, key, ask("What colour is the sky?"))
    wait_stored(server, tenant_id, 1)
    calls = len(backend.served)
    check = server.server.config.app.state.services.cache.live_check
    check.config = dataclasses.replace(check.config, fraction=1.0)  # every hit checked, this test only
    try:
        hit = chat(server, key, ask("What colour is the sky?"))
    finally:
        check.config = dataclasses.replace(check.config, fraction=0.0)
    assert hit.headers["x-tollgate-cache"] == "hit"
    series = f'tollgate_cache_audit_checks_total{{outcome="agreed",tenant="{tenant_id}"}} 1.0'
    deadline = time.monotonic() + 15
    while series not in (metrics := httpx.get(f"{server.url}/metrics", headers=METRICS).text):
        assert time.monotonic() < deadline, "the live check never reported"
        time.sleep(0.05)
    assert f'tollgate_cache_estimated_wrong_hit_rate{{tenant="{tenant_id}"}} 0.25' in metrics
    assert len(backend.served) == calls + 1  # the check reached the engine once, after the hit was answered
    wait_usage_rows(db[1], tenant_id, 2)
    time.sleep(0.3)
    assert [r.cache_hit for r in usage_rows(db[1], tenant_id)] == [False, True]  # no row for the check
    bill = httpx.get(f"{server.url}/admin/tenants/{tenant_id}/bill", headers=ADMIN).json()
    assert bill["cache_accuracy"] == {"sampled": 1, "disagreed": 0, "estimated_wrong_hit_rate": 0.25,
                                      "threshold_tightening": 0.0}
