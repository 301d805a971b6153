"""Acceptance: a mixed workload on an alias of a cheap and a strong version, through the live gateway. Each rule's
share of the traffic, the header that names it, the version that served, and the money saved against sending
everything to the strong version, from the ledger, to the last decimal."""
from __future__ import annotations

from decimal import Decimal

from .rules_scenario import ANSWER_TOKENS, CHEAP, STRONG, Ask, run, workload


def test_each_rule_sends_its_share_and_the_saving_is_exact(tmp_path):
    asks = workload(repeat=2)  # 32 requests: 2 plans x 2 tasks x short/long x max_tokens 16/256, twice
    out = run(tmp_path, asks)

    assert out.rules == [a.expected_rule for a in asks]
    assert out.shares() == {"(alias split)": 0.0625, "code-to-strong": 0.25, "free-to-cheap": 0.0625,
                            "long-to-strong": 0.5, "small-to-cheap": 0.125}
    to_cheap = {"small-to-cheap", "free-to-cheap"}
    assert out.served == [CHEAP if rule in to_cheap else STRONG for rule in out.rules]
    assert 'tollgate_route_rule_decisions_total{alias="smart",rule="code-to-strong"}' in out.metrics
    # Only short prompts reach the task rule (a long one is decided by the rule before it): one embedding each.
    assert out.embeddings == sum(not a.long for a in asks) == 16

    # The canned backend counts a prompt's words and answers min(64, max_tokens) tokens, whichever version serves:
    # 6 requests to cheap, short chat prompts of 9 words: 4 with 16 answer tokens, 2 with 64.
    cheap = [(9, min(ANSWER_TOKENS, a.max_tokens)) for a, rule in zip(asks, out.rules) if rule in to_cheap]
    assert sorted(cheap) == [(9, 16)] * 4 + [(9, 64)] * 2
    price = {"cheap": (Decimal("0.05"), Decimal("0.10")), "strong": (Decimal("0.50"), Decimal("1.50"))}

    def cost(model, p, c):
        return (p * price[model][0] + c * price[model][1]) / 1_000_000

    saved = sum(cost("strong", p, c) - cost("cheap", p, c) for p, c in cheap)
    assert saved == Decimal("0.0002931") and out.saved == saved  # 4 x 26.45 + 2 x 93.65 micro-units
    assert out.all_strong - out.cost == saved and out.cost < out.all_strong


def test_the_cache_reuses_the_classifiers_embedding_and_a_refused_request_costs_none(tmp_path):
    import httpx

    from gateway.catalogue import parse_catalogue
    from gateway.main import create_app
    from tests.gateway.conftest import gateway_settings
    from tests.gateway.support import ADMIN_KEY, CannedBackend, LiveServer, make_tenant, migrate_and_seed

    from .fakes import TopicEmbedder
    from .rules_scenario import ALIAS, CATALOGUE, RULES, TEXTS, write_catalogue

    path, url = write_catalogue(tmp_path), f"sqlite:///{tmp_path / 'tollgate.db'}"
    migrate_and_seed(url, parse_catalogue(CATALOGUE))
    _, key = make_tenant(url, plan="pro", rpm=1)
    embedder = TopicEmbedder()
    settings = gateway_settings(tmp_path, url, catalogue=path, embeddings_enabled=False, cache_enabled=True)
    body = {"model": ALIAS, "messages": [{"role": "user", "content": TEXTS["code"]}], "max_tokens": 256,
            "temperature": 0}
    with LiveServer(create_app(settings, backend=CannedBackend(versions=[CHEAP, STRONG]), embedder=embedder)) as s, \
            httpx.Client(base_url=s.url, timeout=30) as http:
        http.put(f"/admin/routes/{ALIAS}/rules", json={"rules": RULES},
                 headers={"Authorization": f"Bearer {ADMIN_KEY}"}).raise_for_status()
        trained = len(embedder.calls)
        r = http.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 200 and r.headers["x-tollgate-route-rule"] == "code-to-strong"
        assert r.headers["x-tollgate-cache"] == "miss"
        over = http.post("/v1/chat/completions", json={**body, "messages": [{"role": "user", "content": "python?"}]},
                         headers={"Authorization": f"Bearer {key}"})
        assert over.status_code == 429  # over its requests per minute: refused before any embedding
    # Classified, looked up in the cache and stored there: one forward pass of the embedder for the three
    # whole texts (the cache's verifier also embeds the stored question's single words: not texts).
    texts = [c for c in embedder.calls[trained:] if " " in c.strip()]
    assert texts == [TEXTS["code"]]
    assert not any("python?" in c for c in embedder.calls[trained:])


def test_a_rule_target_without_capacity_falls_back_as_before(tmp_path):
    asks = [Ask("free", "chat", False, 16, n=0), Ask("pro", "code", False, 16, n=1)]
    out = run(tmp_path, asks, unavailable={CHEAP})
    # The rule still decided (and says so), but its cheap target refused: the alias' own choice served.
    assert out.rules == ["small-to-cheap", "code-to-strong"] and out.served == [STRONG, STRONG]
    assert out.saved == 0
