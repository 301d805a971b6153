from __future__ import annotations

import pytest

from gateway.routing.canary import RollbackPolicy, judge
from gateway.routing.router import AUTO_ROLLBACK_ACTOR, Router
from gateway.routing.window import WindowStats

from .conftest import BF16, FP32


def stats(requests, errors=0, ttft=None) -> WindowStats:
    return WindowStats(requests, errors, ttft, ttft, None, None)


def test_judge_rules():
    p = RollbackPolicy(min_samples=10, error_rate_margin=0.05, ttft_p99_margin=0.5)
    assert judge(stats(5, 5), stats(100), p) is None  # too few samples
    assert "error rate" in judge(stats(10, 2), stats(100, 0), p)
    assert judge(stats(10, 1), stats(100, 8), p) is None  # within the margin of stable
    assert "TTFT" in judge(stats(10, 0, 0.4), stats(100, 0, 0.2), p)
    assert judge(stats(10, 0, 0.25), stats(100, 0, 0.2), p) is None
    assert judge(stats(10, 0, 0.4), stats(0, 0, None), p) is None  # no stable TTFT to compare


@pytest.mark.parametrize("kw", [{"window_s": 0}, {"min_samples": 0}, {"error_rate_margin": 2},
                                {"ttft_p99_margin": -1}])
def test_policy_validates(kw):
    with pytest.raises(ValueError):
        RollbackPolicy(**kw)


def test_failing_canary_is_rolled_back_within_the_window(catalogue, clock):
    router = Router(catalogue, rollback=RollbackPolicy(window_s=30, min_samples=10), clock=clock)
    for _ in range(40):
        clock.now += 0.1
        router.observe(FP32, ok=True, ttft_s=0.05, latency_s=0.2)
    for _ in range(9):
        router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    assert router.route("chat")["weights"][BF16] == 10  # not enough samples yet
    router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    assert router.route("chat")["weights"] == {FP32: 100, BF16: 0}
    entry = router.audit(alias="chat")[0]
    assert entry.actor == AUTO_ROLLBACK_ACTOR and entry.action == "auto-rollback" and "error rate" in entry.reason
    picks = {router.resolve("chat", request_id=f"r{i}").version for i in range(200)}
    assert picks == {FP32}


def test_slow_canary_is_rolled_back(catalogue, clock):
    router = Router(catalogue, rollback=RollbackPolicy(min_samples=10, ttft_p99_margin=0.5), clock=clock)
    for _ in range(20):
        router.observe(FP32, ok=True, ttft_s=0.1, latency_s=0.5)
    for _ in range(10):
        router.observe(BF16, ok=True, ttft_s=0.5, latency_s=0.9)
    assert router.route("chat")["weights"][BF16] == 0
    assert "TTFT" in router.audit()[0].reason


def test_old_failures_leave_the_window(catalogue, clock):
    router = Router(catalogue, rollback=RollbackPolicy(window_s=10, min_samples=10), clock=clock)
    for _ in range(9):
        router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    clock.now += 11
    router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    assert router.route("chat")["weights"][BF16] == 10
    assert router.route("chat")["versions"][BF16]["requests"] == 1


def test_reenabled_canary_starts_with_a_clean_window(catalogue, clock):
    router = Router(catalogue, rollback=RollbackPolicy(min_samples=5), clock=clock)
    for _ in range(5):
        router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    assert router.route("chat")["weights"][BF16] == 0
    router.set_weights("chat", {"fp32": 90, "bf16": 10}, actor="ops")
    router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    assert router.route("chat")["weights"][BF16] == 10


def test_disabled_policy_never_rolls_back(catalogue, clock):
    router = Router(catalogue, rollback=RollbackPolicy(enabled=False, min_samples=1), clock=clock)
    for _ in range(50):
        router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    assert router.route("chat")["weights"][BF16] == 10


def test_a_rolled_back_canary_is_audited_once(catalogue, clock):
    router = Router(catalogue, rollback=RollbackPolicy(min_samples=3), clock=clock)
    for _ in range(10):
        router.observe(BF16, ok=False, ttft_s=None, latency_s=0.01)
    assert [e.action for e in router.audit()] == ["auto-rollback"]
