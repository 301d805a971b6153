"""JSON logs carry the request id; metrics render; start-up refuses unpriced models."""
from __future__ import annotations

import json
import logging

import pytest

from gateway.main import create_app
from gateway.observability.logging import JSONFormatter, request_id_var
from gateway.observability.metrics import Metrics
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
    app = create_app(gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False), backend=CannedBackend())
    with pytest.raises(RuntimeError, match="without a price"):
        async with app.router.lifespan_context(app):
            pass
