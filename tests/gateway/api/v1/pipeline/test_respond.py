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


def test_the_ledger_row_is_durable_before_the_answer_leaves(tmp_path, gw_catalogue):
    """The moment a client holds its answer (whole or the stream's [DONE]), its row is in the database: a
    gateway killed right after cannot lose what the client was told it is billed."""
    import json

    from tests.gateway.support import usage_rows

    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    tenant_id, key = make_tenant(url)
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False)
    body = {"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    auth = {"Authorization": f"Bearer {key}"}
    with LiveServer(create_app(settings, backend=CannedBackend(tokens=4))) as server:
        for i in range(3):
            whole = httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=auth)
            assert len(usage_rows(url, tenant_id)) == 2 * i + 1  # read at once: no waiting on the writer
            with httpx.stream("POST", f"{server.url}/v1/chat/completions", headers=auth,
                              json={**body, "stream": True, "stream_options": {"include_usage": True}}) as r:
                lines = [line for line in r.iter_lines() if line.startswith("data: ")]
            assert lines[-1] == "data: [DONE]"
            usage = json.loads(lines[-2][len("data: "):])["usage"]
            rows = usage_rows(url, tenant_id)
            assert len(rows) == 2 * i + 2 and rows[-1].completion_tokens == usage["completion_tokens"]
            assert whole.json()["usage"]["completion_tokens"] == rows[-2].completion_tokens


def test_a_whole_answer_that_fails_midway_bills_nothing_it_did_not_tell(tmp_path, gw_catalogue):
    from tests.gateway.support import usage_rows

    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    tenant_id, key = make_tenant(url)
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False)
    body = {"model": "smollm2-135m-instruct", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
    with LiveServer(create_app(settings, backend=CannedBackend(tokens=8, fail_after=3))) as server:
        r = httpx.post(f"{server.url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 502 and r.json()["error"]["code"] == "generation_failed"
    assert usage_rows(url, tenant_id) == []  # the client got an error and no usage: not billed
