"""Router.reload and Router.listen: how route changes travel between gateway replicas (gateway.events)."""
from __future__ import annotations

from gateway.routing.route import Route
from gateway.routing.router import Router
from gateway.routing.store import AuditEntry, MemoryRouteStore

from .conftest import BF16, FP32


def _two(catalogue):
    store = MemoryRouteStore()
    return Router(catalogue, store=store), Router(catalogue, store=store), store


def test_reload_one_alias(catalogue):
    a, b, _ = _two(catalogue)
    a.set_weights("chat", {FP32: 30, BF16: 70})
    b.reload("nope")  # not an alias: nothing to do
    assert b.route("chat")["weights"] == {FP32: 90, BF16: 10}
    b.reload("chat")
    assert b.route("chat") == a.route("chat") and b.route("chat")["source"] == "override"


def test_reload_everything(catalogue):
    a, b, _ = _two(catalogue)
    a.promote("chat", BF16)
    b.reload()
    assert b.routes_snapshot() == a.routes_snapshot()


def test_an_invalid_persisted_override_leaves_the_catalogue_default(catalogue):
    a, b, store = _two(catalogue)
    a.set_weights("chat", {FP32: 30, BF16: 70})
    b.reload("chat")
    bad = Route("chat", {FP32: 50, "gone@v9": 50}, (), FP32)  # names a version the catalogue dropped
    store.save(bad, AuditEntry("someone", "set", "chat", None, bad.to_dict()))
    b.reload("chat")
    assert b.route("chat")["weights"] == {FP32: 90, BF16: 10} and b.route("chat")["source"] == "catalogue"


def test_a_version_back_in_rotation_starts_a_fresh_window(catalogue):
    a, b, _ = _two(catalogue)
    b.observe(BF16, ok=False, ttft_s=None, latency_s=0.1)
    a.rollback("chat")
    b.reload("chat")
    assert b.metrics.stats(BF16).requests == 1  # taken out of rotation: its window is kept
    a.set_weights("chat", {FP32: 50, BF16: 50})
    b.reload("chat")
    assert b.metrics.stats(BF16).requests == 0


def test_listeners_hear_every_persisted_change_and_cannot_fail_it(catalogue):
    router = Router(catalogue)
    heard: list[str] = []

    def broken(alias: str) -> None:
        raise RuntimeError("bus down")

    router.listen(broken)
    router.listen(heard.append)
    router.set_weights("chat", {FP32: 50, BF16: 50})
    router.promote("chat", BF16)
    router.rollback("chat")
    assert heard == ["chat", "chat", "chat"]
    assert router.route("chat")["weights"] == {FP32: 0, BF16: 100}
