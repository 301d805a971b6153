"""Acceptance: a mixed workload on an alias of a cheap and a strong version, through the live gateway. Each rule's
share of the traffic, the header that names it, the version that served, and the money saved against sending
everything to the strong version, from the ledger, to the last decimal."""
from __future__ import annotations

from collections import Counter
from decimal import Decimal

from .rules_scenario import ANSWER_TOKENS, CHEAP, STRONG, run, workload


def test_each_rule_sends_its_share_and_the_saving_is_exact(tmp_path):
    asks = workload(repeat=2)  # 32 requests: 2 plans x 2 tasks x short/long x max_tokens 16/256, twice
    out = run(tmp_path, asks)

    assert out.rules == [a.expected_rule for a in asks]
    assert out.shares() == {"(alias split)": 0.0625, "code-to-strong": 0.25, "free-to-cheap": 0.0625,
                            "long-to-strong": 0.5, "small-to-cheap": 0.125}
    to_cheap = {"small-to-cheap", "free-to-cheap"}
    assert out.served == [CHEAP if rule in to_cheap else STRONG for rule in out.rules]
    # Only short prompts reach the task rule (a long one is decided by the rule before it): one embedding each.
    assert out.embeddings == sum(not a.long for a in asks) == 16

    # The canned backend counts a prompt's words and answers min(64, max_tokens) tokens, whichever version serves:
    # 6 requests to cheap, short chat prompts of 8 words: 4 with 16 answer tokens, 2 with 64.
    cheap = [(8, min(ANSWER_TOKENS, a.max_tokens)) for a, rule in zip(asks, out.rules) if rule in to_cheap]
    assert sorted(cheap) == [(8, 16)] * 4 + [(8, 64)] * 2
    price = {"cheap": (Decimal("0.05"), Decimal("0.10")), "strong": (Decimal("0.50"), Decimal("1.50"))}

    def cost(model, p, c):
        return (p * price[model][0] + c * price[model][1]) / 1_000_000

    saved = sum(cost("strong", p, c) - cost("cheap", p, c) for p, c in cheap)
    assert saved == Decimal("0.0002904") and out.saved == saved  # 4 x 26.0 + 2 x 93.2 micro-units
    assert out.all_strong - out.cost == saved and out.cost < out.all_strong
