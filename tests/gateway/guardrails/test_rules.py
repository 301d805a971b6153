"""Rule validation: every bad field is refused naming it (rules[i].field), before anything is saved."""
import pytest

from gateway.guardrails.errors import RuleError
from gateway.guardrails.rules import parse_rules

EMAIL_OUT = {"name": "emails", "stage": "output", "kind": "pii", "entities": ["email"], "mode": "redact"}


def refused(raw) -> RuleError:
    with pytest.raises(RuleError) as e:
        parse_rules(raw)
    return e.value


def test_valid_rules_round_trip():
    raw = [EMAIL_OUT,
           {"name": "deny", "stage": "input", "kind": "deny_pattern", "pattern": "(?i)secret plan", "mode": "block"},
           {"name": "size", "stage": "input", "kind": "max_prompt_tokens", "limit": 100, "mode": "block"},
           {"name": "models", "stage": "input", "kind": "model_access", "allow_models": ["m"], "mode": "block",
            "key_id": "k1", "fail_open": True}]
    assert [r.to_dict() for r in parse_rules({"rules": raw})] == raw


@pytest.mark.parametrize("change, param", [
    ({"kind": "magic"}, "rules[0].kind"), ({"stage": "middle"}, "rules[0].stage"),
    ({"mode": "shout"}, "rules[0].mode"), ({"entities": ["dna"]}, "rules[0].entities"),
    ({"entities": []}, "rules[0].entities"), ({"name": "has space"}, "rules[0].name"),
    ({"colour": "red"}, "rules[0].colour"), ({"fail_open": "yes"}, "rules[0].fail_open"),
    ({"limit": 5}, "rules[0].limit"), ({"pattern": "x"}, "rules[0].pattern")])
def test_a_bad_field_is_named(change, param):
    assert refused([{**EMAIL_OUT, **change}]).param == param


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)b", r"(?<!x)y", "(", "a{1000}{1000}", "x" * 1001, ""])
def test_patterns_re2_cannot_run_in_linear_time_or_at_all_are_refused(pattern):
    rule = {"name": "p", "stage": "input", "kind": "deny_pattern", "pattern": pattern, "mode": "block"}
    assert refused([rule]).param == "rules[0].pattern"


def test_a_catastrophic_backtracking_pattern_runs_in_linear_time_on_re2():
    import time

    rule = parse_rules([{"name": "p", "stage": "input", "kind": "deny_pattern", "pattern": "(a+)+$",
                         "mode": "block"}])[0]
    started = time.perf_counter()
    assert list(rule.compiled.spans("a" * 50_000 + "!")) == []  # Python's re would take longer than the universe
    assert time.perf_counter() - started < 0.5


def test_limits_and_models_cannot_be_redacted_nor_checked_on_output():
    assert refused([{"name": "s", "stage": "input", "kind": "max_prompt_tokens", "limit": 5,
                     "mode": "redact"}]).param == "rules[0].mode"
    assert refused([{"name": "s", "stage": "output", "kind": "max_prompt_tokens", "limit": 5,
                     "mode": "block"}]).param == "rules[0].stage"
    assert refused([{"name": "s", "stage": "input", "kind": "max_prompt_tokens", "limit": 0,
                     "mode": "block"}]).param == "rules[0].limit"
    assert refused([{"name": "m", "stage": "input", "kind": "model_access", "mode": "block"}]).param \
        == "rules[0].allow_models"


def test_names_are_unique_and_the_body_is_a_list():
    assert refused([EMAIL_OUT, EMAIL_OUT]).param == "rules[1].name"
    assert refused({"rule": []}).param == "rules"
