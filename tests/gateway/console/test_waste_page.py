"""The console's waste page: a tenant's repeated input, semantic-cache savings and longest repeated prompts, the
same figures as GET /admin/tenants/{id}/waste; admins only (the previews are the tenant's prompts), escaped."""
from __future__ import annotations

import html
import time

import httpx

from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.console.test_economics_page import cells
from tests.gateway.console.test_prompts_page import signed_in
from tests.gateway.support import (
    ADMIN_KEY,
    CannedBackend,
    LiveServer,
    make_tenant,
    migrate_and_seed,
)

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
SYSTEM = {"role": "system", "content": "You review <b>pull requests</b> & answer briefly."}


def test_the_waste_page_shows_the_reports_figures_to_admins_only(tmp_path, gw_catalogue):
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, gw_catalogue)
    tenant_id, key = make_tenant(url)
    settings = gateway_settings(tmp_path, url, embeddings_enabled=False, cache_enabled=False,
                                batch_runner_enabled=False, waste_flush_s=0.05)
    with LiveServer(create_app(settings, backend=CannedBackend(tokens=2))) as server:
        for question in ("Is this diff safe?", "Is this diff safe?", "Any typos here?"):
            r = httpx.post(f"{server.url}/v1/chat/completions", timeout=30, headers={"Authorization": f"Bearer {key}"},
                           json={"model": "smollm2-135m-instruct", "max_tokens": 2,
                                 "messages": [SYSTEM, {"role": "user", "content": question}]})
            assert r.status_code == 200, r.text
        deadline = time.monotonic() + 15
        while True:  # the hashing writes in the background
            report = httpx.get(f"{server.url}/admin/tenants/{tenant_id}/waste", headers=ADMIN, timeout=10).json()
            if len(report["longest_repeated"]) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert report["hashed_repeated_tokens"] > 0

        cookies = signed_in(server, ADMIN_KEY)
        tenant_page = httpx.get(f"{server.url}/console/tenants/{tenant_id}", cookies=cookies, timeout=10).text
        assert f'href="/console/tenants/{tenant_id}/waste?month={report["month"]}"' in tenant_page
        page = httpx.get(f"{server.url}/console/tenants/{tenant_id}/waste", cookies=cookies, timeout=10)
        assert page.status_code == 200, page.text
        assert "<b>pull requests</b>" not in page.text  # the tenant's text is escaped, never markup
        text = html.unescape(page.text)
        n = "{:,}".format
        assert cells(text, "Sent before this month (gateway hashing)") == [
            n(report["hashed_repeated_tokens"]), n(report["hashed_input_tokens"]),
            f"{report['hashed_repeated_share'] * 100:.1f} %"]
        assert cells(text, "Held by the engine's prefix cache")[0] == n(report["prefix_cached_tokens"])
        for p in report["longest_repeated"]:
            row = cells(text, f"<q>{p['preview']}</q>")
            assert row[:4] == [{"system": "system prompt", "prompt": "whole prompt"}[p["kind"]], n(p["tokens"]),
                               str(p["times_seen"]), n(p["repeated_tokens"])]

        tenant_view = httpx.get(f"{server.url}/console/tenants/{tenant_id}/waste", cookies=signed_in(server, key),
                                timeout=10)
        assert tenant_view.status_code == 403  # a tenant's own key reads its bill, not this page
        own = httpx.get(f"{server.url}/console/tenants/{tenant_id}", cookies=signed_in(server, key), timeout=10)
        assert "/waste" not in own.text  # nor sees the link
        for path, status in ((f"/console/tenants/{tenant_id}/waste?month=2026-13", 400),
                             ("/console/tenants/nope/waste", 404)):
            assert httpx.get(f"{server.url}{path}", cookies=cookies, timeout=10).status_code == status
