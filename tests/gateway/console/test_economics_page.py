"""The console's economics page: per model, cost as served with its basis (replica-hours for the pool, provider
prices for upstream versions), margin, the what-if and the crossover in words; admins only."""
from __future__ import annotations

import html

import httpx

from gateway.catalogue import load_catalogue
from gateway.main import create_app
from tests.gateway.conftest import gateway_settings
from tests.gateway.console.economics_data import HOSTED, MIXED_API, economics_catalogue, seed_month
from tests.gateway.console.test_prompts_page import signed_in
from tests.gateway.support import ADMIN_KEY, FP32, CannedBackend, LiveServer, make_tenant, migrate_and_seed

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def cells(text: str, header: str) -> list[str]:
    """The cells of the table row whose row header is `header`."""
    row = text.split(f'<th scope="row">{header}</th>')[1].split("</tr>", maxsplit=1)[0]
    return [c.split("</td>")[0].strip() for c in row.split("<td>")[1:]]


def test_the_economics_page_shows_upstream_models_at_provider_prices(tmp_path):
    url = f"sqlite:///{tmp_path / 'tollgate.db'}"
    catalogue = economics_catalogue(tmp_path)
    migrate_and_seed(url, load_catalogue(catalogue))
    seed_month(url)
    _, tenant_key = make_tenant(url)
    settings = gateway_settings(tmp_path, url, catalogue=str(catalogue), embeddings_enabled=False,
                                cache_enabled=False, batch_runner_enabled=False)
    with LiveServer(create_app(settings, backend=CannedBackend(versions=[FP32]))) as server:
        cookies = signed_in(server, ADMIN_KEY)
        page = httpx.get(f"{server.url}/console/economics", cookies=cookies, timeout=10)
        assert page.status_code == 200, page.text
        text = html.unescape(page.text)
        assert '<a href="/console/economics">Economics</a>' in text  # in the admin's menu
        report = httpx.get(f"{server.url}/admin/economics", headers=ADMIN, timeout=10).json()
        api_chat = next(m for m in report["models"] if m["model"] == "api-chat")
        assert api_chat["provider_cost"] == api_chat["cost"] == "2"  # 2M x 0.5 + 1M x 1.0 per million

        # the summary row: the same figures as the JSON, the basis in words
        row = text.split('<a href="#model-')[1:]
        summary = next(r for r in row if '">api-chat</a>' in r).split("</tr>")[0]
        assert [c.split("</td>")[0] for c in summary.split("<td>")[1:]] == \
            ["1", "2000000", "1000000", "4", "2", "provider prices", "2", "50.0 %"]
        # its version: the provider's prices it was costed at
        hosted = cells(text, HOSTED)
        assert hosted[0] == "provider prices" and hosted[5] == "2"
        assert hosted[6] == "0.5 in / 1 out per 1M tokens"
        # the pool's model mixes both bases, prices its pool version per replica-hour, and has a crossover
        assert cells(text, FP32)[0] == "replica-hours" and "per replica-hour" in cells(text, FP32)[6]
        assert cells(text, MIXED_API)[0] == "provider prices"
        pool = next(m for m in report["models"] if m["model"] == "smollm2-135m-instruct")
        [crossover] = pool["crossovers"]
        volume = f"{int(crossover['output_tokens_per_month']):,}"
        assert (f"The pool ({FP32}) becomes cheaper than the API ({MIXED_API}) above {volume} output tokens a month "
                "at 60 % utilisation; this month's 1,500 output tokens are below it") in text
        what_if = {a["version"]: a["cost"] for a in pool["what_if"]}
        shown = text.split("What if: all of smollm2-135m-instruct's tokens")[1].split("</table>")[0]
        assert set(what_if) == {FP32, MIXED_API} and all(cost is not None for cost in what_if.values())
        for version, cost in what_if.items():
            assert cells(shown, version) == [("replica-hours" if version == FP32 else "provider prices"), cost]
        totals = report["totals"]
        assert cells(text.split("<tfoot>")[1], "All models") == [
            str(totals["requests"]), str(sum(m["prompt_tokens"] for m in report["models"])),
            str(totals["completion_tokens"]), totals["revenue"], totals["cost"], "", totals["margin"], ""]

        assert httpx.get(f"{server.url}/console/economics", params={"utilisation": "2"}, cookies=cookies,
                         timeout=10).status_code == 400
        assert httpx.get(f"{server.url}/console/economics", params={"month": "2026-13"}, cookies=cookies,
                         timeout=10).status_code == 400
        tenant_view = httpx.get(f"{server.url}/console/economics", cookies=signed_in(server, tenant_key), timeout=10)
        assert tenant_view.status_code == 403  # the operator's costs are not a tenant's to see
