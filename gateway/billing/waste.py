"""The waste report: the share of a tenant's input that repeats (the engine's prefix-cache hits, from each
usage row's cached_tokens) and the tokens its semantic-cache hits spared the engine, for a month."""
from __future__ import annotations

from sqlalchemy.orm import Session

from gateway.crud.usage import WasteTotals, waste_by_model
from gateway.domain.period import Month
from gateway.schemas.billing import WasteLine, WasteReport


def _share(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def _line(t: WasteTotals) -> WasteLine:
    return WasteLine(model=t.model, input_tokens=t.engine_prompt_tokens + t.hit_prompt_tokens,
                     engine_requests=t.engine_requests, engine_input_tokens=t.engine_prompt_tokens,
                     prefix_cached_tokens=t.prefix_cached_tokens,
                     repeated_input_share=_share(t.prefix_cached_tokens, t.engine_prompt_tokens),
                     semantic_cache_hits=t.cache_hits,
                     semantic_cache_tokens_saved=t.hit_prompt_tokens + t.hit_completion_tokens)


def waste_report(session: Session, *, tenant_id: str, month: Month) -> WasteReport:
    totals = waste_by_model(session, period=month.period, tenant_id=tenant_id)
    lines = [_line(t) for t in totals]
    cached = sum(t.prefix_cached_tokens for t in totals)
    return WasteReport(tenant_id=tenant_id, month=str(month), input_tokens=sum(l.input_tokens for l in lines),
                       prefix_cached_tokens=cached,
                       repeated_input_share=_share(cached, sum(t.engine_prompt_tokens for t in totals)),
                       semantic_cache_hits=sum(l.semantic_cache_hits for l in lines),
                       semantic_cache_tokens_saved=sum(l.semantic_cache_tokens_saved for l in lines), models=lines)
