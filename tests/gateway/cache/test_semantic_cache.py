"""Acceptance: isolation, the wrong-hit traps, policy, TTL, LRU, invalidation."""
import asyncio

import pytest

from gateway.cache import CacheConfig, CacheRequest, TenantCachePolicy
from tests.gateway.cache.conftest import FixedScorer, ask

ANSWER = {"answer_text": "Paris.", "prompt_tokens": 12, "completion_tokens": 3, "finish_reason": "stop"}


async def put(cache, request, policy, text="an answer"):
    return await cache.store(request, policy, text, 10, 5, "stop")


async def test_semantic_hit_on_a_paraphrase(cache, policy):
    assert await cache.store(ask("What is the capital of France?"), policy, **ANSWER)
    result = await cache.lookup(ask("What's the capital city of France?"), policy)
    assert result.status == "hit" and result.tier == "semantic"
    assert result.entry.text == "Paris." and result.entry.prompt_tokens == 12
    assert policy.threshold <= result.score < 1.0


async def test_exact_tier_ignores_case_and_whitespace(cache, policy):
    await cache.store(ask("What is the capital of France?"), policy, **ANSWER)
    result = await cache.lookup(ask("  what is the   capital of FRANCE? "), policy)
    assert (result.status, result.tier, result.score) == ("hit", "exact", 1.0)


async def test_same_prompt_from_two_tenants_never_crosses(cache, policy):
    await cache.store(ask("What is the capital of France?", tenant="acme"), policy, **ANSWER)
    for text in ("What is the capital of France?", "What's the capital city of France?"):
        assert (await cache.lookup(ask(text, tenant="globex"), policy)).status == "miss"
    assert (await cache.lookup(ask("What is the capital of France?", tenant="acme"), policy)).status == "hit"


async def test_two_models_do_not_share_entries(cache, policy):
    await cache.store(ask("What is the capital of France?", model="small"), policy, **ANSWER)
    assert (await cache.lookup(ask("What is the capital of France?", model="large"), policy)).status == "miss"


@pytest.mark.parametrize("stored,asked", [
    ("What is 2+3?", "What is 2+4?"),
    ("What is 1+1?", "What is 21+1?"),
    ("Is port 6379 open?", "Is port 6379 closed?"),
    ("Convert 5 miles to km", "Convert 5 km to miles"),
    ("How do I enable two-factor authentication?", "How do I disable two-factor authentication?"),
    ("Can I get a refund after 30 days?", "Can't I get a refund after 30 days?"),
    ("How do I migrate from MySQL to PostgreSQL?", "How do I migrate from PostgreSQL to MySQL?"),
])
async def test_wrong_answer_traps_are_misses(cache, policy, stored, asked):
    await put(cache, ask(stored), policy)
    result = await cache.lookup(ask(asked), policy)
    assert result.status == "miss", result


async def test_same_follow_up_after_different_earlier_turns_misses(cache, policy):
    paris = [{"role": "user", "content": "Tell me about Paris."}, {"role": "assistant", "content": "Paris is..."}]
    rome = [{"role": "user", "content": "Tell me about Rome."}, {"role": "assistant", "content": "Rome is..."}]
    await put(cache, ask("How many people live there?", history=paris), policy, "About 2 million.")
    assert (await cache.lookup(ask("How many people live there?", history=rome), policy)).status == "miss"
    assert (await cache.lookup(ask("How many people live there?", history=paris), policy)).status == "hit"


async def test_system_prompt_and_sampling_settings_split_namespaces(cache, policy):
    await put(cache, ask("Summarise our refund policy.", system="Be brief."), policy)
    assert (await cache.lookup(ask("Summarise our refund policy.", system="Be detailed."), policy)).status == "miss"
    assert (await cache.lookup(ask("Summarise our refund policy.", system="Be brief.", seed=5),
                               policy)).status == "miss"


async def test_sampling_requests_bypass_unless_the_tenant_opted_in(cache, policy):
    sampled = ask("What is the capital of France?", temperature=0.7)
    assert (await cache.lookup(sampled, policy)).status == "bypass"
    assert await cache.store(sampled, policy, **ANSWER) is None
    opted_in = TenantCachePolicy(allow_sampling=True)
    assert await cache.store(sampled, opted_in, **ANSWER)
    assert (await cache.lookup(sampled, opted_in)).status == "hit"


async def test_disabled_tenant_bypasses(cache):
    off = TenantCachePolicy(enabled=False)
    assert await cache.store(ask("What is the capital of France?"), off, **ANSWER) is None
    result = await cache.lookup(ask("What is the capital of France?"), off)
    assert (result.status, result.reason) == ("bypass", "disabled")


