"""The Router with routing rules: who decides, stickiness, fallbacks, pins, persistence and replicas."""
from __future__ import annotations

import pytest

from gateway.routing.errors import RouteChangeError, UnknownModel
from gateway.routing.router import Router
from gateway.routing.rules import Facts
from gateway.routing.store import AuditEntry, MemoryRouteStore

from .conftest import BF16, FP32

OTHER = "other@v1"
RULES = [{"name": "short", "when": {"prompt_tokens": {"max": 100}}, "target": OTHER},
         {"name": "pro-code", "when": {"plan": ["pro"], "task": ["code"]}, "target": {"fp32": 50, "bf16": 50}}]


def facts(prompt=500, plan=None, task=None) -> Facts:
    return Facts(prompt_tokens=prompt, max_tokens=256, plan=plan, task=task)


@pytest.fixture
def router(catalogue):
    router = Router(catalogue, task_labels=["chat", "code"])
    router.set_rules("chat", RULES, actor="ops")
    return router


def test_a_matching_rule_decides_and_names_itself(router):
    d = router.resolve("chat", request_id="r1", facts=facts(prompt=40))
    assert (d.version, d.model, d.rule, d.pinned) == (OTHER, "other", "short", False)


def test_no_match_or_no_facts_keeps_the_alias_split(router, catalogue):
    plain = Router(catalogue)
    for i in range(50):
        d = router.resolve("chat", request_id=f"r{i}", facts=facts(plan="free"))
        assert d.rule is None and d.version == plain.resolve("chat", request_id=f"r{i}").version
    assert router.resolve("chat", request_id="r", facts=None).rule is None


def test_a_pin_bypasses_rules(router):
    d = router.resolve("chat", request_id="r", pin="bf16", facts=facts(prompt=1))
    assert d.version == BF16 and d.rule is None and d.pinned


def test_a_weighted_target_splits_and_sticks_to_the_user(router):
    picks = [router.resolve("chat", request_id=f"r{i}", facts=facts(plan="pro", task="code")).version
             for i in range(400)]
    assert 0.4 <= picks.count(BF16) / 400 <= 0.6
    seen = {router.resolve("chat", request_id=f"r{i}", user="alice", facts=facts(plan="pro", task="code")).version
            for i in range(20)}
    assert len(seen) == 1


def test_fallbacks_after_a_rule_target(router):
    # The rule's pick, then the rest of its split, then what the alias would have done, then its fallbacks.
    d = router.resolve("chat", request_id="r", user="u", facts=facts(prompt=40))
    assert d.candidates[0] == OTHER and set(d.candidates) == {OTHER, FP32, BF16}
    d = router.resolve("chat", request_id="r", user="u", facts=facts(plan="pro", task="code"))
    rest = [v for v in (FP32, BF16) if v != d.version]
    assert d.candidates[:2] == [d.version, *rest] and d.candidates[-1] == OTHER


def test_wants_task_only_when_a_task_rule_is_reached(router):
    assert not router.wants_task("chat", facts(prompt=40, plan="pro"))  # "short" decides first
    assert router.wants_task("chat", facts(plan="pro"))
    assert not router.wants_task("chat", facts(plan="free"))
    assert not router.wants_task("other", facts(plan="pro"))  # no rules on that alias
    assert not router.wants_task("nope", facts(plan="pro"))


def test_set_rules_validates_persists_audits_and_notifies(catalogue):
    store = MemoryRouteStore()
    router = Router(catalogue, store=store, task_labels=["code"])
    heard = []
    router.listen(heard.append)
    with pytest.raises(RouteChangeError) as e:
        router.set_rules("chat", [{"name": "x", "target": "gone@v1"}])
    assert e.value.param == "rules.0.target" and store.load_rules() == {} and heard == []
    with pytest.raises(UnknownModel):
        router.set_rules("nope", [])
    saved = router.set_rules("chat", [{"name": "x", "when": {"task": "code"}, "target": "other@v1"}], actor="ops")
    assert saved == [{"name": "x", "when": {"task": ["code"]}, "target": {OTHER: 100}}]
    assert store.load_rules() == {"chat": saved} and heard == ["chat"] and router.rules("chat") == saved
    router.set_rules("chat", [], actor="ops")
    assert router.rules("chat") == [] and router.resolve("chat", request_id="r", facts=facts(task="code")).rule is None
    entries = router.audit(alias="chat")
    assert [(e.action, e.actor) for e in entries] == [("rules", "ops"), ("rules", "ops")]
    assert entries[0].before == {"rules": saved} and entries[0].after == {"rules": []}


def test_another_replica_picks_rules_up_on_reload(catalogue):
    store = MemoryRouteStore()
    a, b = Router(catalogue, store=store), Router(catalogue, store=store)
    a.set_rules("chat", RULES[:1])
    assert b.resolve("chat", request_id="r", facts=facts(prompt=40)).rule is None
    b.reload("chat")
    assert b.resolve("chat", request_id="r", facts=facts(prompt=40)).rule == "short"
    assert Router(catalogue, store=store).rules("chat") == a.rules("chat")  # and a restart


def test_persisted_rules_that_no_longer_fit_are_ignored(catalogue):
    store = MemoryRouteStore()
    store.save_rules("chat", [{"name": "x", "when": {"task": ["code"]}, "target": OTHER}],
                     AuditEntry("someone", "rules", "chat", None, {}))
    store.save_rules("gone", [], AuditEntry("someone", "rules", "gone", None, {}))
    assert Router(catalogue, store=store).rules("chat") == []  # no classifier now: its task rule cannot hold
    assert Router(catalogue, store=store, task_labels=["code"]).rules("chat")[0]["name"] == "x"
