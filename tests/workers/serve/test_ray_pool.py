"""A real local Ray Serve pool: two versions of SmolLM2-135M behind the `chat` alias at 90/10."""
from __future__ import annotations

import asyncio
import os
import signal
import time

import httpx
import pytest
import pytest_asyncio
import yaml

from gateway.catalogue import parse_catalogue
from gateway.routing.canary import RollbackPolicy
from gateway.routing.router import AUTO_ROLLBACK_ACTOR, Router
from gateway.serving.base import GenerationRequest, VersionOverloaded, VersionUnavailable
from gateway.settings import Settings

ray_backend = pytest.importorskip("gateway.serving.ray_backend")

pytestmark = [pytest.mark.ray, pytest.mark.asyncio(loop_scope="session")]

FP32, BF16 = "smollm2-135m-instruct@fp32", "smollm2-135m-instruct@bf16"
ENGINE = {"num_kv_blocks": 96, "max_num_seqs": 16, "max_num_batched_tokens": 512, "num_threads": 1}


@pytest.fixture(scope="module")
def catalogue():
    raw = yaml.safe_load(Settings().catalogue.read_text())
    raw["aliases"]["chat"]["fallbacks"] = [FP32, BF16]  # the primary's fallback is the other version
    return parse_catalogue(raw)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def backend(ray_cluster, catalogue):
    settings = Settings(request_timeout_s=60)
    b = ray_backend.RayServeBackend(settings, catalogue, engine_overrides=ENGINE, first_chunk_timeout_s=15,
                                    health_poll_s=0.2, min_replicas=1, max_replicas=1, standby=0,
                                    num_cpus=0.25, health_check_period_s=1.0, env={"OMP_NUM_THREADS": "1"})
    await b.start()
    yield b
    await b.stop()


async def serve_once(backend, router, *, request_id, user=None, pin=None, max_tokens=1):
    """What the gateway does: resolve, try each candidate, report every attempt to the router."""
    decision = router.resolve("chat", request_id=request_id, user=user, pin=pin)
    for version in decision.candidates:
        start = time.monotonic()
        req = GenerationRequest(request_id, version, prompt="Say hi.", max_tokens=max_tokens, temperature=0)
        try:
            chunks, ttft = [], None
            async for c in backend.stream_raw(req):
                ttft = ttft or time.monotonic() - start
                chunks.append(c)
        except (VersionUnavailable, VersionOverloaded):
            router.observe(version, ok=False, ttft_s=None, latency_s=time.monotonic() - start)
            continue
        router.observe(version, ok=True, ttft_s=ttft, latency_s=time.monotonic() - start)
        return decision, chunks
    raise AssertionError(f"no candidate of {decision.candidates} served")


async def wait_health(backend, version, want: bool, timeout_s=120.0):
    deadline = time.monotonic() + timeout_s
    while (await backend.health())[version] != want:
        assert time.monotonic() < deadline, f"{version} health never became {want}"
        await asyncio.sleep(0.2)


def lenient_router(catalogue):
    # bf16 matmuls are slower than fp32 on many CPUs: TTFT must not roll the canary back here.
    return Router(catalogue, rollback=RollbackPolicy(ttft_p99_margin=1000))


async def test_versions_and_health(backend):
    assert {v.name for v in backend.versions()} == {FP32, BF16}
    assert await backend.health() == {FP32: True, BF16: True}
    assert backend.count_prompt_tokens(FP32, prompt="Hello there") > 0
    with pytest.raises(ValueError):
        backend.count_prompt_tokens(FP32)


async def test_split_over_300_requests(backend, catalogue):
    router = lenient_router(catalogue)
    sem = asyncio.Semaphore(24)

    async def one(i):
        async with sem:
            return await serve_once(backend, router, request_id=f"split-{i}")

    results = await asyncio.gather(*[one(i) for i in range(300)])
    served = [chunks[0].version for _, chunks in results]
    assert all(chunks[0].version == d.version for d, chunks in results)
    assert all(chunks[-1].finish_reason == "length" and chunks[-1].completion_tokens == 1
               for _, chunks in results)
    share = served.count(BF16) / len(served)
    assert 0.07 <= share <= 0.13, share


async def test_user_sticks_and_pin_is_honoured(backend, catalogue):
    router = lenient_router(catalogue)
    for user in ("alice", "bob"):
        seen = {(await serve_once(backend, router, request_id=f"{user}-{i}", user=user))[1][0].version
                for i in range(5)}
        assert len(seen) == 1
    for pin, want in (("bf16", BF16), (FP32, FP32)):
        _, chunks = await serve_once(backend, router, request_id=f"pin-{pin}", pin=pin)
        assert chunks[0].version == want


async def test_leaving_early_aborts_on_the_replica(backend):
    req = GenerationRequest("leaver", BF16, prompt="Tell me a very long story.", max_tokens=400,
                            temperature=0, ignore_eos=True)
    chunks = backend.stream(req)
    async for c in chunks:
        if c.completion_tokens >= 2:
            break
    await chunks.aclose()
    deadline = time.monotonic() + 10
    while (await backend.describe(BF16))["active"] != 0:
        assert time.monotonic() < deadline, "the replica kept generating for a caller that left"
        await asyncio.sleep(0.1)


