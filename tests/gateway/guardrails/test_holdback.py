"""The stream filter: nothing a rule matches ever leaves, however the text is split, and nothing is lost."""
import random

import pytest

from gateway.guardrails.errors import ContentBlocked
from gateway.guardrails.holdback import HoldbackFilter
from gateway.guardrails.policy import Policy
from gateway.guardrails.rules import parse_rules

EMAIL = "john.doe@example.com"


def policy(mode: str, **rule) -> Policy:
    base = {"name": "out", "stage": "output", "kind": "pii", "entities": ["email", "card"], "mode": mode}
    return Policy.of(parse_rules([{**base, **rule}]), None)


def run(f: HoldbackFilter, pieces: list[str]) -> list[str]:
    return [f.feed(p) for p in pieces] + [f.finish()]


def test_an_email_split_across_deltas_is_never_sent():
    p = policy("redact")
    sent = run(p.output_filter(), ["Write to ", "jo", "hn.doe@exa", "mple.com", " soon."])
    assert "".join(sent) == "Write to [EMAIL] soon."
    assert not any(part in s for s in sent for part in ("jo", "exa", "mple"))
    assert p.output_tally.header() == "out:redact:1"


ALL = ["email", "phone", "card", "iban", "ip", "secret"]
PII = [EMAIL, "4111 1111 1111 1111", "+1 415-555-0132", "DE89 3704 0044 0532 0130 00", "192.168.1.10",
       "2001:db8::1", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"]


@pytest.mark.parametrize("seed", range(20))
def test_any_split_gives_the_same_text_as_the_whole_and_no_piece_of_pii(seed):
    rng = random.Random(seed)
    text = " ".join(f"Ticket {i}: see {rng.choice(PII)} then, " + "filler words here. " * rng.randint(0, 4)
                    for i in range(12))
    cuts = sorted(rng.sample(range(1, len(text)), 80))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    sent = run(policy("redact", entities=ALL).output_filter(), pieces)
    whole = policy("redact", entities=ALL).output_filter()
    assert "".join(sent) == whole.feed(text) + whole.finish()
    released = "".join(sent)
    assert not any(p in released for p in PII) and not any(frag in released for frag in ("4111", "john", "0132"))


def test_prose_is_released_at_once_and_only_a_possible_start_of_a_match_is_held():
    f = policy("redact", entities=["email", "phone", "card", "iban", "ip", "secret"]).output_filter()
    assert f.feed("Hello there, how are you today? ") == "Hello there, how are you today? " and f.held == 0
    assert f.feed("Write to jo") == "Write to " and f.held == 2  # "jo" could start an address


def test_a_run_that_could_grow_into_a_match_is_held_no_longer_than_the_longest_match():
    f = policy("redact", entities=["phone", "card"]).output_filter()
    out = f.feed("1 " * 400)
    assert 0 < f.held < 40 and len(out) == 800 - f.held


def test_a_deny_pattern_holds_its_whole_window():
    p = Policy.of(parse_rules([{"name": "d", "stage": "output", "kind": "deny_pattern", "pattern": "top secret",
                                "mode": "block"}]), None)
    f = p.output_filter()
    out = f.feed("x " * 400)
    assert len(out) == 800 - 255 and f.held == 255


def test_a_block_rule_stops_before_any_of_its_match_is_sent():
    p = policy("block")
    f = p.output_filter()
    sent = []
    with pytest.raises(ContentBlocked, match="out"):
        for piece in ["Sure: ", "jo", "hn.doe@exa", "mple.com", " and more"]:
            sent.append(f.feed(piece))
    assert "john" not in "".join(sent) and "jo" not in "".join(sent)


def test_log_only_sends_the_text_and_counts_each_match_once():
    p = policy("log_only")
    sent = run(p.output_filter(), ["a ", EMAIL[:5], EMAIL[5:], " b ", "x" * 300])
    assert "".join(sent).startswith("a " + EMAIL + " b ")
    assert p.output_tally.header() == "out:log_only:1"
