"""Cache: hit rate, tokens and money saved, entries per tenant, and invalidation."""
from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from gateway.console.forms import in_words, page_of
from gateway.console.render import error_page, render
from gateway.console.series import DAY_S, headline
from gateway.console.state import console_state
from gateway.console.viewer import AdminViewerDep, FormDep
from gateway.crud.tenants import list_tenants
from gateway.crud.usage_buckets import usage_buckets
from gateway.db.types import utcnow
from gateway.domain.errors import APIError
from gateway.services.cache import invalidate
from gateway.services.deps import ServicesDep
from gateway.services.tenants import tenant_or_404

router = APIRouter()


def _counter_sum(registry, name: str, **labels: str) -> float:
    """A counter's total over every series (prometheus_client lists its samples with the `_total` suffix)."""
    total = 0.0
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


@router.get("/cache")
def cache_page(request: Request, viewer: AdminViewerDep, services: ServicesDep, page: int = 1) -> Response:
    """The semantic cache at a glance (this replica's entries and counts; the ledger's hit rate)."""
    with services.database.session() as session:
        tenants = list_tenants(session)
        now = utcnow()
        day = headline(usage_buckets(session, start=now - timedelta(days=1), end=now, step_s=DAY_S), [],
                       timedelta(days=1))
    cache = services.cache
    rows = [(t, cache.stats(t.id)) for t in tenants] if cache is not None else []
    shown, page, pages = page_of(rows, page, console_state(request).config.page_size)
    registry = services.metrics.registry
    return render(request, "cache.html", viewer, enabled=cache is not None, rows=shown, page=page, pages=pages,
                  hit_rate=day.cache_hit_rate, currency=services.settings.currency,
                  tokens_saved=int(_counter_sum(registry, "tollgate_cache_tokens_saved_total")),
                  money_saved=_counter_sum(registry, "tollgate_cache_money_saved_total"))


@router.post("/cache/{tenant_id}/invalidate")
async def invalidate_tenant(request: Request, tenant_id: str, viewer: AdminViewerDep, form: FormDep,
                            services: ServicesDep) -> Response:
    """Drop every cached answer of one tenant, on every replica."""
    if services.cache is None:
        return error_page(request, viewer, 404, "The semantic cache is not enabled on this gateway "
                                                "(TOLLGATE_CACHE_ENABLED).")
    try:
        with services.database.session() as session:
            tenant_or_404(session, tenant_id)
    except APIError as e:
        return error_page(request, viewer, e.status, in_words(e))
    await invalidate(services.cache, viewer.auditor(request), services, tenant_id)
    return RedirectResponse("/console/cache?notice=cache_invalidated", status_code=303)
