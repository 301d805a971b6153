from __future__ import annotations

import pytest

from gateway.routing import policy
from gateway.routing.errors import RouteChangeError, UnknownVersion
from gateway.routing.route import Route, make_route

FP32, BF16 = "m@fp32", "m@bf16"
VERSIONS = {FP32, BF16, "o@v1"}


def route(w32=90, w16=10, fallbacks=(FP32,)) -> Route:
    return make_route("chat", {FP32: w32, BF16: w16}, list(fallbacks), None, versions=VERSIONS, names={"o"})


def test_bucket_is_stable_and_in_range():
    points = [policy.bucket("chat", f"req-{i}") for i in range(1000)]
    assert all(0 <= p < 100 for p in points)
    assert points == [policy.bucket("chat", f"req-{i}") for i in range(1000)]


def test_ninety_ten_split_over_many_ids():
    r = route()
    picks = [policy.pick(r, policy.bucket("chat", f"req-{i}")) for i in range(2000)]
    share = picks.count(BF16) / len(picks)
    assert 0.07 <= share <= 0.13


def test_pick_respects_zero_and_full_weights():
    assert {policy.pick(route(100, 0), p) for p in (0, 50, 99.99)} == {FP32}
    assert {policy.pick(route(0, 100), p) for p in (0, 50, 99.99)} == {BF16}


def test_pin_full_and_short_names():
    r = route()
    assert policy.pinned(r, BF16) == BF16
    assert policy.pinned(r, "bf16") == BF16
    with pytest.raises(UnknownVersion) as e:
        policy.pinned(r, "int8")
    assert e.value.param == "x-tollgate-version"


def test_chain_dedups_and_expands_aliases():
    other = make_route("o", {"o@v1": 100}, [], None, versions=VERSIONS, names=set())
    r = route(fallbacks=(FP32, "o", BF16))
    routes = {"chat": r, "o": other}
    assert policy.chain(FP32, r, routes, VERSIONS) == [FP32, "o@v1", BF16]
    assert policy.chain(BF16, r, routes, VERSIONS) == [BF16, FP32, "o@v1"]


def test_promote_rollback_without():
    r = route()
    assert policy.promoted(r, BF16).weights == {FP32: 0, BF16: 100}
    assert policy.promoted(r, BF16).stable == BF16
    assert policy.rolled_back(r).weights == {FP32: 100, BF16: 0}
    assert policy.without(r, BF16).weights == {FP32: 100, BF16: 0}


@pytest.mark.parametrize("weights,param", [
    ({FP32: 80, BF16: 10}, "weights"),
    ({FP32: 110, BF16: -10}, f"weights.{BF16}"),
    ({FP32: 90, "m@int8": 10}, "weights.m@int8"),
    ({FP32: 90.5, BF16: 9.5}, f"weights.{FP32}"),
    ({}, "weights"),
])
def test_bad_weights_name_the_field(weights, param):
    with pytest.raises(RouteChangeError) as e:
        make_route("chat", weights, [], None, versions=VERSIONS, names=set())
    assert e.value.param == param


def test_bad_fallbacks_name_the_field():
    with pytest.raises(RouteChangeError) as e:
        make_route("chat", {FP32: 100}, [FP32, "nope"], None, versions=VERSIONS, names=set())
    assert e.value.param == "fallbacks.1"
    with pytest.raises(RouteChangeError):
        make_route("chat", {FP32: 100}, "m@fp32", None, versions=VERSIONS, names=set())