async def test_replica_killed_mid_stream(backend, catalogue):
    router = lenient_router(catalogue)
    pid = (await backend.describe(FP32))["pid"]
    req = GenerationRequest("doomed", FP32, prompt="Tell me a very long story.", max_tokens=400,
                            temperature=0, ignore_eos=True)
    received, killed = 0, False
    with pytest.raises(ray_backend.ReplicaLost) as lost:
        async for c in backend.stream_raw(req):
            received += len(c.token_ids)
            # At least 3: a chunk carries every token of an engine step, so the count may step over 3 (it did
            # on a loaded machine, the replica was never killed and the 400 tokens all arrived).
            if received >= 3 and not killed:
                os.kill(pid, signal.SIGKILL)
                killed = True
    assert lost.value.completion_tokens == received >= 3  # what was sent is what is billed
    assert lost.value.prompt_tokens > 0

    # With the primary's only replica gone, a request that chose it is served by its fallback.
    user = next(u for u in (f"user-{i}" for i in range(100))
                if router.resolve("chat", request_id="x", user=u).version == FP32)
    decision, chunks = await serve_once(backend, router, request_id="after-kill", user=user)
    assert decision.candidates == [FP32, BF16] and chunks[0].version == BF16

    # Serve replaces the replica; the version serves again.
    await wait_health(backend, FP32, True)
    _, chunks = await serve_once(backend, router, request_id="recovered", pin="fp32")
    assert chunks[0].version == FP32 and (await backend.describe(FP32))["pid"] != pid


async def test_failing_canary_leaves_rotation(backend, catalogue):
    router = Router(catalogue, rollback=RollbackPolicy(window_s=60, min_samples=5, ttft_p99_margin=1000))
    canary_users = [u for u in (f"c-{i}" for i in range(400))
                    if router.resolve("chat", request_id="x", user=u).version == BF16][:12]
    os.kill((await backend.describe(BF16))["pid"], signal.SIGKILL)
    await wait_health(backend, BF16, False, timeout_s=30)
    started = time.monotonic()
    for i, user in enumerate(canary_users):
        _, chunks = await serve_once(backend, router, request_id=f"canary-{i}", user=user)
        assert chunks[0].version == FP32  # the fallback answers while the canary fails
        if router.route("chat")["weights"][BF16] == 0:
            break
    assert router.route("chat")["weights"] == {FP32: 100, BF16: 0}
    assert time.monotonic() - started < 60  # within the window
    entry = router.audit(alias="chat")[0]
    assert entry.actor == AUTO_ROLLBACK_ACTOR and BF16 in entry.reason
    assert {router.resolve("chat", request_id=f"r{i}", user=u).version
            for i, u in enumerate(canary_users)} == {FP32}


async def test_gateway_end_to_end_on_the_pool(backend, catalogue, tmp_path):
    """The real gateway (OpenAI routes, admin routes) over this pool. Runs last: the app's
    shutdown stops the backend (the session's Ray stays up)."""
    from gateway.main import create_app
    from gateway.security.admin_key import admin_actor
    from tests.gateway.support import ADMIN_KEY, make_tenant, migrate_and_seed

    await wait_health(backend, BF16, True)
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, catalogue)
    _, key = make_tenant(url)
    settings = Settings(DATABASE_URL=url, REDIS_URL="", data_dir=tmp_path, admin_key=ADMIN_KEY, backend="ray",
                        embeddings_enabled=False, log_level="WARNING", request_timeout_s=60)
    app = create_app(settings, backend=backend)
    tenant = {"Authorization": f"Bearer {key}"}
    admin = {"Authorization": f"Bearer {ADMIN_KEY}", "x-tollgate-actor": "e2e"}
    body = {"model": "chat", "messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 3}
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gateway", timeout=60) as http:
        r = await http.post("/v1/chat/completions", json=body, headers={**tenant, "x-tollgate-version": "bf16"})
        assert r.status_code == 200, r.text
        assert r.json()["model"] == BF16 and r.json()["usage"]["completion_tokens"] == 3
        r = await http.post("/v1/chat/completions", json=body, headers={**tenant, "x-tollgate-version": "int8"})
        assert r.status_code == 400
        r = await http.put("/admin/routes/chat", json={"weights": {"fp32": 50, "bf16": 60}}, headers=admin)
        assert r.status_code == 400 and r.json()["error"]["param"] == "weights"
        r = await http.post("/admin/routes/chat/promote", json={"version": "bf16"}, headers=admin)
        assert r.status_code == 200 and r.json()["weights"][BF16] == 100
        r = await http.post("/v1/chat/completions", json=body, headers=tenant)
        assert r.status_code == 200 and r.json()["model"] == BF16
        audit = (await http.get("/admin/routes/audit", headers=admin)).json()["data"]
        # The audit names the admin credential; the x-tollgate-actor header is ignored.
        assert audit[0]["action"] == "promote" and audit[0]["actor"] == admin_actor(ADMIN_KEY)
        # The replicas' engine series reach the gateway's /metrics, summed over the pool: counters per version,
        # gauges per replica.
        deadline, text = time.monotonic() + 30, ""
        while time.monotonic() < deadline:
            text = (await http.get("/metrics", headers=admin)).text
            tokens = engine_sample(text, "tollgate:generation_tokens_total", model_name=BF16)
            if tokens is not None and tokens >= 6:
                break
            await asyncio.sleep(0.5)
        assert engine_sample(text, "tollgate:generation_tokens_total", model_name=BF16) >= 6, text[-3000:]
        assert engine_sample(text, "tollgate:time_to_first_token_seconds_count", model_name=BF16) >= 2
        assert f'tollgate:kv_blocks_total{{model_name="{BF16}",replica="' in text


def engine_sample(text: str, name: str, **labels) -> float | None:
    """The value of the sample `name` with exactly `labels` in a scrape, or None."""
    from prometheus_client.parser import text_string_to_metric_families
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return s.value
    return None
