"""An operator opens the economics page from the menu and reads, per model, what its traffic cost as served:
the upstream-only model at the provider's prices, the pool's model in replica-hours beside its upstream version,
the what-if and the crossover volume in words."""
from __future__ import annotations

import re

import pytest

from gateway.catalogue import load_catalogue
from gateway.main import create_app
from tests.console.conftest import shot, sign_in
from tests.gateway.conftest import gateway_settings
from tests.gateway.console.economics_data import HOSTED, MIXED_API, economics_catalogue, seed_month
from tests.gateway.support import ADMIN_KEY, FP32, CannedBackend, LiveServer, migrate_and_seed


@pytest.fixture(scope="module")
def economics_server(tmp_path_factory):
    """A gateway of its own: its catalogue has upstream versions (the package's console_server has none)."""
    tmp = tmp_path_factory.mktemp("console-economics")
    url = f"sqlite:///{tmp / 'tollgate.db'}"
    catalogue = economics_catalogue(tmp)
    migrate_and_seed(url, load_catalogue(catalogue))
    seed_month(url)
    settings = gateway_settings(tmp, url, catalogue=str(catalogue), embeddings_enabled=False, cache_enabled=False,
                                batch_runner_enabled=False)
    with LiveServer(create_app(settings, backend=CannedBackend(versions=[FP32]))) as server:
        yield server


def _cells(table, header: str) -> list[str]:
    row = table.get_by_role("row").filter(has=table.page.get_by_role("rowheader", name=header, exact=True))
    return [c.strip() for c in row.get_by_role("cell").all_inner_texts()]


def test_the_operator_reads_self_host_against_the_api(browser, economics_server):
    ctx = browser.new_context(base_url=economics_server.url, viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(10_000)
    try:
        page = ctx.new_page()
        sign_in(page, ADMIN_KEY)
        page.get_by_role("navigation", name="Console pages").get_by_role("link", name="Economics").click()
        assert page.get_by_role("heading", name="Economics", exact=True).is_visible()
        assert page.get_by_label("Month (YYYY-MM)").input_value() == re.search(r"\d{4}-\d{2}", page.title())[0]

        models = page.get_by_role("table", name="Every model's month (USD)")
        # requests, prompt, completion tokens, revenue, cost as served, basis, margin, margin %
        assert _cells(models, "api-chat") == ["1", "2000000", "1000000", "4", "2", "provider prices", "2", "50.0 %"]
        assert _cells(models, "smollm2-135m-instruct")[5] == "provider prices and replica-hours"

        hosted = _cells(page.get_by_role("table", name="api-chat: each version as served"), HOSTED)
        assert hosted[0] == "provider prices" and hosted[5] == "2"
        assert hosted[6] == "0.5 in / 1 out per 1M tokens"
        pool = page.get_by_role("table", name="smollm2-135m-instruct: each version as served")
        assert _cells(pool, FP32)[0] == "replica-hours" and _cells(pool, MIXED_API)[0] == "provider prices"
        what_if = page.get_by_role("table",
                                   name="What if: all of smollm2-135m-instruct's tokens this month on one version")
        assert [_cells(what_if, v)[0] for v in (FP32, MIXED_API)] == ["replica-hours", "provider prices"]
        assert page.get_by_text(re.compile(rf"The pool \({re.escape(FP32)}\) becomes cheaper than the API "
                                           rf"\({re.escape(MIXED_API)}\) above [\d,]+ output tokens a month "
                                           r"at 60 % utilisation")).is_visible()
        shot(page, "economics")

        page.get_by_label("Utilisation for break-even (0–1, default 0.6)").fill("2")
        page.get_by_role("button", name="Show economics").click()
        assert page.get_by_role("alert").filter(has_text="utilisation must be in (0, 1]").is_visible()
    finally:
        ctx.close()
