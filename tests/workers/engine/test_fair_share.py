"""VTC counters alone: weighted charges, the lift on return from idle, and forgetting idle tenants."""
import pytest

from workers.engine.fair_share import FairShare


def test_charges_weigh_prefill_and_decode_and_divide_by_the_tenant_weight():
    share = FairShare(prefill_weight=1.0, decode_weight=2.0)
    share.arrive("a")
    share.arrive("b")
    share.charge("a", 1.0, prefill_tokens=10, decode_tokens=3)
    share.charge("b", 2.0, prefill_tokens=10, decode_tokens=3)
    assert share.served("a") == 16 and share.served("b") == 8


def test_a_tenant_back_from_idle_is_lifted_to_the_least_served_backlogged_one():
    share = FairShare()
    for t in ("a", "b"):
        share.arrive(t)
    share.charge("a", 1.0, prefill_tokens=100, decode_tokens=0)
    share.charge("b", 1.0, prefill_tokens=40, decode_tokens=0)
    share.arrive("c")  # idle until now: no banked credit
    assert share.served("c") == 40
    share.arrive("c")  # already backlogged: not lifted again
    share.charge("b", 1.0, prefill_tokens=100, decode_tokens=0)
    assert share.served("c") == 40


def test_idle_tenants_are_forgotten_and_start_clean():
    share = FairShare()
    share.arrive("a")
    share.charge("a", 1.0, prefill_tokens=50, decode_tokens=0)
    share.leave("a")
    assert len(share) == 0 and share.served("a") == 0
    share.arrive("a")
    assert share.served("a") == 0


def test_weights_are_checked():
    with pytest.raises(ValueError):
        FairShare(prefill_weight=0, decode_weight=0)
