"""Output caps on a live gateway (PostgreSQL, a canned backend that would write 300 tokens): a request over its
tenant's or key's cap is a 400 naming the cap and the param, or under `clamp` runs at the cap with a header
saying so; a request naming no max_tokens gets the default; the month's bill reports the clamps."""
from __future__ import annotations

import json
import time

import httpx
import pytest

from gateway.crud.keys import create_key
from gateway.db.database import Database
from gateway.db.types import utcnow
from gateway.domain.period import Month
from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.data_fixtures import fresh_pg_schema
from tests.gateway.support import ADMIN_KEY, CannedBackend, LiveServer, make_tenant, migrate_and_seed, wait_usage_rows

pytestmark = pytest.mark.postgres

MODEL = "smollm2-135m-instruct"
CLAMPED = "x-tollgate-max-tokens-clamped"


@pytest.fixture(scope="module")
def db(tmp_path_factory, gw_catalogue):
    with fresh_pg_schema("caps") as url:
        migrate_and_seed(url, gw_catalogue)
        yield tmp_path_factory.mktemp("caps"), url


@pytest.fixture(scope="module")
def server(db):
    tmp, url = db
    app = create_app(gateway_settings(tmp, url, embeddings_enabled=False, cache_enabled=False),
                     backend=CannedBackend(tokens=300))
    with LiveServer(app) as live:
        yield live


def post(server, key, path="/v1/chat/completions", **body) -> httpx.Response:
    if path.endswith("chat/completions"):
        body.setdefault("messages", [{"role": "user", "content": "Write a long story."}])
    elif path.endswith("/completions"):
        body.setdefault("prompt", "Once upon a time")
    return httpx.post(f"{server.url}{path}", json={"model": MODEL, **body}, timeout=30,
                      headers={"Authorization": f"Bearer {key}"})


def key_for(url: str, tenant_id: str, **caps) -> str:
    db = Database(url)
    try:
        with db.session() as session:
            return create_key(session, tenant_id=tenant_id, **caps)[1]
    finally:
        db.dispose()


def test_over_the_cap_is_a_400_naming_the_cap_and_the_param(db, server):
    tenant_id, key = make_tenant(db[1], max_output_tokens=64)
    for path, field in [("/v1/chat/completions", "max_tokens"), ("/v1/chat/completions", "max_completion_tokens"),
                        ("/v1/completions", "max_tokens")]:
        r = post(server, key, path, **{field: 200})
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert (error["param"], error["code"], error["type"]) == (field, "max_output_tokens_exceeded",
                                                                  "invalid_request_error")
        assert "64" in error["message"] and "200" in error["message"]
    ok = post(server, key, max_tokens=64)
    assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] == 64 and CLAMPED not in ok.headers
    rows = wait_usage_rows(db[1], tenant_id, 1)
    assert len(rows) == 1 and rows[0].max_tokens_cap is None  # refusals are not billed; the 64 was not clamped


def test_clamp_runs_at_the_cap_and_says_so(db, server):
    tenant_id, key = make_tenant(db[1], max_output_tokens=64, output_cap_mode="clamp")
    r = post(server, key, max_tokens=200)
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 64 and r.json()["choices"][0]["finish_reason"] == "length"
    assert r.headers[CLAMPED] == "200->64"
    with httpx.stream("POST", f"{server.url}/v1/completions", timeout=30, headers={"Authorization": f"Bearer {key}"},
                      json={"model": MODEL, "prompt": "Hi", "max_tokens": 100, "stream": True,
                            "stream_options": {"include_usage": True}}) as stream:
        assert stream.headers[CLAMPED] == "100->64"
        events = [json.loads(line[6:]) for line in stream.iter_lines()
                  if line.startswith("data: ") and line != "data: [DONE]"]
    assert events[-1]["usage"]["completion_tokens"] == 64
    rows = wait_usage_rows(db[1], tenant_id, 2)
    assert sorted((row.max_tokens_asked, row.max_tokens_cap) for row in rows) == [(100, 64), (200, 64)]
    bill = httpx.get(f"{server.url}/admin/tenants/{tenant_id}/bill", params={"month": str(Month.containing(utcnow()))},
                     headers={"Authorization": f"Bearer {ADMIN_KEY}"}).json()
    # Clamped twice, saving (200 - 64) + (100 - 64) tokens of output the tenant asked for.
    assert (bill["requests_clamped"], bill["tokens_saved_by_cap"]) == (2, 172)
    assert sum(line["completion_tokens"] for line in bill["lines"]) == 128


def test_the_default_applies_when_a_request_names_no_max_tokens(db, server):
    _, key = make_tenant(db[1], default_max_tokens=16)
    r = post(server, key)
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 16 and CLAMPED not in r.headers
    asked = post(server, key, max_tokens=40)  # a request that names one gets it (no cap here)
    assert asked.json()["usage"]["completion_tokens"] == 40
    _capped_only, key2 = make_tenant(db[1], max_output_tokens=24)
    assert post(server, key2).json()["usage"]["completion_tokens"] == 24  # no default: the cap bounds it


