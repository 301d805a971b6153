"""Routing rules as pure data: matching, first match, when a task class is needed, and validation."""
from __future__ import annotations

import pytest

from gateway.routing.errors import RouteChangeError
from gateway.routing.route import make_route
from gateway.routing.rule_spec import make_rules
from gateway.routing.rules import Condition, Facts, Span, first_match, needs_task

from .conftest import BF16, FP32

OTHER = "other@v1"
VERSIONS = [FP32, BF16, OTHER]
ROUTE = make_route("chat", {FP32: 90, BF16: 10}, [], None, versions=VERSIONS, names=[])


def rules(raw, tasks=("chat", "code")):
    return make_rules(ROUTE, raw, versions=VERSIONS, tasks=tasks)


def facts(prompt=100, max_tokens=64, plan=None, task=None) -> Facts:
    return Facts(prompt_tokens=prompt, max_tokens=max_tokens, plan=plan, task=task)


def test_spans_are_inclusive_and_open_ended():
    assert Span(10, 20).holds(10) and Span(10, 20).holds(20) and not Span(10, 20).holds(21)
    assert Span(max=5).holds(0) and Span(min=5).holds(10**9) and not Span(min=5).holds(4)


def test_every_set_field_must_match():
    when = Condition(prompt_tokens=Span(max=200), plans=frozenset({"free"}), tasks=frozenset({"chat"}))
    assert when.matches(facts(plan="free", task="chat"))
    assert not when.matches(facts(prompt=201, plan="free", task="chat"))
    assert not when.matches(facts(plan="pro", task="chat"))
    assert not when.matches(facts(plan=None, task="chat"))  # a tenant without a plan is in no list
    assert not when.matches(facts(plan="free", task=None))  # unknown class: task rules do not match
    assert Condition().matches(facts())  # nothing set: a catch-all


def test_first_match_wins_in_order():
    rs = rules([{"name": "small", "when": {"max_tokens": {"max": 64}}, "target": "other@v1"},
                {"name": "pro", "when": {"plan": ["pro"]}, "target": "bf16"},
                {"name": "rest", "target": {"fp32": 50, "bf16": 50}}])
    assert first_match(rs, facts(max_tokens=64, plan="pro")).name == "small"
    assert first_match(rs, facts(max_tokens=65, plan="pro")).name == "pro"
    assert first_match(rs, facts(max_tokens=65)).name == "rest"
    assert first_match(rs[:2], facts(max_tokens=65)) is None


def test_a_task_is_needed_only_when_evaluation_reaches_a_task_rule():
    rs = rules([{"name": "free", "when": {"plan": ["free"]}, "target": OTHER},
                {"name": "code", "when": {"task": ["code"], "prompt_tokens": {"max": 1000}}, "target": BF16}])
    assert not needs_task(rs, facts(plan="free"))  # the plan rule decides first: no embedding
    assert needs_task(rs, facts(plan="pro"))
    assert not needs_task(rs, facts(plan="pro", prompt=5000))  # the task rule cannot match anyway
    assert not needs_task(rs[:1], facts(plan="pro"))


def test_targets_resolve_short_names_and_round_trip():
    (rule,) = rules([{"name": "r1", "when": {"prompt_tokens": {"min": 10, "max": 20}, "plan": "free"},
                      "target": {"fp32": 70, "other@v1": 30}}])
    assert dict(rule.target.weights) == {FP32: 70, OTHER: 30}
    assert rule.to_dict() == {"name": "r1", "when": {"prompt_tokens": {"min": 10, "max": 20}, "plan": ["free"]},
                              "target": {FP32: 70, OTHER: 30}}
    assert rules([rule.to_dict()]) == (rule,)


@pytest.mark.parametrize("raw,param", [
    ("nope", "rules"),
    ([{"when": {}, "target": FP32}], "rules.0.name"),
    ([{"name": "bad name", "target": FP32}], "rules.0.name"),
    ([{"name": "a", "target": FP32}, {"name": "a", "target": BF16}], "rules.1.name"),
    ([{"name": "a"}], "rules.0.target"),
    ([{"name": "a", "target": "int8"}], "rules.0.target"),
    ([{"name": "a", "target": {"fp32": 50, "int8": 50}}], "rules.0.target.int8"),
    ([{"name": "a", "target": {"fp32": 50, "bf16": 40}}], "rules.0.target"),
    ([{"name": "a", "target": {"fp32": 150, "bf16": -50}}], f"rules.0.target.{BF16}"),
    ([{"name": "a", "when": {"task": ["poetry"]}, "target": FP32}], "rules.0.when.task"),
    ([{"name": "a", "when": {"colour": ["red"]}, "target": FP32}], "rules.0.when.colour"),
    ([{"name": "a", "when": {"prompt_tokens": {"min": 5, "max": 4}}, "target": FP32}], "rules.0.when.prompt_tokens"),
    ([{"name": "a", "when": {"max_tokens": {"max": -1}}, "target": FP32}], "rules.0.when.max_tokens.max"),
    ([{"name": "a", "when": {"max_tokens": {}}, "target": FP32}], "rules.0.when.max_tokens"),
    ([{"name": "a", "when": {"plan": []}, "target": FP32}], "rules.0.when.plan"),
    ([{"name": "a", "target": FP32, "priority": 1}], "rules.0.priority"),
])
def test_bad_rules_name_the_field(raw, param):
    with pytest.raises(RouteChangeError) as e:
        rules(raw)
    assert e.value.param == param


def test_task_rules_need_a_classifier():
    with pytest.raises(RouteChangeError, match="no task classifier") as e:
        rules([{"name": "a", "when": {"task": ["code"]}, "target": FP32}], tasks=())
    assert e.value.param == "rules.0.when.task"
