"""The Cache page over a stand-in semantic cache (the real one loads an embedding model): entries per tenant,
and an invalidation from the page told to the cache and written to the audit log."""
from __future__ import annotations

from gateway.cache.types import CacheStats
from tests.console.conftest import admin_api, shot
from tests.gateway.support import make_tenant


class StandInCache:
    def __init__(self) -> None:
        self.invalidated: list[tuple[str, str | None]] = []

    def stats(self, tenant_id: str) -> CacheStats:
        return CacheStats(tenant_id, entries=7, hits=3, misses=4)

    async def invalidate(self, tenant_id: str, entry_id: str | None = None) -> int:
        self.invalidated.append((tenant_id, entry_id))
        return 7


def test_entries_per_tenant_and_invalidate_from_the_page(admin_page, console_server):
    tenant_id, _ = make_tenant(console_server.db_url)
    name = admin_api(console_server, "GET", f"/admin/tenants/{tenant_id}").json()["name"]
    services = console_server.server.config.app.state.services
    services.cache = cache = StandInCache()
    try:
        page = admin_page
        page.get_by_role("link", name="Cache").click()
        page.get_by_role("button", name=f"Invalidate the cache of {name}").click()
        assert "dropped" in page.get_by_role("status").inner_text()
        assert cache.invalidated == [(tenant_id, None)]
        row = page.get_by_role("row").filter(has_text=name)
        assert row.get_by_role("cell").nth(0).inner_text() == "7"
        shot(page, "cache-enabled")
    finally:
        services.cache = None
    audit = admin_api(console_server, "GET", "/admin/audit", params={"action": "cache.invalidate"}).json()
    assert audit["data"][0]["target"] == {"type": "cache", "id": tenant_id}
    assert audit["data"][0]["actor"].startswith("console:admin:")
