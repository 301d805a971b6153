"""Volume tiers: a price that falls with a tenant's monthly volume of a model.

A tier covers the tenant's cumulative monthly tokens of the model (input + output) up to `up_to`; the last tier
has no end. A request's tokens are laid on that count in one fixed order (cached prompt tokens, the rest of the
prompt, then the completion), so one straddling a boundary is split across the tiers exactly. The order of the
requests is the ledger's (created_at, then id): tiers are applied when the bill is built, from the month's rows,
so requests finishing together can never both claim the same tier's last tokens."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


class TierError(ValueError):
    """A tier list that cannot be a price's; the message says which tier and why."""


@dataclass(frozen=True, slots=True)
class Tier:
    up_to: int | None  # cumulative monthly tokens of the model this tier ends at (exclusive); None: no end
    input_per_million: Decimal
    output_per_million: Decimal


def flat(input_per_million: Decimal, output_per_million: Decimal) -> tuple[Tier, ...]:
    """A price without tiers: one tier with no end."""
    return (Tier(None, input_per_million, output_per_million),)


def check_tiers(tiers: Sequence[Tier], *, input_per_million: Decimal, output_per_million: Decimal) -> None:
    """TierError unless `tiers` ascend, only the last is open-ended, and the first is the flat price."""
    if not tiers:
        raise TierError("tiers must hold at least one tier")
    first = tiers[0]
    if (first.input_per_million, first.output_per_million) != (input_per_million, output_per_million):
        raise TierError("tiers[0] must carry the flat input_per_million and output_per_million (the first tier's)")
    previous = 0
    for i, tier in enumerate(tiers):
        last = i == len(tiers) - 1
        if tier.up_to is None and not last:
            raise TierError(f"tiers[{i}].up_to is null: only the last tier may be open-ended")
        if tier.up_to is not None and last:
            raise TierError(f"tiers[{i}].up_to must be null: the last tier has no end")
        if tier.up_to is not None:
            if tier.up_to <= previous:
                raise TierError(f"tiers[{i}].up_to ({tier.up_to}) must be above the tier before ({previous})")
            previous = tier.up_to


def tiers_to_json(tiers: Sequence[Tier]) -> list[dict[str, Any]] | None:
    """For the prices table: decimal strings (exact); None for a flat price."""
    if len(tiers) <= 1:
        return None
    return [{"up_to": t.up_to, "input_per_million": str(t.input_per_million),
             "output_per_million": str(t.output_per_million)} for t in tiers]


def tiers_from_json(data: list[dict[str, Any]] | None, *, input_per_million: Decimal,
                    output_per_million: Decimal) -> tuple[Tier, ...]:
    if not data:
        return flat(input_per_million, output_per_million)
    return tuple(Tier(t["up_to"], Decimal(t["input_per_million"]), Decimal(t["output_per_million"])) for t in data)


@dataclass(frozen=True, slots=True)
class Slice:
    """The part of one request that falls in one tier."""
    tier: int  # 1-based
    cached_tokens: int  # prompt tokens at the cached-input price
    prompt_tokens: int  # all prompt tokens in this tier, the cached ones included
    completion_tokens: int


def split(tiers: Sequence[Tier], *, start: int, prompt_tokens: int, completion_tokens: int,
          cached_tokens: int) -> list[Slice]:
    """The request's tokens per tier, given the tenant's volume of the model before it (`start`). Every tier the
    request touches gets a slice; a request with no tokens gets an empty slice in the tier `start` falls in."""
    cached = min(cached_tokens, prompt_tokens)
    end = start + prompt_tokens + completion_tokens
    low = 0
    for n, tier in enumerate(tiers, 1):  # most requests lie inside one tier
        if tier.up_to is None or (end <= tier.up_to and (end > start or start < tier.up_to)):
            if start >= low:
                return [Slice(n, cached, prompt_tokens, completion_tokens)]
            break
        low = tier.up_to
    # The request's tokens occupy [start, end) of the month's count: cached, uncached prompt, completion.
    spans = ((start, start + cached), (start + cached, start + prompt_tokens),
             (start + prompt_tokens, start + prompt_tokens + completion_tokens))
    end = spans[2][1]
    out: list[Slice] = []
    low = 0
    for n, tier in enumerate(tiers, 1):
        high = tier.up_to
        if high is not None and high <= start:
            low = high
            continue
        c, u, o = (_overlap(span, low, high) for span in spans)
        if c or u or o or (start == end and not out):
            out.append(Slice(n, c, c + u, o))
        if high is None or high >= end:
            break
        low = high
    return out


def _overlap(span: tuple[int, int], low: int, high: int | None) -> int:
    a, b = span
    return max(0, min(b, high if high is not None else b) - max(a, low))