def test_a_key_cap_is_stricter_than_its_tenant_and_applies_to_that_key_alone(db, server):
    tenant_id, open_key = make_tenant(db[1], max_output_tokens=100)
    tight = key_for(db[1], tenant_id, max_output_tokens=32, default_max_tokens=8)
    r = post(server, tight, max_tokens=50)
    assert r.status_code == 400 and r.json()["error"]["param"] == "max_tokens"
    assert "32" in r.json()["error"]["message"]
    assert post(server, tight).json()["usage"]["completion_tokens"] == 8
    assert post(server, open_key, max_tokens=50).json()["usage"]["completion_tokens"] == 50
    # A key cap looser than the tenant's does not lift it.
    loose = key_for(db[1], tenant_id, max_output_tokens=500)
    assert post(server, loose, max_tokens=200).status_code == 400


def test_a_cap_set_through_the_admin_api_takes_effect_on_the_next_request(db, server):
    tenant_id, key = make_tenant(db[1])
    assert post(server, key, max_tokens=100).json()["usage"]["completion_tokens"] == 100
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    r = httpx.patch(f"{server.url}/admin/tenants/{tenant_id}", headers=admin,
                    json={"max_output_tokens": 10, "output_cap_mode": "clamp"})
    assert r.status_code == 200, r.text
    clamped = post(server, key, max_tokens=100)
    assert clamped.json()["usage"]["completion_tokens"] == 10 and clamped.headers[CLAMPED] == "100->10"


def test_a_cache_hit_is_cut_to_the_cap_like_a_generation(db):
    from tests.gateway.api.v1.pipeline.test_admit import CountingEmbedder

    tmp, url = db
    app = create_app(gateway_settings(tmp, url, embeddings_enabled=False, cache_enabled=True),
                     backend=CannedBackend(tokens=30), embedder=CountingEmbedder())
    tenant_id, key = make_tenant(url)
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    question = {"messages": [{"role": "user", "content": "What is the capital of France?"}], "temperature": 0}
    with LiveServer(app) as live:
        first = post(live, key, **question)
        assert first.json()["usage"]["completion_tokens"] == 30  # stored whole: no cap yet
        cache, deadline = app.state.services.cache, time.monotonic() + 15
        while cache.stats(tenant_id).entries < 1:
            assert time.monotonic() < deadline, "the answer was never stored"
            time.sleep(0.02)
        httpx.patch(f"{live.url}/admin/tenants/{tenant_id}", headers=admin,
                    json={"max_output_tokens": 10, "output_cap_mode": "clamp"}).raise_for_status()
        clamped = post(live, key, max_tokens=200, **question)
        assert clamped.headers["x-tollgate-cache"] == "hit" and clamped.headers[CLAMPED] == "200->10"
        assert clamped.json()["usage"]["completion_tokens"] == 10
        httpx.patch(f"{live.url}/admin/tenants/{tenant_id}", headers=admin,
                    json={"max_output_tokens": None, "default_max_tokens": 5}).raise_for_status()
        defaulted = post(live, key, **question)
        assert defaulted.headers["x-tollgate-cache"] == "hit"
        assert defaulted.json()["usage"]["completion_tokens"] == 5


def test_the_responses_api_names_its_own_param(db, server):
    _, key = make_tenant(db[1], max_output_tokens=12)
    r = post(server, key, "/v1/responses", input="Tell me a story.", max_output_tokens=50)
    assert r.status_code == 400 and r.json()["error"]["param"] == "max_output_tokens"
    assert "12" in r.json()["error"]["message"] and "max_output_tokens (50)" in r.json()["error"]["message"]
    _, clamp_key = make_tenant(db[1], max_output_tokens=12, output_cap_mode="clamp")
    ok = post(server, clamp_key, "/v1/responses", input="Tell me a story.", max_output_tokens=50)
    assert ok.status_code == 200 and ok.headers[CLAMPED] == "50->12"
    assert ok.json()["usage"]["output_tokens"] == 12


def test_completions_default_of_16_gives_way_to_the_plan(db, server):
    # OpenAI's completions default (16 tokens) is not the client's ask: a cap below it bounds it, no 400, no header.
    _, capped = make_tenant(db[1], max_output_tokens=8)
    r = post(server, capped, "/v1/completions")
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 8 and CLAMPED not in r.headers
    _, defaulted = make_tenant(db[1], default_max_tokens=5)
    assert post(server, defaulted, "/v1/completions").json()["usage"]["completion_tokens"] == 5
    _, plain = make_tenant(db[1])
    assert post(server, plain, "/v1/completions").json()["usage"]["completion_tokens"] == 16
