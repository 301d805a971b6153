"""OutputGuard: one hold-back filter per completion (n > 1 streams interleave their deltas), whole answers
filtered the same way, and a filter's own fault refused as a failing rule's."""
from types import SimpleNamespace

import pytest

from gateway.api.v1.pipeline.choices import Choice
from gateway.api.v1.pipeline.output_guard import OutputGuard
from gateway.guardrails.errors import GuardrailFailed
from gateway.guardrails.policy import Policy
from gateway.guardrails.rules import parse_rules
from gateway.serving.base import CompletionDelta


def guard() -> OutputGuard:
    policy = Policy.of(parse_rules([{"name": "o", "stage": "output", "kind": "pii", "entities": ["email"],
                                     "mode": "redact"}]), None)
    run = SimpleNamespace(guardrails=policy, principal=SimpleNamespace(tenant_id="t"), svc=SimpleNamespace())
    return OutputGuard.of(run)


def test_each_completion_has_its_own_filter():
    g, sent = guard(), {0: "", 1: ""}
    script = [(0, "mail a", None), (1, "mail b", None), (0, "nn@x.org ok", None), (1, "ob@y.org", None),
              (0, "", "stop"), (1, " fine", "stop")]
    for index, text, finish in script:
        for d in g.deltas([CompletionDelta(index, text, [], finish)]):
            sent[d.index] += d.text
    assert sent == {0: "mail [EMAIL] ok", 1: "mail [EMAIL] fine"}
    assert g.text(0) == "mail [EMAIL] ok" and g.policy.output_tally.header() == "o:redact:2"


def test_whole_choices_and_a_faulty_filter():
    g = guard()
    (c,) = g.choices([Choice(0, ["to ", "ann@example.org"])])
    assert c.text == "to [EMAIL]"
    g = guard()
    g._filter(0).feed = None  # not callable: the filter itself is broken
    with pytest.raises(GuardrailFailed):
        g.choices([Choice(0, ["x"])])
