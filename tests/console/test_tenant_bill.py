"""An operator creates a tenant and its key on the pages; the key makes real calls through the openai SDK;
the tenant page's bill equals the admin API's bill line by line, total included; its CSV downloads."""
from __future__ import annotations

import re
import uuid

import openai
import pytest
from openai import OpenAI

from tests.console.conftest import admin_api, shot
from gateway.domain.api_keys import visible_prefix
from tests.gateway.support import make_tenant, wait_usage_rows


def _bill_rows(page) -> tuple[list[list[str]], str]:
    table = page.get_by_role("table", name=re.compile(r"^Bill for \d{4}-\d{2}$"))
    rows = [[c.strip() for c in r.locator("th, td").all_inner_texts()] for r in table.locator("tbody tr").all()]
    total = table.locator("tfoot td").inner_text().strip()
    return rows, total


def test_create_tenant_and_key_on_the_page_then_bill_matches_the_api(admin_page, console_server):
    page, name = admin_page, f"acme-{uuid.uuid4().hex[:6]}"
    page.get_by_role("link", name="Tenants").click()
    page.get_by_label("Name").fill(name)
    page.get_by_label("Requests per minute (empty: unlimited)").fill("600")
    page.get_by_role("button", name="Create tenant").click()
    assert page.get_by_role("heading", name=f"Tenant {name}").is_visible()
    assert page.get_by_role("status").filter(has_text="Tenant created.").is_visible()
    tenant_id = page.url.split("/console/tenants/")[1].split("?")[0]
    created = admin_api(console_server, "GET", "/admin/audit", params={"target": f"tenant:{tenant_id}"}).json()
    assert created["data"][0]["action"] == "tenant.create" and created["data"][0]["actor"].startswith("console:admin:")

    page.get_by_role("button", name="Create key").click()
    key = page.get_by_label("New API key").inner_text().strip()
    assert key.startswith("tg-")
    page.goto(f"/console/tenants/{tenant_id}")  # shown once: gone on the next load, only the prefix stays
    assert key not in page.content() and key[:8] in page.content()

    client = OpenAI(base_url=f"{console_server.url}/v1", api_key=key, max_retries=0)
    for i in range(3):
        reply = client.chat.completions.create(model="smollm2-135m-instruct", max_tokens=6 - i,
                                               messages=[{"role": "user", "content": f"Say hi {i} times."}])
        assert reply.usage.completion_tokens == 6 - i
    streamed = client.chat.completions.create(model="smollm2-135m-instruct", stream=True, max_tokens=4,
                                              messages=[{"role": "user", "content": "Stream please."}],
                                              stream_options={"include_usage": True})
    assert next(c for c in streamed if c.usage).usage.completion_tokens == 4
    assert len(wait_usage_rows(console_server.db_url, tenant_id, 4)) == 4

    page.goto(f"/console/tenants/{tenant_id}")
    api = admin_api(console_server, "GET", f"/admin/tenants/{tenant_id}/bill").json()
    rows, total = _bill_rows(page)
    expected = [[line["model"], line["kind"], str(line["tier"]), str(line["requests"]), str(line["prompt_tokens"]),
                 str(line["completion_tokens"]), str(line["cached_tokens"]), line["cost"]] for line in api["lines"]]
    assert rows == expected and total == api["total_cost"]  # the same decimal strings
    assert api["lines"][0]["requests"] == 4 and api["lines"][0]["completion_tokens"] == 19
    assert page.get_by_role("button", name=re.compile("^Revoke key")).count() == 1
    shot(page, "tenant-bill")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download the usage of").click()
    csv_text = download.value.path().read_text()
    assert csv_text.splitlines()[0].startswith("request_id,created_at,tenant_id")
    assert len(csv_text.splitlines()) == 5 and all(tenant_id in line for line in csv_text.splitlines()[1:])

    # The Bills page and the Tenants list carry the same total (GET /admin/bills' function).
    page.goto("/console/bills?page=999")  # the newest tenant's bill is on the last page (clamped)
    row = page.get_by_role("table", name=re.compile("^Every tenant's bill")).get_by_role("row").filter(has_text=name)
    assert row.get_by_role("cell").last.inner_text() == api["total_cost"]
    with page.expect_download() as download:
        page.get_by_role("link", name="Download every ledger row of").click()
    assert sum(tenant_id in line for line in download.value.path().read_text().splitlines()) == 4
    page.goto("/console/tenants?page=999")  # the newest tenant is on the last page (clamped)
    row = page.get_by_role("row").filter(has_text=name)
    assert row.get_by_role("cell").last.inner_text() == f"{api['total_cost']} USD"
    assert row.get_by_role("cell").nth(-2).inner_text() == "33"  # 14 prompt + 19 completion tokens


def test_a_bad_month_and_a_bad_limit_are_shown_in_words(admin_page):
    page = admin_page
    page.get_by_role("link", name="Tenants").click()
    page.get_by_label("Name").fill(f"bad-{uuid.uuid4().hex[:6]}")
    page.get_by_label("Tokens per minute (empty: unlimited)").fill("-5")
    page.get_by_role("button", name="Create tenant").click()
    assert "tpm: Input should be greater than or equal to 1" in page.get_by_role("alert").inner_text()
    response = page.goto("/console/bills?month=2026-13")
    assert response.status == 400 and "not a month" in page.get_by_role("alert").inner_text()


def test_edit_limits_revoke_a_key_and_disable_on_the_page(admin_page, console_server):
    tenant_id, key = make_tenant(console_server.db_url)
    page = admin_page
    page.goto(f"/console/tenants/{tenant_id}")
    page.get_by_label("Requests per minute (empty: unlimited)").fill("5")
    page.get_by_label("Monthly token budget (empty: unlimited)").fill("100000")
    page.get_by_role("button", name="Save limits").click()
    assert page.get_by_role("status").inner_text() == "Tenant saved."
    api = admin_api(console_server, "GET", f"/admin/tenants/{tenant_id}").json()
    assert (api["rpm"], api["monthly_token_budget"], api["status"]) == (5, 100000, "active")

    page.get_by_role("button", name=f"Revoke key {visible_prefix(key)}").click()
    assert "Key revoked" in page.get_by_role("status").inner_text()
    client = OpenAI(base_url=f"{console_server.url}/v1", api_key=key, max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="chat", max_tokens=2, messages=[{"role": "user", "content": "Hi"}])

    page.get_by_label("Status").select_option("disabled")
    page.get_by_label("Requests per minute (empty: unlimited)").fill("")  # empty clears the limit
    page.get_by_role("button", name="Save limits").click()
    api = admin_api(console_server, "GET", f"/admin/tenants/{tenant_id}").json()
    assert (api["rpm"], api["status"]) == (None, "disabled")
    actions = [e["action"] for e in admin_api(console_server, "GET", "/admin/audit",
                                              params={"target": f"tenant:{tenant_id}"}).json()["data"]]
    assert actions[:2] == ["tenant.update", "tenant.update"]
