"""Admission, cheapest checks first: limits before rendering, tokenizing or embedding; large prompts
tokenized off the event loop; bounds that refuse only on size re-judged on the exact count; every refusal
releases what it held."""
from __future__ import annotations

import hashlib
import threading
import time

import httpx
import numpy as np
import pytest

from gateway.main import create_app
from gateway.serving.base import TenantQueueFull
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import CannedBackend, LiveServer, make_tenant, migrate_and_seed, usage_rows

MODEL = "smollm2-135m-instruct"


class CountingBackend(CannedBackend):
    """Records each prompt count and the thread that did it."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.counted: list[tuple[int, str]] = []  # (prompt characters, thread name)

    def count_prompt_tokens(self, version, *, prompt=None, messages=None) -> int:
        text = prompt if prompt is not None else "".join(m["content"] for m in messages or [])
        if text:  # the pipeline's one-off template measurement counts empty messages
            self.counted.append((len(text), threading.current_thread().name))
        return super().count_prompt_tokens(version, prompt=prompt, messages=messages)


class QueueFullBackend(CannedBackend):
    async def stream(self, request):
        raise TenantQueueFull(request.version)
        yield  # an async generator, like the real backends


class CountingEmbedder:
    dim = 16

    def __init__(self) -> None:
        self.calls = 0

    def embed_one(self, text: str) -> np.ndarray:
        self.calls += 1
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    tmp = tmp_path_factory.mktemp("admit")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    return tmp, url


def serve(db, backend, *, embedder=None, **settings) -> LiveServer:
    tmp, url = db
    cache = embedder is not None
    return LiveServer(create_app(gateway_settings(tmp, url, embeddings_enabled=False, cache_enabled=cache, **settings),
                                 backend=backend, embedder=embedder))


def chat(server, key, content: str, **body) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {key}"},
                      json={"model": MODEL, "messages": [{"role": "user", "content": content}], "max_tokens": 4,
                            **body})


def test_a_tenant_over_its_rate_limit_costs_no_tokenizing_and_no_cache_embedding(db):
    backend, embedder = CountingBackend(), CountingEmbedder()
    tenant_id, key = make_tenant(db[1], rpm=1)
    with serve(db, backend, embedder=embedder) as server:
        assert chat(server, key, "What is the capital of France?", temperature=0).status_code == 200
        # The answer is stored in the background (its words embedded for the verifier too): let it land first.
        cache, deadline = server.server.config.app.state.services.cache, time.monotonic() + 15
        while cache.stats(tenant_id).entries < 1:
            assert time.monotonic() < deadline, "the answer was never stored"
            time.sleep(0.02)
        counted, embedded = len(backend.counted), embedder.calls
        assert counted == 1 and embedded >= 1
        for _ in range(5):
            refused = chat(server, key, "What is the capital of Spain? " * 200, temperature=0)
            assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert len(backend.counted) == counted and embedder.calls == embedded


def test_large_prompts_are_tokenized_off_the_event_loop_small_ones_on_it(db):
    backend = CountingBackend(max_model_len=16384)
    _, key = make_tenant(db[1])
    with serve(db, backend) as server:
        assert chat(server, key, "short question").status_code == 200
        assert chat(server, key, "word " * 5000).status_code == 200  # 25 KB
    (small, small_thread), (large, large_thread) = backend.counted
    assert small < large
    assert small_thread.startswith("uvicorn")  # the server's event-loop thread (LiveServer names it)
    assert not large_thread.startswith("uvicorn")


def test_a_prompt_refused_on_its_byte_bound_is_judged_on_its_exact_tokens(db):
    # 2000 bytes but one canned token: the bound (bytes) is over TPM 60, the real size is not.
    _tenant_id, key = make_tenant(db[1], tpm=60)
    with serve(db, CountingBackend()) as server:
        r = chat(server, key, "x" * 2000)
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["prompt_tokens"] == 1


def test_a_prompt_too_long_for_the_context_is_a_400_that_holds_nothing(db):
    tenant_id, key = make_tenant(db[1], tpm=100)
    with serve(db, CannedBackend(max_model_len=64)) as server:
        r = chat(server, key, "word " * 70)
        assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"
        assert r.json()["error"]["param"] == "messages"
        for _ in range(3):  # nothing of the refused request is still held against TPM
            ok = chat(server, key, "hello there", max_tokens=20)
            assert ok.status_code == 200, ok.text
    assert all(row.status == "ok" for row in usage_rows(db[1], tenant_id))  # the 400 is not billed


def test_a_full_tenant_queue_is_a_429_with_retry_after_and_not_billed(db):
    tenant_id, key = make_tenant(db[1])
    with serve(db, QueueFullBackend()) as server:
        r = chat(server, key, "hello")
    assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_queued_requests"
    assert r.headers["retry-after"] == "1"
    assert usage_rows(db[1], tenant_id) == []


def test_bad_keys_from_one_address_are_throttled_before_any_lookup(db):
    with serve(db, CannedBackend()) as server:
        services = server.server.config.app.state.services
        services.auth_throttle.config.max_failures = 3
        lookups = []
        real = services.authenticator.load
        services.authenticator.load = lambda *a: (lookups.append(1), real(*a))[1]
        bad = {"Authorization": "Bearer tg-" + "x" * 40}
        codes = [httpx.post(f"{server.url}/v1/chat/completions", headers=bad, json={}).status_code
                 for _ in range(6)]
        assert codes[:3] == [401, 401, 401] and set(codes[3:]) == {429}
        throttled = httpx.post(f"{server.url}/v1/chat/completions", headers=bad, json={})
        assert throttled.json()["error"]["code"] == "too_many_failed_authentications"
        assert int(throttled.headers["retry-after"]) >= 1
        assert len(lookups) <= 3  # refused without touching the database
        admin = httpx.get(f"{server.url}/admin/tenants", headers={"Authorization": "Bearer " + "y" * 40})
        assert admin.status_code == 429  # the admin key is guarded by the same throttle
