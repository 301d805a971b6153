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


@pytest.mark.parametrize("seed", range(20))
def test_any_split_gives_the_same_text_as_the_whole(seed):
    rng = random.Random(seed)
    text = ("Ticket 42: reach " + EMAIL + " or pay with 4111 1111 1111 1111. " + "Filler words here. " * 30) * 2
    cuts = sorted(rng.sample(range(1, len(text)), 60))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    sent = run(policy("redact").output_filter(), pieces)
    whole = policy("redact").output_filter()
    assert "".join(sent) == whole.feed(text) + whole.finish()
    assert EMAIL not in "".join(sent) and "4111" not in "".join(sent)


def test_text_far_behind_the_window_is_released_before_the_end():
    f = policy("redact").output_filter()
    out = f.feed("x " * 400)
    assert len(out) == 800 - f.screen.window and f.held == f.screen.window


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
