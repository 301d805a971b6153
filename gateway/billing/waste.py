"""The waste report: the share of a tenant's input that repeats, for a month, seen two ways: the engine's
prefix-cache hits (each usage row's cached_tokens) and the gateway's own hashing of system prompts and whole
prompts (gateway.billing.prefix_recorder); the tokens its semantic-cache hits spared the engine; and the prompts
it repeated most."""
from __future__ import annotations

from sqlalchemy.orm import Session

from gateway.crud.prompt_prefixes import most_repeated, prefix_totals
from gateway.crud.usage import WasteTotals, prompt_input_tokens, waste_by_model
from gateway.db.models.prompt_prefix import PromptPrefix
from gateway.domain.period import Month
from gateway.schemas.billing import RepeatedPrompt, WasteLine, WasteReport

LONGEST = 10  # repeated prompts listed


def _share(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def _line(t: WasteTotals) -> WasteLine:
    return WasteLine(model=t.model, input_tokens=t.engine_prompt_tokens + t.hit_prompt_tokens,
                     engine_requests=t.engine_requests, engine_input_tokens=t.engine_prompt_tokens,
                     prefix_cached_tokens=t.prefix_cached_tokens,
                     repeated_input_share=_share(t.prefix_cached_tokens, t.engine_prompt_tokens),
                     semantic_cache_hits=t.cache_hits,
                     semantic_cache_tokens_saved=t.hit_prompt_tokens + t.hit_completion_tokens)


def _repeated(row: PromptPrefix) -> RepeatedPrompt:
    return RepeatedPrompt(kind=row.kind, tokens=row.tokens, times_seen=row.times_seen,
                          repeated_tokens=row.tokens * (row.times_seen - 1), first_seen=row.first_seen,
                          last_seen=row.last_seen, preview=row.preview)


def waste_report(session: Session, *, tenant_id: str, month: Month) -> WasteReport:
    totals = waste_by_model(session, period=month.period, tenant_id=tenant_id)
    lines = [_line(t) for t in totals]
    cached = sum(t.prefix_cached_tokens for t in totals)
    hashed = prefix_totals(session, tenant_id=tenant_id, month=str(month))
    # The hashing lags the ledger by a flush at most: never report more repeated than sent.
    sent = prompt_input_tokens(session, period=month.period, tenant_id=tenant_id)
    repeated = min(hashed.reused_tokens, sent)
    return WasteReport(tenant_id=tenant_id, month=str(month),
                       input_tokens=sum(line.input_tokens for line in lines), prefix_cached_tokens=cached,
                       repeated_input_share=_share(cached, sum(t.engine_prompt_tokens for t in totals)),
                       semantic_cache_hits=sum(line.semantic_cache_hits for line in lines),
                       semantic_cache_tokens_saved=sum(line.semantic_cache_tokens_saved for line in lines),
                       hashed_input_tokens=sent, hashed_repeated_tokens=repeated,
                       hashed_repeated_share=_share(repeated, sent), distinct_prefixes=hashed.distinct,
                       longest_repeated=[_repeated(r) for r in most_repeated(
                           session, tenant_id=tenant_id, month=str(month), limit=LONGEST)],
                       models=lines)
