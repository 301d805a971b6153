"""Response headers built from client text stay valid header values."""
from __future__ import annotations

import httpx

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import CannedBackend, LiveServer, make_tenant, migrate_and_seed


def test_ignored_field_names_are_escaped_into_the_header(tmp_path, gw_catalogue):
    """A field name outside printable ASCII was a 500 (or a dropped connection) on its way into the header."""
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    _, key = make_tenant(url)
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False)
    body = {"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
            "chat_id": 1, "\u0100": None, "a,b\u001f": None}
    with LiveServer(create_app(settings, backend=CannedBackend())) as server:
        r = httpx.post(f"{server.url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    assert r.headers["x-tollgate-ignored-fields"] == "chat_id,%C4%80,a%2Cb%1F"
