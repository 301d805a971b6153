"""Every page is reachable from the menu, by keyboard too; readable at 1280 px and at phone width; long
tables paginate; charts draw from the vendored uPlot. Each page leaves a screenshot."""
from __future__ import annotations

import uuid

from gateway.crud.tenants import create_tenant
from gateway.db.database import Database
from openai import OpenAI

from tests.console.conftest import ADMIN_KEY, shot, sign_in
from tests.gateway.support import make_tenant

PAGES = {"Overview": "Overview", "Tenants": "Tenants", "Bills": "Bills", "Economics": "Economics",
         "Routes": "Routes", "Cache": "Semantic cache", "Workers": "Workers"}


def _many_tenants(url: str, n: int) -> None:
    db = Database(url)
    try:
        with db.session() as session:
            for _ in range(n):
                create_tenant(session, name=f"bulk-{uuid.uuid4().hex[:10]}")
    finally:
        db.dispose()


def test_every_page_from_the_menu_at_desktop_and_phone_width(admin_page):
    page = admin_page
    for link, heading in PAGES.items():
        page.get_by_role("navigation", name="Console pages").get_by_role("link", name=link).click()
        assert page.get_by_role("heading", name=heading, exact=True).is_visible(), link
        shot(page, f"{link.lower()}")
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_timeout(250)  # charts redraw at the new width
        # Nothing wider than the phone's screen but the tables, which scroll inside their own box.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), link
        if link in ("Overview", "Routes"):
            shot(page, f"{link.lower()}-phone")
        page.set_viewport_size({"width": 1280, "height": 900})


def test_overview_charts_draw_and_the_figures_refresh(admin_page, console_server):
    _, key = make_tenant(console_server.db_url)
    client = OpenAI(base_url=f"{console_server.url}/v1", api_key=key, max_retries=0)
    for i in range(12):
        client.chat.completions.create(model="chat", max_tokens=3 + i % 4, user=str(i),
                                       messages=[{"role": "user", "content": "Traffic for the charts."}])
    page = admin_page
    page.goto("/console/?window=hour")
    page.wait_for_function("document.querySelectorAll('.plot canvas').length === 6")
    assert page.get_by_text("Requests in window").is_visible()
    shot(page, "overview-with-traffic", full_page=False)
    page.goto("/console/?window=day")
    assert page.locator(".plot canvas").count() == 6  # six uPlot charts, drawn by the vendored script
    assert page.get_by_role("img", name="Chart: Requests per second over the last day").is_visible()
    with page.expect_response(lambda r: "/console/overview/figures" in r.url and r.status == 200):
        page.get_by_role("button", name="Refresh figures").click()  # what the 15 s timer does too
    assert page.get_by_text("Spend this month").is_visible()


def test_keyboard_only_sign_out_and_labelled_fields(context):
    page = context.new_page()
    sign_in(page, ADMIN_KEY)  # its own session: it signs out at the end
    page.goto("/console/tenants")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    for field in ("Name", "Requests per minute (empty: unlimited)", "Tokens per minute (empty: unlimited)",
                  "Monthly token budget (empty: unlimited)"):
        assert page.get_by_label(field).is_editable()
    page.get_by_label("Name").focus()
    page.keyboard.type(f"kbd-{uuid.uuid4().hex[:6]}")
    page.keyboard.press("Enter")  # submits the form
    assert page.get_by_role("status").inner_text() == "Tenant created."
    page.get_by_role("button", name="Sign out").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/console/login**")


def test_long_tables_paginate(admin_page, console_server):
    _many_tenants(console_server.db_url, 30)
    page = admin_page
    page.goto("/console/tenants")
    table = page.get_by_role("table", name="Tenants, with tokens and spend in")
    assert table.locator("tbody tr").count() == 25
    pager = page.get_by_role("navigation", name="Tenants pages")
    assert "Page 1 of" in pager.inner_text()
    pager.get_by_role("link", name="Next page").click()
    assert "Page 2 of" in page.get_by_role("navigation", name="Tenants pages").inner_text()
    assert 1 <= table.locator("tbody tr").count() <= 25
