"""The console's prompts page: every prompt with its owner (a link to the tenant) or "shared"; admins only."""
from __future__ import annotations

import html

import httpx

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.support import ADMIN_KEY, CannedBackend, LiveServer, make_tenant, migrate_and_seed

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
MESSAGES = [{"role": "system", "content": "Hello {{name}}"}]


def signed_in(server, credential: str) -> dict[str, str]:
    form = httpx.get(f"{server.url}/console/login", timeout=10)
    token = form.text.split('name="csrf_token" value="')[1].split('"')[0]
    r = httpx.post(f"{server.url}/console/login", data={"credential": credential, "csrf_token": token},
                   cookies={"tollgate_console_login": form.cookies["tollgate_console_login"]}, timeout=10)
    assert r.status_code == 303, r.text
    return {"tollgate_console": r.cookies["tollgate_console"]}


def test_the_prompts_page_shows_each_owner(tmp_path, gw_catalogue):
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    owner_id, owner_key = make_tenant(url)
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False,
                                batch_runner_enabled=False)
    with LiveServer(create_app(settings, backend=CannedBackend())) as server:
        owner_name = httpx.get(f"{server.url}/admin/tenants/{owner_id}", headers=ADMIN).json()["name"]
        for body in ({"name": "team-x", "tenant_id": owner_id, "messages": MESSAGES},
                     {"name": "everyone", "messages": MESSAGES}):
            assert httpx.post(f"{server.url}/admin/prompts", headers=ADMIN, json=body).status_code == 201
        page = httpx.get(f"{server.url}/console/prompts", cookies=signed_in(server, ADMIN_KEY), timeout=10)
        assert page.status_code == 200, page.text
        text = html.unescape(page.text)
        assert f'<a href="/console/tenants/{owner_id}">{owner_name}</a>' in text
        row = text.split('<th scope="row">everyone</th>')[1].split("</tr>")[0]
        assert "<td>shared</td>" in row
        tenant_view = httpx.get(f"{server.url}/console/prompts", cookies=signed_in(server, owner_key), timeout=10)
        assert tenant_view.status_code == 403  # a tenant's console shows its own usage, not the prompt store
