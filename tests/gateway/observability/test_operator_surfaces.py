"""/metrics needs the metrics token (or the admin key); /docs, /redoc and /openapi.json exist only
when an operator turns them on. Refusals come in OpenAI's error shape."""
from __future__ import annotations

from contextlib import asynccontextmanager

import httpx
import pytest

from gateway.main import create_app
from gateway.security.metrics_token import read_metrics_token
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, METRICS_TOKEN, CannedBackend, make_tenant, migrate_and_seed

DOCS = ("/docs", "/redoc", "/openapi.json")


@pytest.fixture(scope="module")
def db_url(tmp_path_factory, gw_catalogue) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('surfaces') / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    return url


@asynccontextmanager
async def gateway(settings):
    app = create_app(settings, backend=CannedBackend())
    async with (app.router.lifespan_context(app),
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway") as http):
        yield http


def settings_for(tmp_path, db_url, **extra):
    return gateway_settings(tmp_path, db_url, embeddings_enabled=False, cache_enabled=False, **extra)


def assert_refused(resp: httpx.Response, status: int) -> None:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_metrics_need_the_metrics_token_or_the_admin_key(tmp_path, db_url):
    _, tenant_key = make_tenant(db_url)
    async with gateway(settings_for(tmp_path, db_url)) as http:
        for headers in ({}, bearer("wrong"), bearer(tenant_key), bearer(METRICS_TOKEN[:-1])):
            resp = await http.get("/metrics", headers=headers)
            assert_refused(resp, 401)
            assert resp.json()["error"]["code"] == "invalid_api_key"
        for token in (METRICS_TOKEN, ADMIN_KEY):
            resp = await http.get("/metrics", headers=bearer(token))
            assert resp.status_code == 200 and "tollgate_requests_total" in resp.text
        assert (await http.get("/healthz")).status_code == 200  # liveness stays open for probes


async def test_without_a_configured_token_one_is_generated_into_the_data_dir(tmp_path, db_url):
    async with gateway(settings_for(tmp_path, db_url, metrics_token="")) as http:
        generated = read_metrics_token(settings_for(tmp_path, db_url, metrics_token=""))
        assert generated and generated.startswith("tgm-") and (tmp_path / "metrics_token").exists()
        assert_refused(await http.get("/metrics"), 401)
        assert (await http.get("/metrics", headers=bearer(generated))).status_code == 200


async def test_a_short_metrics_token_stops_start_up(tmp_path, db_url):
    from gateway.security.secret_file import WeakSecret

    app = create_app(settings_for(tmp_path, db_url, metrics_token="short"), backend=CannedBackend())
    with pytest.raises(WeakSecret, match="TOLLGATE_METRICS_TOKEN"):
        async with app.router.lifespan_context(app):
            pass


async def test_docs_are_off_by_default(tmp_path, db_url):
    async with gateway(settings_for(tmp_path, db_url)) as http:
        for path in DOCS:
            for headers in ({}, bearer(ADMIN_KEY)):
                assert_refused(await http.get(path, headers=headers), 404)


async def test_docs_when_the_operator_turns_them_on(tmp_path, db_url):
    async with gateway(settings_for(tmp_path, db_url, docs_enabled=True)) as http:
        for path in DOCS:
            assert (await http.get(path)).status_code == 200
        assert "/v1/chat/completions" in (await http.get("/openapi.json")).json()["paths"]