@pytest.mark.parametrize("finish_reason", ["length", "tool_calls", "error", "abort", "content_filter"])
async def test_incomplete_or_failed_generations_are_never_stored(cache, policy, finish_reason):
    assert await cache.store(ask("Write a poem about the sea."), policy, "The sea", 5, 2, finish_reason) is None
    assert (await cache.lookup(ask("Write a poem about the sea."), policy)).status == "miss"


async def test_tool_traffic_and_non_text_content_are_not_cached(cache, policy):
    tool_turn = [{"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
                 {"role": "tool", "content": "42"}]
    assert await cache.store(ask("And now?", history=tool_turn), policy, **ANSWER) is None
    image = CacheRequest("t1", "chat", [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
                         temperature=0)
    assert (await cache.lookup(image, policy)).status == "bypass"


async def test_ttl_expiry(cache, clock):
    short = TenantCachePolicy(ttl_s=60)
    await put(cache, ask("What is the capital of France?"), short)
    clock.now += 59
    assert (await cache.lookup(ask("What is the capital of France?"), short)).status == "hit"
    clock.now += 2
    assert (await cache.lookup(ask("What is the capital of France?"), short)).status == "miss"
    assert (await cache.lookup(ask("What's the capital city of France?"), short)).status == "miss"
    assert cache.stats("t1").entries == 0


async def test_lru_cap_evicts_the_least_recently_used(cache):
    capped = TenantCachePolicy(max_entries=2)
    await put(cache, ask("How do I reset my password?"), capped)
    await put(cache, ask("How do I track my order?"), capped)
    assert (await cache.lookup(ask("How do I reset my password?"), capped)).status == "hit"  # now most recent
    await put(cache, ask("Do you ship to Canada?"), capped)
    assert cache.stats("t1").entries == 2
    assert (await cache.lookup(ask("How do I track my order?"), capped)).status == "miss"
    assert (await cache.lookup(ask("How do I reset my password?"), capped)).status == "hit"
    # The cap is per tenant: another tenant's entries do not count.
    await put(cache, ask("How do I track my order?", tenant="t2"), capped)
    assert cache.stats("t1").entries == 2 and cache.stats("t2").entries == 1


async def test_invalidate_one_entry_and_a_whole_tenant(cache, policy):
    first = await put(cache, ask("How do I reset my password?"), policy)
    await put(cache, ask("How do I track my order?"), policy)
    await put(cache, ask("How do I track my order?", tenant="t2"), policy)
    assert await cache.invalidate("t2", first) == 0  # another tenant's id is not found
    assert await cache.invalidate("t1", first) == 1
    assert (await cache.lookup(ask("How do I reset my password?"), policy)).status == "miss"
    assert await cache.invalidate("t1") == 1
    assert (await cache.lookup(ask("How do I track my order?"), policy)).status == "miss"
    assert (await cache.lookup(ask("How do I track my order?", tenant="t2"), policy)).status == "hit"


async def test_storing_the_same_question_replaces_the_answer(cache, policy):
    await put(cache, ask("Status of the API?"), policy, "old")
    await put(cache, ask("status of the api?"), policy, "new")
    assert cache.stats("t1").entries == 1
    assert (await cache.lookup(ask("Status of the API?"), policy)).entry.text == "new"


async def test_stats_and_metrics_count_results(make_cache, policy):
    from prometheus_client import CollectorRegistry

    from gateway.cache import CacheMetrics

    metrics = CacheMetrics(CollectorRegistry(), per_tenant=True)
    cache = make_cache(metrics=metrics, savings=lambda model, p, c: (p + c) / 1e6)
    await cache.store(ask("What is the capital of France?"), policy, **ANSWER)
    await cache.lookup(ask("What is the capital of France?"), policy)
    await cache.lookup(ask("Is port 6379 open?"), policy)
    await cache.lookup(ask("Is port 6379 open?", temperature=1.0), policy)
    stats = cache.stats("t1")
    assert (stats.hits, stats.misses, stats.bypasses, stats.entries, stats.namespaces) == (1, 1, 1, 1, 1)
    sample = metrics.registry.get_sample_value
    labels = {"tenant": "t1", "model": "chat", "result": "hit", "tier": "exact"}
    assert sample("tollgate_cache_lookups_total", labels) == 1
    assert sample("tollgate_cache_tokens_saved_total", {"tenant": "t1", "model": "chat", "kind": "completion"}) == 3
    assert sample("tollgate_cache_money_saved_total", {"tenant": "t1", "model": "chat"}) == pytest.approx(15e-6)
    assert sample("tollgate_cache_lookup_seconds_count", {"tier": "exact"}) == 1


async def test_metrics_do_not_name_tenants_by_default(make_cache, policy):
    from prometheus_client import CollectorRegistry, generate_latest

    from gateway.cache import CacheMetrics

    metrics = CacheMetrics(CollectorRegistry())
    cache = make_cache(metrics=metrics)
    for tenant in ("t1", "t2"):
        await cache.store(ask("What is the capital of France?", tenant=tenant), policy, **ANSWER)
        await cache.lookup(ask("What is the capital of France?", tenant=tenant), policy)
    await cache.invalidate("t2")
    sample = metrics.registry.get_sample_value
    # One series summed over tenants; no tenant label anywhere in the exposition.
    assert sample("tollgate_cache_lookups_total", {"model": "chat", "result": "hit", "tier": "exact"}) == 2
    assert sample("tollgate_cache_stores_total", {"model": "chat", "result": "stored"}) == 2
    assert sample("tollgate_cache_evictions_total", {"reason": "invalidated"}) == 1
    assert "tenant=" not in generate_latest(metrics.registry).decode()


async def test_the_default_cap_is_finite_and_evicts(make_cache):
    assert CacheConfig().default_policy.max_entries == 10_000  # finite out of the box
    config = CacheConfig(default_policy=TenantCachePolicy(max_entries=2))
    cache = make_cache(config=config)
    unset = config.policy_for(max_entries=None)  # a tenant whose cache_max_entries column is NULL
    for question in ("How do I reset my password?", "How do I track my order?", "Do you ship to Canada?"):
        await put(cache, ask(question), unset)
    assert cache.stats("t1").entries == 2
    assert (await cache.lookup(ask("How do I reset my password?"), unset)).status == "miss"  # the oldest went
    assert (await cache.lookup(ask("Do you ship to Canada?"), unset)).status == "hit"
    # A tenant's own column overrides the default.
    roomy = config.policy_for(max_entries=5)
    for question in ("How do I reset my password?", "Where is my invoice?", "Can I pay by card?"):
        await put(cache, ask(question, tenant="t2"), roomy)
    assert cache.stats("t2").entries == 3


async def test_guard_rejections_are_counted(cache, policy):
    await put(cache, ask("Is port 6379 open?"), policy)
    result = await cache.lookup(ask("Is port 6379 closed?"), policy)
    assert result.reason == "guard:antonyms"
    assert cache.stats("t1").rejected_by_guard == {"antonyms": 1}


async def test_concurrent_lookups_and_stores(cache, policy):
    questions = [f"How do I configure feature number {i}?" for i in range(20)]
    await asyncio.gather(*(put(cache, ask(q), policy) for q in questions))
    results = await asyncio.gather(*(cache.lookup(ask(q), policy) for q in questions))
    assert all(r.status == "hit" and r.tier == "exact" for r in results)


def test_cache_config_validation():
    with pytest.raises(ValueError, match="candidates"):
        CacheConfig(candidates=0)
    with pytest.raises(ValueError, match="faiss_threads"):
        CacheConfig(faiss_threads=0)
    with pytest.raises(TypeError, match="default_policy"):
        CacheConfig(default_policy={"threshold": 0.9})


async def test_a_typed_paraphrase_is_served(cache, policy):
    await cache.store(ask("How do I handle exceptions in Java?"), policy, **ANSWER)
    result = await cache.lookup(ask("how do i handle exeptions in java"), policy)
    assert result.status == "hit" and result.tier == "semantic"
    assert (await cache.lookup(ask("how do i handle exeptions in python"), policy)).status == "miss"


async def test_an_exact_repeat_hits_while_the_answer_is_still_being_stored(cache, policy, clock):
    """Read-your-writes: hold() (called as the answer's end goes out) serves an exact repeat before store()
    has embedded and persisted it; store() ends the hold, and so does invalidating the tenant."""
    request = ask("What is the capital of France?")
    assert cache.hold(request, policy, **ANSWER)
    result = await cache.lookup(ask("what is the capital of  France?"), policy)
    assert (result.status, result.tier, result.entry.text) == ("hit", "exact", "Paris.")
    assert (await cache.lookup(ask("What is the capital of France?", tenant="t2"), policy)).status == "miss"
    assert (await cache.lookup(ask("What is the capital of France?", max_tokens=2), policy)).status == "miss"
    await cache.store(request, policy, **ANSWER)
    assert not cache._held and (await cache.lookup(request, policy)).status == "hit"
    assert cache.hold(ask("What is the capital of Spain?"), policy, "Madrid.", 12, 3, "stop")
    await cache.invalidate("t1")
    assert (await cache.lookup(ask("What is the capital of Spain?"), policy)).status == "miss"
    assert not cache.hold(request, policy, "", 12, 0, "stop")  # what store() refuses is never held
    assert not cache.hold(ask("Tell me a joke.", temperature=1.0), policy, **ANSWER)
    assert cache.hold(ask("What is the capital of Italy?"), TenantCachePolicy(ttl_s=5), "Rome.", 12, 3, "stop")
    clock.now += 6
    assert (await cache.lookup(ask("What is the capital of Italy?"), policy)).status == "miss"  # its TTL passed


def test_warm_loads_the_verifier_ahead_of_lookups(cache):
    cache.start_warming().join(timeout=120)  # the gateway's background start
    assert cache.verifier.judge._scorer is not None and cache.verifier.lexicon._wordnet is not None


def _with_judge(cache, p: float, **config):
    from gateway.cache.judge import JudgeConfig, PairJudge

    scorer = FixedScorer(p)
    cache.verifier.judge = PairJudge(lambda: scorer, JudgeConfig(**config))
    cache.config.judge = cache.verifier.judge.config
    return scorer


async def test_the_judge_decides_what_the_guards_let_through_reading_both_orders(cache, policy):
    await put(cache, ask("What is the capital of France?"), policy)
    scorer = _with_judge(cache, 0.1)
    result = await cache.lookup(ask("What's the capital city of France?"), policy)
    assert (result.status, result.reason) == ("miss", "guard:judge")
    assert scorer.read == [("What's the capital city of France?", "What is the capital of France?"),
                           ("What is the capital of France?", "What's the capital city of France?")]
    _with_judge(cache, 0.96)
    assert (await cache.lookup(ask("What's the capital city of France?"), policy)).status == "hit"


async def test_the_judge_never_reads_what_a_guard_vetoes(cache, policy):
    await put(cache, ask("How do I enable two-factor authentication?"), policy)
    scorer = _with_judge(cache, 1.0)
    result = await cache.lookup(ask("How do I disable two-factor authentication?"), policy)
    assert (result.status, result.reason, scorer.read) == ("miss", "guard:antonyms", [])


async def test_the_judge_reads_both_conversations(cache, policy):
    lisbon = [{"role": "user", "content": "I'm visiting Lisbon in May."}, {"role": "assistant", "content": "Nice."}]
    await put(cache, ask("What should I pack?", history=lisbon), policy)
    scorer = _with_judge(cache, 0.9)
    again = [{"role": "user", "content": "I'll be in Lisbon this May."}, {"role": "assistant", "content": "Lovely."}]
    await cache.lookup(ask("What should I pack?", history=again), policy)
    assert scorer.read[0] == ("I'll be in Lisbon this May.\nWhat should I pack?",
                              "I'm visiting Lisbon in May.\nWhat should I pack?")


async def test_earlier_turns_that_name_another_place_are_vetoed(cache, policy):
    lisbon = [{"role": "user", "content": "I'm visiting Lisbon in May."}, {"role": "assistant", "content": "Nice."}]
    porto = [{"role": "user", "content": "I'm visiting Porto in May."}, {"role": "assistant", "content": "Nice."}]
    await put(cache, ask("What should I pack?", history=lisbon), policy)
    scorer = _with_judge(cache, 1.0)
    result = await cache.lookup(ask("What should I pack?", history=porto), policy)
    assert (result.status, result.reason, scorer.read) == ("miss", "guard:context:entities", [])


async def test_past_its_budget_a_pair_is_refused_unread(cache, policy):
    await put(cache, ask("What is the capital of France?"), policy)
    scorer = _with_judge(cache, 0.99, max_pairs=0)
    result = await cache.lookup(ask("What's the capital city of France?"), policy)
    assert (result.status, result.reason) == ("miss", "guard:judge:budget") and scorer.read == []


async def test_the_judge_reads_at_most_max_pairs_per_lookup(cache, policy):
    for text in ("What is the capital of France?", "Which city is the capital of France?",
                 "What city is France's capital?"):
        await put(cache, ask(text), policy)
    scorer = _with_judge(cache, 0.1, max_pairs=2)  # refuses every pair it reads
    result = await cache.lookup(ask("What's the capital city of France?"), policy)
    assert result.status == "miss" and len(scorer.read) == 2 * 2  # two pairs, each read both ways round


async def test_without_the_judge_only_near_identical_questions_pass(make_cache, policy):
    from gateway.cache.judge import JudgeConfig

    cache = make_cache(config=CacheConfig(judge=JudgeConfig(enabled=False)))
    await put(cache, ask("What is the capital of France?"), policy)
    assert (await cache.lookup(ask("What is the capital of France?!"), policy)).status == "hit"  # same words
    result = await cache.lookup(ask("Which city is France's capital?"), policy)
    assert (result.status, result.reason) == ("miss", "guard:cosine")
