"""Bill and usage shapes. Money is a decimal STRING ("0.0001234"): exact, never a float."""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, PlainSerializer, SerializeAsAny


def decimal_text(value: Decimal) -> str:
    """Plain notation without trailing zeros: Decimal('1.2300E-7') -> '0.000000123'."""
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


Money = Annotated[Decimal, PlainSerializer(decimal_text, return_type=str)]


class BillLine(BaseModel):
    model: str
    # | "batch" (Batch API lines, at the model's batch discount) | "reservation_fee" (a reservation's prorated
    # monthly fee; its completion_tokens are those it covered, which no other line counts or costs)
    kind: str = "interactive"
    # The model's monthly volume tier (1-based; always 1 for a flat price). A request straddling a tier boundary
    # has its tokens on both lines and counts as a request on the first.
    tier: int = 1
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost: Money


class ReservationFeeLine(BillLine):
    """A reservation's line: its prorated fee, and in completion_tokens the tokens it covered."""
    kind: str = "reservation_fee"
    reservation_id: str
    output_tokens_per_s: float


class CacheAccuracy(BaseModel):
    """The semantic cache's live check for the tenant (gateway.cache.live_check): hits also answered by the
    model in the background, how many disagreed, the estimated wrong-hit rate, and how far the tenant's
    threshold has tightened because of it. This replica's figures since it started (kept in memory)."""
    sampled: int
    disagreed: int
    estimated_wrong_hit_rate: float
    threshold_tightening: float


class Bill(BaseModel):
    tenant_id: str
    month: str  # YYYY-MM
    lines: list[SerializeAsAny[BillLine]]  # usage lines, then ReservationFeeLines
    total_cost: Money
    currency: str
    cache_accuracy: CacheAccuracy | None = None  # None: the cache is off
    # The tenant's output cap at work: requests it clamped (output_cap_mode "clamp"), and the tokens it saved
    # (what they asked for above the cap).
    requests_clamped: int = 0
    tokens_saved_by_cap: int = 0


class PromptVersionBillLine(BillLine):
    prompt_version: str | None  # "name:N"; None for requests that named no stored prompt


class PromptVersionBill(BaseModel):
    """A tenant's bill with one line per (prompt version, model, kind): ?group_by=prompt_version."""
    tenant_id: str
    month: str
    group_by: str = "prompt_version"
    lines: list[PromptVersionBillLine]
    total_cost: Money
    currency: str


class BillList(BaseModel):
    object: str = "list"
    month: str
    data: list[Bill]


class UsageReport(BaseModel):
    """A tenant's own usage over [start, end) (GET /v1/usage)."""
    object: str = "usage"
    tenant_id: str
    start: str  # ISO 8601, UTC
    end: str
    lines: list[BillLine]
    total_cost: Money
    currency: str


class WasteLine(BaseModel):
    """One model's repeated and spared input for a tenant and month."""
    model: str
    input_tokens: int  # prompt tokens of every request, cache hits included
    engine_requests: int
    engine_input_tokens: int  # prompt tokens of the requests the engine served
    # Of those, the tokens the engine's prefix cache already held (an identical system prompt or prefix of an
    # earlier request): input that repeats.
    prefix_cached_tokens: int
    repeated_input_share: float  # prefix_cached_tokens / engine_input_tokens (0 when none)
    semantic_cache_hits: int  # requests answered by the semantic cache
    semantic_cache_tokens_saved: int  # their prompt + completion tokens, which no engine computed


class RepeatedPrompt(BaseModel):
    """A prefix the tenant sent more than once in the month, as the gateway hashed it."""
    kind: Literal["system", "prompt"]  # its system prompt, or a whole prompt (system prompt and messages)
    tokens: int
    times_seen: int
    repeated_tokens: int  # tokens x (times_seen - 1): what its repeats sent again
    first_seen: datetime
    last_seen: datetime
    preview: str  # its first 80 characters (for a whole prompt, what follows its system prompt): the tenant's data


class WasteReport(BaseModel):
    """GET /admin/tenants/{id}/waste: how much of a tenant's month repeats itself, per model and in all."""
    object: str = "waste_report"
    tenant_id: str
    month: str
    input_tokens: int
    prefix_cached_tokens: int
    repeated_input_share: float  # the engine's prefix cache: over the engine-served input of every model
    semantic_cache_hits: int
    semantic_cache_tokens_saved: int
    # The gateway's own hashing of every chat, completions, responses and messages request (embeddings aside):
    # their prompt tokens, the tokens of each request's longest prefix (its whole prompt, else its system prompt)
    # already sent earlier in the month, and that share.
    hashed_input_tokens: int = 0
    hashed_repeated_tokens: int = 0
    hashed_repeated_share: float = 0.0
    distinct_prefixes: int = 0  # prefixes kept for the month (at most the gateway's TOLLGATE_WASTE_PREFIX_CAP)
    longest_repeated: list[RepeatedPrompt] = []  # the top 10 by repeated_tokens
    models: list[WasteLine]
