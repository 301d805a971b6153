"""The live accuracy check: sampled hits answered again in the background; disagreements raise the tenant's
estimated wrong-hit rate, are exported, and tighten its threshold."""
import asyncio

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from gateway.cache import CacheConfig, CacheMetrics, TenantCachePolicy
from gateway.cache.audit import AccuracyAudit, AuditConfig
from gateway.cache.live_check import LiveCheck
from tests.gateway.cache.conftest import ask

ALWAYS = AuditConfig(fraction=1.0, min_samples=3, bound=0.2, step=0.02, max_tightening=0.04, relax_after=4)


def answer(text: str):
    async def generate() -> str:
        return text
    return generate


def test_tightening_steps_up_to_its_cap_and_relaxes_after_a_clean_run():
    audit = AccuracyAudit(ALWAYS)
    for _ in range(3):
        audit.record("t", agreed=False)
    assert audit.tightening("t") == pytest.approx(0.02)
    for _ in range(9):
        audit.record("t", agreed=False)
    assert audit.tightening("t") == pytest.approx(0.04)  # capped
    assert audit.of("t").estimated_wrong_hit_rate == pytest.approx(12.5 / 13)
    for _ in range(4):
        audit.record("t", agreed=True)
    assert audit.tightening("t") == pytest.approx(0.02)
    assert audit.tightening("other") == 0.0


def test_config_is_validated():
    for bad in (dict(fraction=1.5), dict(max_in_flight=0), dict(step=0.5, max_tightening=0.1), dict(bound=1.0)):
        with pytest.raises(ValueError):
            AuditConfig(**bad)


async def test_a_disagreeing_model_raises_the_rate_exports_it_and_tightens_the_threshold(embedder, clock):
    from gateway.cache import SemanticCache

    metrics = CacheMetrics(CollectorRegistry(), per_tenant=True)
    cache = SemanticCache(embedder, CacheConfig(audit=ALWAYS), metrics=metrics, clock=clock)
    policy = TenantCachePolicy()
    await cache.store(ask("Can my parrot eat avocado?"), policy, "No: avocado is toxic to parrots.", 9, 8, "stop")
    hit = await cache.lookup(ask("Can my parrot eat avocado?"), policy)
    for _ in range(3):  # the model now says otherwise: the served answer was wrong
        assert cache.live_check.maybe_check("t1", hit.entry.text, answer("Quantum chromodynamics describes quarks."))
        await cache.live_check.wait()
    t = cache.audit.of("t1")
    assert (t.sampled, t.disagreed) == (3, 3) and t.estimated_wrong_hit_rate > 0.5
    assert cache.threshold("t1", policy) == pytest.approx(policy.threshold + 0.02)
    assert cache.threshold("t2", policy) == policy.threshold
    text = generate_latest(metrics.registry).decode()
    assert 'tollgate_cache_audit_checks_total{outcome="disagreed",tenant="t1"} 3.0' in text
    assert 'tollgate_cache_estimated_wrong_hit_rate{tenant="t1"}' in text
    assert 'tollgate_cache_threshold_tightening{tenant="t1"} 0.02' in text


async def test_agreeing_answers_count_as_agreed(embedder):
    check = LiveCheck(AccuracyAudit(ALWAYS), embedder, CacheMetrics(CollectorRegistry()))
    assert check.agree("Paris is the capital of France.", "  paris is the capital of france. ")
    assert check.agree("The capital of France is Paris.", "Paris is the capital city of France.")
    assert not check.agree("Dogs can eat cooked rice.", "Never feed grapes to dogs: they are toxic.")


async def test_sampling_bounded_concurrency_failures_and_close(embedder):
    metrics = CacheMetrics(CollectorRegistry())
    draws = iter([0.5, 0.001])
    check = LiveCheck(AccuracyAudit(AuditConfig(fraction=0.01, max_in_flight=1)), embedder, metrics,
                      draw=lambda: next(draws))
    assert not check.maybe_check("t", "x", answer("x"))  # 0.5 >= 1%: not sampled
    gate = asyncio.Event()

    async def slow() -> str:
        await gate.wait()
        return "x"
    assert check.maybe_check("t", "x", slow)  # 0.001 < 1%
    check._draw = lambda: 0.0
    assert not check.maybe_check("t", "x", answer("x"))  # one in flight already: skipped
    await check.close()  # cancels the slow one; nothing recorded, nothing raised
    assert check.audit.of("t").sampled == 0
    assert not check.maybe_check("t", "x", answer("x"))  # closed: no new checks

    async def broken() -> str:
        raise RuntimeError("replica gone")
    failing = LiveCheck(AccuracyAudit(ALWAYS), embedder, metrics)
    assert failing.maybe_check("t", "x", broken)
    await failing.wait()
    assert failing.audit.of("t").sampled == 0
    assert metrics.audit_checks.labels("t", "failed")._value.get() == 1
    assert metrics.audit_checks.labels("t", "skipped")._value.get() == 1
