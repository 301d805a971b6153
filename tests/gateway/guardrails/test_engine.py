"""A stage's rules over one text: redaction, blocking, counting, and failing closed."""
import pytest

from gateway.guardrails.detectors.registry import DETECTORS
from gateway.guardrails.engine import Screen, check_model, check_prompt_tokens
from gateway.guardrails.errors import ContentBlocked, GuardrailFailed
from gateway.guardrails.rules import parse_rules
from gateway.guardrails.tally import Tally


def screen(*rules: dict) -> Screen:
    return Screen(parse_rules(list(rules)))


def pii(mode: str, **extra) -> dict:
    return {"name": f"pii-{mode}", "stage": "input", "kind": "pii", "mode": mode, **extra}


def test_redact_masks_every_entity_and_counts_them():
    tally = Tally()
    text = "mail a.b@example.com, card 4111 1111 1111 1111, ip 10.0.0.1"
    out = screen(pii("redact")).apply(text, tally, "input")
    assert out == "mail [EMAIL], card [CARD], ip [IP]"
    assert tally.header() == "pii-redact:redact:3"


def test_block_raises_with_the_rule_name_and_log_only_leaves_the_text():
    with pytest.raises(ContentBlocked, match="pii-block"):
        screen(pii("block", entities=["email"])).apply("x a@b.example y", Tally(), "input")
    tally = Tally()
    assert screen(pii("log_only")).apply("x a@b.example y", tally, "input") == "x a@b.example y"
    assert tally.items() == [("pii-log_only", "log_only", 1)]


def test_a_deny_pattern_redacts_its_matches():
    s = screen({"name": "d", "stage": "input", "kind": "deny_pattern", "pattern": "(?i)project \\w+",
                "mode": "redact"})
    assert s.apply("about Project Apollo today", Tally(), "input") == "about [REDACTED] today"


def test_a_failing_rule_fails_closed_unless_saved_fail_open(monkeypatch):
    def broken(text):
        raise RuntimeError("detector bug")
    monkeypatch.setattr(DETECTORS["email"], "spans", broken)
    with pytest.raises(GuardrailFailed, match="pii-redact"):
        screen(pii("redact", entities=["email"])).apply("a@b.example", Tally(), "input")
    assert screen(pii("redact", entities=["email"], fail_open=True)).apply("a@b.example", Tally(),
                                                                           "input") == "a@b.example"


def test_model_access_and_prompt_size():
    rules = parse_rules([{"name": "only-small", "stage": "input", "kind": "model_access", "allow_models": ["small"],
                          "mode": "block"},
                         {"name": "size", "stage": "input", "kind": "max_prompt_tokens", "limit": 10,
                          "mode": "log_only"}])
    check_model(rules, ["alias", "small"], Tally())
    with pytest.raises(ContentBlocked, match="only-small"):
        check_model(rules, ["big"], Tally())
    tally = Tally()
    check_prompt_tokens(rules, 11, tally)
    assert tally.header() == "size:log_only:1"
