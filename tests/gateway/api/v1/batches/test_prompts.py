"""A batch line may name a stored prompt as an interactive request does: rendered, on the ledger row; a line
missing variables is that line's 400."""
from __future__ import annotations

import httpx
import pytest

from tests.gateway.api.v1.batches.conftest import MODEL, auth, batch_of, content, serve, wait_for
from tests.gateway.support import ADMIN_KEY, CannedBackend, make_tenant, wait_usage_rows


@pytest.fixture(scope="module")
def live(db):
    with serve(db, CannedBackend(tokens=2)) as server:
        yield server


def line(custom_id: str, variables: dict) -> dict:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": MODEL, "messages": [], "prompt": {"id": "batchy", "variables": variables}}}


def test_batch_lines_use_the_stored_prompt(db, live):
    r = httpx.post(f"{live.url}/admin/prompts", headers=auth(ADMIN_KEY),
                   json={"name": "batchy", "messages": [{"role": "user", "content": "Hi {{who}}"}]})
    assert r.status_code == 201, r.text
    tenant_id, key = make_tenant(db[1])
    done = wait_for(live, key, batch_of(live, key, [line("ok", {"who": "Ann"}), line("bad", {})])["id"])
    assert done["request_counts"] == {"total": 2, "completed": 1, "failed": 1}, done
    (ok,) = content(live, key, done["output_file_id"])
    assert ok["custom_id"] == "ok" and ok["response"]["body"]["choices"][0]["message"]["content"] == "aa"
    (bad,) = content(live, key, done["error_file_id"])
    assert bad["response"]["status_code"] == 400
    assert "who" in bad["response"]["body"]["error"]["message"]
    (row,) = wait_usage_rows(db[1], tenant_id, 1)
    assert row.prompt_version == "batchy:1" and row.kind == "batch"


def test_a_batch_line_serves_an_owned_prompt_to_its_owner_only(db, live):
    owner_id, owner_key = make_tenant(db[1])
    _, other_key = make_tenant(db[1])
    r = httpx.post(f"{live.url}/admin/prompts", headers=auth(ADMIN_KEY), json={
        "name": "owned-batchy", "tenant_id": owner_id, "messages": [{"role": "user", "content": "Hi {{who}}"}]})
    assert r.status_code == 201, r.text
    owned = {**line("x", {"who": "Ann"})}
    owned["body"] = {**owned["body"], "prompt": {"id": "owned-batchy", "variables": {"who": "Ann"}}}
    done = wait_for(live, owner_key, batch_of(live, owner_key, [owned])["id"])
    assert done["request_counts"] == {"total": 1, "completed": 1, "failed": 0}, done
    done = wait_for(live, other_key, batch_of(live, other_key, [owned])["id"])
    (refused,) = content(live, other_key, done["error_file_id"])
    assert refused["response"]["status_code"] == 404
    assert refused["response"]["body"]["error"]["code"] == "prompt_not_found"
    assert "who" not in refused["response"]["body"]["error"]["message"]
