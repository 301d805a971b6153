"""Label targets: weights validated; a split is sticky per caller and close to its weights over many."""
from collections import Counter

import pytest

from gateway.prompts import InvalidTarget
from gateway.prompts.labels import choose, target_weights


def test_one_version_is_all_the_weight():
    assert target_weights(version=2, known={1, 2}) == {2: 100}


def test_weights_must_sum_to_100():
    with pytest.raises(InvalidTarget, match="sum to 100") as e:
        target_weights(weights={"1": 50, "2": 40}, known={1, 2})
    assert e.value.param == "weights"


@pytest.mark.parametrize("body", [{"version": 3}, {"weights": {"1": 50, "3": 50}}])
def test_unknown_versions_are_named(body):
    with pytest.raises(InvalidTarget, match=r"Unknown version.*3"):
        target_weights(**body, known={1, 2})


@pytest.mark.parametrize("body", [{}, {"version": 1, "weights": {"1": 100}}, {"weights": {"x": 100}},
                                  {"weights": {"1": 150, "2": -50}}])
def test_malformed_targets_are_refused(body):
    with pytest.raises(InvalidTarget):
        target_weights(**body, known={1, 2})


def test_a_split_is_sticky_per_user_and_near_its_weights():
    weights = {1: 50, 2: 50}
    for user in ("alice", "bob", "carol"):
        assert len({choose("greeting", "production", weights, user) for _ in range(20)}) == 1
    counts = Counter(choose("greeting", "production", weights, f"user-{i}") for i in range(4000))
    assert abs(counts[1] - 2000) < 200 and counts[1] + counts[2] == 4000


def test_weight_zero_is_never_served_and_versions_sort_as_numbers():
    weights = {2: 0, 10: 100}
    assert {choose("p", "l", weights, f"u{i}") for i in range(200)} == {10}
