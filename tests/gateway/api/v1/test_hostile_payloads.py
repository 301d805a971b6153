"""One hostile tenant hurts no one else (issue 31, proof): each payload that could make the engine or the event
loop do unbounded work goes to the live gateway (the real model, in process) beside a light tenant's 16-token
request. The light tenant's latency stays within 2x its unloaded value (measured in the same test) plus a
quarter second of scheduling noise, every hostile request gets a clear 4xx, and nothing answers 5xx."""
from __future__ import annotations

import asyncio
import secrets
import statistics
import time
from collections.abc import Callable

import httpx
import pytest

from benchmarks.hostile_payloads import LIGHT, PAYLOADS, body, long_stops, regex
from tests.gateway.support import make_tenant

pytestmark = pytest.mark.model

BURST = 2  # hostile requests sent beside each light one (the acceptance test sends six at once)
ROUNDS = 5  # light requests timed alone and as many beside a burst, alternately
# Added to the 2x bound: what the other pytest worker's load can add to a ~0.15 s request on a shared 2-core
# machine (a fresh clone's suite once saw 0.33 s beside made-up keys, 0.14 s alone, on a slower box). A flood
# that locks the light tenant out costs it seconds or a refusal, far past this.
SLACK_S = 0.25


@pytest.fixture(scope="module")
def tenants(real_gateway):
    server, settings = real_gateway
    url = settings.resolved_database_url
    light = make_tenant(url, cache_enabled=False)[1]  # the engine answers every time
    hostile = make_tenant(url, cache_enabled=False)[1]
    return server.url, light, hostile


async def _light(http: httpx.AsyncClient, key: str) -> float:
    started = time.perf_counter()
    r = await http.post("/v1/chat/completions", content=LIGHT, headers=_headers(key))
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 16
    return time.perf_counter() - started


def _headers(key: str, **extra: str) -> dict:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json", **extra}


async def _beside_light(base: str, light: str, bodies: list[bytes],
                        headers: Callable[[], dict]) -> tuple[float, float, list[tuple[int, dict]]]:
    """(light median unloaded, light median with BURST hostile requests sent beside it, what the hostile requests
    got). Unloaded and loaded requests alternate, so a change in the machine's own load (it is shared) weighs on
    both alike."""
    seen: list[tuple[int, dict]] = []

    async def hostile(http: httpx.AsyncClient, content: bytes) -> None:
        r = await http.post("/v1/chat/completions", content=content, headers=headers())
        json_body = r.headers.get("content-type", "").startswith("application/json")
        seen.append((r.status_code, (r.json().get("error") or {}) if json_body else {}))

    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        await _light(http, light)  # warm: the first request of a tenant pays its one-off costs
        unloaded, during = [], []
        for round_ in range(ROUNDS):
            unloaded.append(await _light(http, light))
            burst = [hostile(http, bodies[(round_ * BURST + k) % len(bodies)]) for k in range(BURST)]
            light_s, *_ = await asyncio.gather(_light(http, light), *burst)
            during.append(light_s)
    return statistics.median(unloaded), statistics.median(during), seen


@pytest.mark.parametrize("name", list(PAYLOADS))
async def test_a_hostile_payload_is_refused_and_the_light_tenant_keeps_its_latency(tenants, name):
    base, light, hostile = tenants
    make, status, param = PAYLOADS[name]
    bodies = [body(make(i)) for i in range(BURST * ROUNDS)]  # distinct, built before any timing
    unloaded, during, seen = await _beside_light(base, light, bodies, lambda: _headers(hostile))
    assert seen and all(s < 500 for s, _ in seen), seen
    assert {s for s, _ in seen} == {status}, seen[:3]
    if param is not None:
        assert {e.get("param") for _, e in seen} == {param}, seen[:3]
    assert all(e.get("message") for _, e in seen)
    assert during <= 2 * unloaded + SLACK_S, f"{name}: light tenant {during:.2f}s during vs {unloaded:.2f}s unloaded"


async def test_made_up_keys_beside_a_light_tenant(tenants):
    """A flood of made-up keys from one client (behind the gateway's trusted proxy, so it counts as its own
    address and leaves this session's other tests alone): 401, then 429, and the light tenant is untouched."""
    base, light, _ = tenants
    forwarded = f"198.51.100.{secrets.randbelow(200) + 1}"
    made_up = lambda: _headers("tg-" + secrets.token_urlsafe(32), **{"X-Forwarded-For": forwarded})  # noqa: E731
    unloaded, during, seen = await _beside_light(base, light, [LIGHT.encode()], made_up)
    statuses = [s for s, _ in seen]
    assert statuses == [401] * len(statuses), statuses  # ten of them: the throttle's 429s start past 20
    assert during <= 2 * unloaded + SLACK_S, f"light tenant {during:.2f}s during vs {unloaded:.2f}s unloaded"


async def test_acceptance_three_regexes_and_three_huge_stop_lists_beside_a_16_token_request(tenants):
    """Issue 31's acceptance: three concurrent `(a{1000}){1000}`-kind regexes and three requests with four
    200,000-character stop strings (ignore_eos, 512 tokens): the light tenant's 16 tokens answer within 3 s, the
    hostile ones answer < 500 within 30 s (refused with 400, in fact, in well under a second)."""
    base, light, hostile = tenants
    bodies = [body(regex(100 + i)) for i in range(3)] + [body(long_stops(i)) for i in range(3)]
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        await _light(http, light)

        async def timed(body: bytes, key: str) -> tuple[int, float]:
            started = time.perf_counter()
            r = await http.post("/v1/chat/completions", content=body, headers=_headers(key))
            return r.status_code, time.perf_counter() - started

        results = await asyncio.gather(*(timed(b, hostile) for b in bodies), timed(LIGHT.encode(), light))
    *hostile_results, (light_status, light_s) = results
    assert light_status == 200 and light_s < 3.0, light_s
    assert all(status == 400 and seconds < 30 for status, seconds in hostile_results), hostile_results
