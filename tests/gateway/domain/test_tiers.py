"""Volume tiers, pure: a request's tokens laid on the month's count (cached, rest of the prompt, completion) and
split exactly at each boundary; tier lists that cannot be a price's are refused, naming the tier."""
import re
from decimal import Decimal as D

import pytest

from gateway.domain.tiers import Slice, Tier, TierError, check_tiers, flat, split, tiers_from_json, tiers_to_json

TWO = (Tier(100, D("2"), D("4")), Tier(None, D("1"), D("2")))
THREE = (Tier(10, D("3"), D("3")), Tier(20, D("2"), D("2")), Tier(None, D("1"), D("1")))


def test_a_request_before_the_boundary_is_all_tier_one():
    assert split(TWO, start=0, prompt_tokens=10, completion_tokens=5, cached_tokens=3) == [Slice(1, 3, 10, 5)]


def test_a_request_after_the_boundary_is_all_tier_two():
    assert split(TWO, start=100, prompt_tokens=10, completion_tokens=5, cached_tokens=3) == [Slice(2, 3, 10, 5)]


def test_a_straddling_request_is_split_in_token_order():
    # [95, 110): cached 95..98, uncached prompt 98..105, completion 105..110: the boundary falls at 100.
    assert split(TWO, start=95, prompt_tokens=10, completion_tokens=5, cached_tokens=3) == [
        Slice(1, 3, 5, 0), Slice(2, 0, 5, 5)]
    # Ending exactly at the boundary stays in tier 1.
    assert split(TWO, start=90, prompt_tokens=5, completion_tokens=5, cached_tokens=0) == [Slice(1, 0, 5, 5)]


def test_one_request_may_cross_several_tiers():
    assert split(THREE, start=5, prompt_tokens=12, completion_tokens=8, cached_tokens=0) == [
        Slice(1, 0, 5, 0), Slice(2, 0, 7, 3), Slice(3, 0, 0, 5)]


def test_a_request_without_tokens_lands_in_the_tier_of_its_start():
    assert split(TWO, start=100, prompt_tokens=0, completion_tokens=0, cached_tokens=0) == [Slice(2, 0, 0, 0)]
    assert split(TWO, start=99, prompt_tokens=0, completion_tokens=0, cached_tokens=0) == [Slice(1, 0, 0, 0)]


def test_slices_add_up_to_the_request():
    for start in range(40):
        pieces = split(THREE, start=start, prompt_tokens=7, completion_tokens=6, cached_tokens=4)
        assert sum(p.prompt_tokens for p in pieces) == 7 and sum(p.completion_tokens for p in pieces) == 6
        assert sum(p.cached_tokens for p in pieces) == 4
        assert [p.tier for p in pieces] == sorted({p.tier for p in pieces})


@pytest.mark.parametrize("tiers,words", [
    ((), "at least one"),
    ((Tier(100, D("9"), D("4")), Tier(None, D("1"), D("2"))), "tiers[0]"),
    ((Tier(None, D("2"), D("4")), Tier(None, D("1"), D("2"))), "tiers[0].up_to is null"),
    ((Tier(100, D("2"), D("4")), Tier(50, D("1"), D("2")), Tier(None, D("1"), D("1"))), "tiers[1].up_to (50)"),
    ((Tier(100, D("2"), D("4")), Tier(200, D("1"), D("2"))), "tiers[1].up_to must be null"),
])
def test_bad_tier_lists_are_refused_naming_the_tier(tiers, words):
    with pytest.raises(TierError, match=re.escape(words)):
        check_tiers(tiers, input_per_million=D("2"), output_per_million=D("4"))


def test_stored_as_exact_decimal_strings():
    stored = tiers_to_json(TWO)
    assert stored == [{"up_to": 100, "input_per_million": "2", "output_per_million": "4"},
                      {"up_to": None, "input_per_million": "1", "output_per_million": "2"}]
    assert tiers_from_json(stored, input_per_million=D("2"), output_per_million=D("4")) == TWO
    assert tiers_to_json(flat(D("2"), D("4"))) is None
    assert tiers_from_json(None, input_per_million=D("2"), output_per_million=D("4")) == flat(D("2"), D("4"))
