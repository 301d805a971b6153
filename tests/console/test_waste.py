"""An operator opens a tenant's waste report from its page: the repeated share and the longest repeated prompts
the tenant sent are the admin API's figures, read off the page by their labels."""
from __future__ import annotations

import re
import time

from openai import OpenAI

from tests.console.conftest import admin_api, shot
from tests.gateway.support import make_tenant

SYSTEM = "You are the helpdesk of a bicycle shop. Keep answers short."


def _waste_when(server, tenant_id: str, done) -> dict:
    deadline = time.monotonic() + 15
    while True:  # the gateway writes what it hashed in the background, once a second
        report = admin_api(server, "GET", f"/admin/tenants/{tenant_id}/waste").json()
        if done(report) or time.monotonic() > deadline:
            return report
        time.sleep(0.1)


def test_an_operator_reads_a_tenants_repeated_prompts(admin_page, console_server):
    tenant_id, key = make_tenant(console_server.db_url)
    client = OpenAI(base_url=f"{console_server.url}/v1", api_key=key, max_retries=0)
    for question in ("How do I fix a flat tyre?", "How do I fix a flat tyre?", "Do you sell helmets?"):
        client.chat.completions.create(model="smollm2-135m-instruct", max_tokens=2, messages=[
            {"role": "system", "content": SYSTEM}, {"role": "user", "content": question}])
    report = _waste_when(console_server, tenant_id, lambda r: len(r["longest_repeated"]) == 2)

    page = admin_page
    page.goto(f"/console/tenants/{tenant_id}")
    page.get_by_role("link", name=re.compile(r"^Waste report for \d{4}-\d{2}$")).click()
    assert page.get_by_role("heading", name=re.compile("^Waste of ")).is_visible()
    month = report["month"]

    summary = page.get_by_role("table", name=f"Repeated input in {month}")
    hashed = summary.get_by_role("row").filter(has_text="Sent before this month")
    assert hashed.get_by_role("cell").all_inner_texts() == [
        f"{report['hashed_repeated_tokens']:,}", f"{report['hashed_input_tokens']:,}",
        f"{report['hashed_repeated_share'] * 100:.1f} %"]

    longest = page.get_by_role("table", name=f"Longest repeated prompts in {month}")
    rows = [[c.strip() for c in r.locator("th, td").all_inner_texts()] for r in longest.locator("tbody tr").all()]
    kinds = {"system": "system prompt", "prompt": "whole prompt"}
    assert [r[:5] for r in rows] == [[p["preview"], kinds[p["kind"]], f"{p['tokens']:,}", str(p["times_seen"]),
                                      f"{p['repeated_tokens']:,}"] for p in report["longest_repeated"]]
    assert {r[0] for r in rows} == {SYSTEM, "How do I fix a flat tyre?"}
    shot(page, "tenant-waste")

    page.get_by_label("Month (YYYY-MM)").fill("2001-01")  # a month with nothing sent
    page.get_by_role("button", name="Show waste").click()
    assert page.get_by_role("table", name="Longest repeated prompts in 2001-01").get_by_role("cell").inner_text() \
        == "No prompt repeated in 2001-01."
