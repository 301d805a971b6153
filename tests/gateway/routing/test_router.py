from __future__ import annotations

import pytest

from gateway.catalogue import parse_catalogue
from gateway.routing.errors import RouteChangeError, UnknownModel, UnknownVersion
from gateway.routing.router import Router
from gateway.routing.store import MemoryRouteStore

from .conftest import BF16, FP32, raw_catalogue


def test_ninety_ten_split_over_300_requests(catalogue):
    router = Router(catalogue)
    picks = [router.resolve("chat", request_id=f"req-{i}").version for i in range(300)]
    share = picks.count(BF16) / 300
    assert 0.07 <= share <= 0.13, share


def test_a_user_always_gets_the_same_version(catalogue):
    router = Router(catalogue)
    for user in ("alice", "bob", "carol", "session-42"):
        seen = {router.resolve("chat", request_id=f"r{i}", user=user).version for i in range(50)}
        assert len(seen) == 1


def test_pin_is_honoured_and_checked(catalogue):
    router = Router(catalogue)
    assert all(router.resolve("chat", request_id=f"r{i}", pin="bf16").version == BF16 for i in range(20))
    d = router.resolve("chat", request_id="r", pin=FP32)
    assert d.version == FP32 and d.pinned
    with pytest.raises(UnknownVersion) as e:
        router.resolve("chat", request_id="r", pin="other@v1")
    assert e.value.param == "x-tollgate-version"


def test_fallback_chain_order(catalogue):
    router = Router(catalogue)
    d = router.resolve("chat", request_id="r", pin="bf16")
    assert d.candidates == [BF16, FP32, "other@v1"]
    d = router.resolve("chat", request_id="r", pin="fp32")
    assert d.candidates == [FP32, "other@v1"]


def test_model_names_are_aliases_and_unknown_names_fail(catalogue):
    router = Router(catalogue)
    d = router.resolve("smollm2-135m-instruct", request_id="r")
    assert d.candidates == [FP32] and d.model == "smollm2-135m-instruct"
    assert router.resolve("other", request_id="r").version == "other@v1"
    assert router.resolve(BF16, request_id="r").candidates == [BF16]
    with pytest.raises(UnknownModel):
        router.resolve("gpt-4", request_id="r")
    assert {"chat", "other", "smollm2-135m-instruct"} <= set(router.names())


def test_set_weights_promote_rollback_are_persisted_and_audited(catalogue):
    store = MemoryRouteStore()
    router = Router(catalogue, store=store)
    view = router.set_weights("chat", {"fp32": 50, "bf16": 50}, actor="ops")
    assert view["weights"] == {FP32: 50, BF16: 50} and view["source"] == "override"
    router.promote("chat", "bf16", actor="ops")
    assert router.route("chat")["weights"] == {FP32: 0, BF16: 100}
    assert router.route("chat")["stable"] == BF16
    router.set_weights("chat", {FP32: 10, BF16: 90}, actor="ops")
    router.rollback("chat", actor="ops")
    assert router.route("chat")["weights"] == {FP32: 0, BF16: 100}
    audit = router.audit(alias="chat")
    assert [e.action for e in audit] == ["rollback", "set", "promote", "set"]
    assert audit[-1].before["weights"] == {FP32: 90, BF16: 10}
    # A new router over the same store starts from the persisted routes.
    again = Router(catalogue, store=store)
    assert again.route("chat")["weights"] == {FP32: 0, BF16: 100}


@pytest.mark.parametrize("weights,param", [
    ({"fp32": 95, "bf16": 10}, "weights"),
    ({"fp32": 110, "bf16": -10}, f"weights.{BF16}"),
    ({"fp32": 90, "int8": 10}, "weights.int8"),
])
def test_bad_changes_name_the_field_and_leave_routes(catalogue, weights, param):
    store = MemoryRouteStore()
    router = Router(catalogue, store=store)
    before = router.routes_snapshot()
    with pytest.raises(RouteChangeError) as e:
        router.set_weights("chat", weights, actor="ops")
    assert e.value.param == param
    assert param.split(".")[0] in str(e.value)
    assert router.routes_snapshot() == before and store.audit() == []


def test_bad_promote_and_unknown_alias(catalogue):
    router = Router(catalogue)
    before = router.routes_snapshot()
    with pytest.raises(UnknownVersion) as e:
        router.promote("chat", "int8", actor="ops")
    assert e.value.param == "version"
    with pytest.raises(UnknownModel):
        router.rollback("nope", actor="ops")
    with pytest.raises(RouteChangeError) as e:
        router.set_weights("chat", {"fp32": 100}, ["nowhere"], actor="ops")
    assert e.value.param == "fallbacks.0"
    assert router.routes_snapshot() == before


def test_failed_persistence_leaves_routes(catalogue):
    class Broken(MemoryRouteStore):
        def save(self, route, entry):
            raise OSError("disk full")

    router = Router(catalogue, store=Broken())
    with pytest.raises(OSError):
        router.set_weights("chat", {"fp32": 100, "bf16": 0}, actor="ops")
    assert router.route("chat")["weights"] == {FP32: 90, BF16: 10}


def test_stale_override_is_ignored(catalogue):
    store = MemoryRouteStore()
    Router(catalogue, store=store).set_weights("chat", {"fp32": 0, "bf16": 100}, actor="ops")
    raw = raw_catalogue()
    del raw["models"]["smollm2-135m-instruct"]["versions"]["bf16"]
    raw["aliases"]["chat"]["weights"] = {FP32: 100}
    router = Router(parse_catalogue(raw), store=store)
    assert router.route("chat")["weights"] == {FP32: 100}
