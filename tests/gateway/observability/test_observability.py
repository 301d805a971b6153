"""JSON logs carry the request id; metrics render; start-up refuses unpriced models."""
from __future__ import annotations

import json
import logging

import httpx
import pytest

from gateway.main import create_app
from gateway.observability.logging import JSONFormatter, request_id_var
from gateway.observability.metrics import Metrics
from gateway.observability.middleware import RequestContextMiddleware
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import CannedBackend


def test_log_lines_are_json_with_the_request_id():
    record = logging.makeLogRecord({"name": "tollgate.x", "levelname": "INFO", "msg": "hello %s",
                                    "args": ("you",), "status": 200})
    token = request_id_var.set("req_abc")
    try:
        line = json.loads(JSONFormatter().format(record))
    finally:
        request_id_var.reset(token)
    assert line["msg"] == "hello you" and line["request_id"] == "req_abc" and line["status"] == 200


def test_metrics_render_each_family():
    m = Metrics()
    m.record_usage("t1", "m", prompt=3, completion=2, cached=1, cost=0.5)
    m.rejections.labels("t1", "rate_limit_exceeded").inc()
    text = m.render().decode()
    for name in ("tollgate_tokens_total", "tollgate_cost_total", "tollgate_limiter_rejections_total",
                 "tollgate_request_latency_seconds", "tollgate_time_to_first_token_seconds"):
        assert name in text
    assert Metrics().render()  # a second app's registry does not collide


async def test_startup_fails_loudly_without_prices(tmp_path):
    from gateway.db.migrate import upgrade

    url = f"sqlite:///{tmp_path / 'unpriced.db'}"
    upgrade(url)  # tables, but no prices seeded
    app = create_app(gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False),
                     backend=CannedBackend())
    with pytest.raises(RuntimeError, match="without a price"):
        async with app.router.lifespan_context(app):
            pass


async def test_a_url_with_a_nul_byte_is_refused_before_any_route():
    """PostgreSQL refuses NUL in text: a NUL in an id or a query value was a 500 at the first lookup."""
    reached = []

    async def app(scope, receive, send):
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    transport = httpx.ASGITransport(RequestContextMiddleware(app, max_body_bytes=1000))
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
        for url in ("/admin/tenants/a%00b", "/admin/usage.csv?tenant_id=a%00b"):
            r = await http.get(url)
            assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
            assert set(r.json()["error"]) == {"message", "type", "param", "code"} and r.headers["x-request-id"]
        assert (await http.get("/admin/tenants/a%2500b?q=%2500")).status_code == 200  # an escaped "%00"
    assert reached == ["/admin/tenants/a%00b"]
